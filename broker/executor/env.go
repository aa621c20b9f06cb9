package executor

import (
	"path/filepath"
	"strconv"
	"strings"
)

// The variables JobEnv sets.
const (
	EnvURI      = "STRATA_URI"      // the URI of the job's enclosing instance
	EnvJobID    = "STRATA_JOBID"    // the job's ID
	EnvNodeList = "STRATA_NODELIST" // the job's nodes, as a hostlist
	EnvNNodes   = "STRATA_NNODES"   // how many nodes the job has
)

// JobEnv returns base plus the variables every job gets (EnvURI, EnvJobID,
// EnvNodeList, EnvNNodes). Entries of base that set one of those are
// dropped; the rest keep their order, and the four are appended in that
// order. base is not modified.
func JobEnv(base []string, uri, id, nodelist string, nnodes int) []string {
	add := [...]string{
		EnvURI + "=" + uri,
		EnvJobID + "=" + id,
		EnvNodeList + "=" + nodelist,
		EnvNNodes + "=" + strconv.Itoa(nnodes),
	}
	env := make([]string, 0, len(base)+len(add))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case EnvURI, EnvJobID, EnvNodeList, EnvNNodes:
			continue
		}
		env = append(env, kv)
	}
	return append(env, add[:]...)
}

// Default output file templates, used when a Spec leaves Stdout or Stderr
// empty: files in the job's working directory named after its ID.
const (
	DefaultStdout = "strata-%j.out"
	DefaultStderr = "strata-%j.err"
)

// PathVars are the values ExpandPath substitutes into a template.
type PathVars struct {
	JobID string // %j
	User  string // %u
	Name  string // %x, the job name
	// ArrayJob and ArrayTask are %A and %a, for the tasks of a job
	// array; for other jobs %A is the job ID and %a is "4294967294",
	// as Slurm writes them.
	ArrayJob, ArrayTask string
}

// ExpandPath turns an output file template, as given to submit's -o and -e,
// into a path, as Slurm does: "%j" becomes the job ID, "%u" the user name,
// "%x" the job name, "%A" and "%a" the array job and task (see PathVars)
// and "%%" a single '%'; any other '%' sequence is kept as
// written. A relative result is made absolute against dir, the job's working
// directory. An empty template expands to "" (the caller picks a default,
// such as DefaultStdout).
func ExpandPath(tmpl, dir string, v PathVars) string {
	if tmpl == "" {
		return ""
	}
	var b strings.Builder
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		if c != '%' || i+1 == len(tmpl) {
			b.WriteByte(c)
			continue
		}
		switch tmpl[i+1] {
		case 'j':
			b.WriteString(v.JobID)
		case 'u':
			b.WriteString(v.User)
		case 'x':
			b.WriteString(v.Name)
		case 'A':
			if v.ArrayJob == "" {
				b.WriteString(v.JobID)
			} else {
				b.WriteString(v.ArrayJob)
			}
		case 'a':
			if v.ArrayTask == "" {
				b.WriteString("4294967294")
			} else {
				b.WriteString(v.ArrayTask)
			}
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			continue // keep the next byte as written
		}
		i++
	}
	p := b.String()
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return p
}
