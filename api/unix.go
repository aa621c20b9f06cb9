package api

// MaxUnixAccountLen is the longest Unix account name ValidateUnixAccount
// accepts, as useradd does.
const MaxUnixAccountLen = 32

// ValidateUnixAccount returns an invalid_argument error unless name can be
// a Unix account name: 1-32 letters, digits, '.', '_' or '-', not starting
// with '-' or '.', optionally ending in '$' (Samba machine accounts), and
// not all digits (which would read as a uid). It checks the shape only;
// whether the account exists is up to the node that runs the job.
func ValidateUnixAccount(name string) error {
	bad := func(why string) error {
		return Errorf(CodeInvalidArgument, "invalid Unix account name %q: %s; use 1-%d letters, digits, '.', '_' or '-', as useradd does", name, why, MaxUnixAccountLen)
	}
	if name == "" {
		return bad("empty")
	}
	if len(name) > MaxUnixAccountLen {
		return bad("too long")
	}
	if name[0] == '-' || name[0] == '.' {
		return bad("starts with '" + name[:1] + "'")
	}
	digits := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '.', c == '_', c == '-':
			digits = false
		case c == '$' && i == len(name)-1 && i > 0:
			digits = false
		default:
			return bad("contains a character that is not allowed")
		}
	}
	if digits {
		return bad("all digits, which would read as a uid")
	}
	return nil
}
