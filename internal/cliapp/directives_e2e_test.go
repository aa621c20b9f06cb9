package cliapp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/api"
)

// TestE2EDirectives: batch and submit read #SBATCH and #STRATA lines from
// the script, the command line wins (said with --verbose), unknown #SBATCH
// options are warned about, a bad #STRATA line is refused naming the line,
// and -n, -D, --export, --nice and --dependency reach the job.
func TestE2EDirectives(t *testing.T) {
	b := startE2EBroker(t, "--nodes", "node[0-3]", "--kill-grace", "200ms")
	b.must("admin", "user", "add", "alice", "-o", b.creds("alice"))
	script := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(b.work, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	readOut := func(path string) string {
		t.Helper()
		out, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}

	t.Run("batch", func(t *testing.T) {
		script("job.sh", "#!/bin/sh\n"+
			"#SBATCH -N 2\n"+
			"#SBATCH --time=10:00 -J dirjob   # ten minutes\n"+
			"#SBATCH --mem=4G\n"+
			"#STRATA --ntasks 4\n"+
			"#SBATCH -o dir-%j.out\n"+
			"\n"+
			"echo \"tasks=$STRATA_NTASKS nodes=$STRATA_NNODES\"\n"+
			"#SBATCH -N 3\n")
		r := b.strataAs("alice", "batch", "-t", "5m", "--verbose", "job.sh")
		if r.code != 0 || !jobIDRe.MatchString(r.stdout) {
			t.Fatalf("%s", r)
		}
		for _, want := range []string{
			"warning: script job.sh: line 4: #SBATCH --mem=4G ignored",
			"script job.sh: line 3 (#SBATCH --time=10:00 -J dirjob   # ten minutes) overridden by the command line's --time",
		} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q: %s", want, r)
			}
		}
		id := strings.TrimSpace(r.stdout)
		b.must("alice", "wait", id)
		j := b.job("alice", id)
		if j.NNodes != 2 || j.Walltime != 300 || j.Name != "dirjob" || j.NTasks != 4 {
			t.Errorf("job %s: %d nodes, walltime %ds, name %q, ntasks %d; want 2, 300 (the flag's), dirjob, 4", id, j.NNodes, j.Walltime, j.Name, j.NTasks)
		}
		if got := readOut(filepath.Join(b.work, "dir-"+id+".out")); got != "tasks=4 nodes=2" {
			t.Errorf("the script printed %q; want tasks=4 nodes=2", got)
		}
	})

	t.Run("bad directives", func(t *testing.T) {
		script("bad.sh", "#!/bin/sh\n#STRATA -N 2\n#STRATA --bogus 3\ntrue\n")
		b.expect(t, "alice", 2, []string{"script bad.sh: line 3 (#STRATA --bogus 3): unknown option --bogus"}, "batch", "bad.sh")
		script("badval.sh", "#!/bin/sh\n#SBATCH -N many\ntrue\n")
		b.expect(t, "alice", 2, []string{"script ./badval.sh: line 2 (#SBATCH -N many): -N \"many\": not a number"}, "submit", "./badval.sh")
		r := b.must("alice", "jobs", "--json")
		if strings.Contains(r, "bad") {
			t.Errorf("a refused script left a job: %s", r)
		}
	})

	t.Run("submit chdir export", func(t *testing.T) {
		if err := os.Mkdir(filepath.Join(b.work, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		script("env.sh", "#!/bin/sh\n#SBATCH -D sub\n#SBATCH --export=FOO=bar\n#SBATCH -o env.out\necho \"dir=$(pwd) foo=$FOO home=${HOME:-none} tasks=${STRATA_NTASKS:-none}\"\n")
		id := b.submit("alice", "./env.sh")
		b.must("alice", "wait", id)
		want := "dir=" + filepath.Join(b.work, "sub") + " foo=bar home=none tasks=none"
		if got := readOut(filepath.Join(b.work, "sub", "env.out")); got != want {
			t.Errorf("the job printed %q; want %q", got, want)
		}
	})

	t.Run("nice", func(t *testing.T) {
		b.expect(t, "alice", 1, []string{"only admins"}, "submit", "--nice", "-5", "--", "true")
		id := b.submit("alice", "--nice", "5", "--hold", "--", "true")
		if j := b.job("alice", id); j.Nice != 5 {
			t.Errorf("job %s: nice %d, want 5", id, j.Nice)
		}
		b.must("alice", "cancel", id)
	})

	t.Run("dependency", func(t *testing.T) {
		first := b.submit("alice", "--hold", "--", "true")
		second := b.submit("alice", "-d", "afterok:"+first+",afterany:"+first, "--", "true")
		j := b.job("alice", second)
		if len(j.Dependencies) != 2 || j.State != "pending" {
			t.Errorf("job %s: %+v, state %s; want two dependencies on job %s, pending", second, j.Dependencies, j.State, first)
		}
		b.must("alice", "cancel", first)
		b.expect(t, "alice", 2, []string{"-d/--dependency", "'?' (any one of) is not supported"}, "submit", "-d", "afterok:1?afterany:2", "--", "true")

		s1 := b.submit("alice", "--name", "one", "-t", "1m", "--", "sleep", "60")
		s2 := b.submit("alice", "--name", "one", "-d", "singleton", "--", "true")
		if j := b.job("alice", s2); j.State != "pending" || !strings.Contains(j.Reason, "singleton") || !j.Singleton ||
			j.Wait == nil || j.Wait.Kind != api.WaitDependency || len(j.Wait.Jobs) != 1 || j.Wait.Jobs[0].String() != s1 {
			t.Errorf("singleton job %s: %s (%s), wait %+v; want pending, waiting for job %s", s2, j.State, j.Reason, j.Wait, s1)
		}
		// Renamed, the running job no longer holds the singleton back.
		b.must("alice", "job", "update", s1, "--name", "two")
		b.must("alice", "wait", s2)
		if j := b.job("alice", s1); j.State != "running" {
			t.Errorf("job %s, renamed: %s; want it still running", s1, j.State)
		}
		b.must("alice", "cancel", s1)
	})
}
