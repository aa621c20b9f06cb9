package executor

import (
	"strconv"
	"strings"

	"github.com/strata-hpc/strata/internal/outpath"
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
	DefaultStdout = outpath.DefaultStdout
	DefaultStderr = outpath.DefaultStderr
)

// PathVars are the values ExpandPath substitutes into a template.
type PathVars = outpath.Vars

// ExpandPath turns an output file template, as given to submit's -o and
// -e, into a path, as Slurm does: see outpath.Expand, which 'strata run'
// uses without linking this package.
func ExpandPath(tmpl, dir string, v PathVars) string { return outpath.Expand(tmpl, dir, v) }
