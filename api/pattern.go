package api

// The patterns of names, operations and host names, written out. They match
// exactly what their regular expressions match (NamePattern, OpPattern and
// hostnamePattern; pattern_test.go checks), but cost nothing to set up:
// compiling the counted repetitions ({0,31}, {0,251}) took every strata
// command some milliseconds at start-up, before it did anything.

// tokenPattern matches ^[first][rest]{0,max-1}$.
type tokenPattern struct {
	first, rest func(c byte) bool
	max         int
}

// MatchString reports whether s matches the pattern.
func (p tokenPattern) MatchString(s string) bool {
	if s == "" || len(s) > p.max || !p.first(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !p.rest(s[i]) {
			return false
		}
	}
	return true
}

var (
	nameRe = tokenPattern{first: func(c byte) bool { return lower(c) || c == '_' }, rest: nameByte, max: 32} // NamePattern
	opRe   = tokenPattern{first: lower, rest: nameByte, max: 32}                                             // OpPattern
	nodeRe = tokenPattern{first: nodeFirst, rest: nodeByte, max: 64}                                         // NodePattern
)

func nodeFirst(c byte) bool { return alnum(c) || 'A' <= c && c <= 'Z' || c == '_' }
func nodeByte(c byte) bool  { return nodeFirst(c) || c == '-' }

func lower(c byte) bool    { return 'a' <= c && c <= 'z' }
func alnum(c byte) bool    { return lower(c) || '0' <= c && c <= '9' }
func nameByte(c byte) bool { return alnum(c) || c == '_' || c == '-' }

// hostnamePattern is what validHostname accepts.
const hostnamePattern = `^[a-z0-9]([a-z0-9_.-]{0,251}[a-z0-9])?$`

// validHostname reports whether h matches hostnamePattern.
func validHostname(h string) bool {
	n := len(h)
	if n == 0 || n > 253 || !alnum(h[0]) || !alnum(h[n-1]) {
		return false
	}
	for i := 1; i < n-1; i++ {
		if c := h[i]; !alnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}
