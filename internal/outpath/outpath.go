// Package outpath expands the templates of jobs' output files (submit's
// -o and -e, as Slurm's: strata-%j.out). The executor expands them to
// create the files, and 'strata run' to follow them; the package is
// apart from package executor so that the strata front end need not link
// the executor (its process and cgroup code, log/slog), whose package
// initialisation every command would pay for (issue 16).
package outpath

import (
	"path/filepath"
	"strings"
)

// Default output file templates, used when a job names no output files
// (an executor.Spec leaves Stdout or Stderr empty): files in the job's
// working directory named after its ID.
const (
	DefaultStdout = "strata-%j.out"
	DefaultStderr = "strata-%j.err"
)

// Vars are the values Expand substitutes into a template.
type Vars struct {
	JobID string // %j
	User  string // %u
	Name  string // %x, the job name
	// ArrayJob and ArrayTask are %A and %a, for the tasks of a job
	// array; for other jobs %A is the job ID and %a is "4294967294",
	// as Slurm writes them.
	ArrayJob, ArrayTask string
}

// Expand turns an output file template, as given to submit's -o and -e,
// into a path, as Slurm does: "%j" becomes the job ID, "%u" the user name,
// "%x" the job name, "%A" and "%a" the array job and task (see Vars)
// and "%%" a single '%'; any other '%' sequence is kept as
// written. A relative result is made absolute against dir, the job's working
// directory. An empty template expands to "" (the caller picks a default,
// such as DefaultStdout).
func Expand(tmpl, dir string, v Vars) string {
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
