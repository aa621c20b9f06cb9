package cliapp

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/api"
)

func TestParseDirectives(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   []string // flag=value, in order
		warns  []string // substrings, one per warning
		err    string   // substring of the error
	}{
		{name: "slurm short and long",
			script: "#!/bin/sh\n#SBATCH -N 4\n#SBATCH --time=1:00:00 -J sim\n#SBATCH -n8 --output out-%j.txt\n./sim\n",
			want:   []string{"nodes=4", "time=1:00:00", "name=sim", "ntasks=8", "output=out-%j.txt"}},
		{name: "strata lines take every submit flag",
			script: "#!/bin/bash\n#STRATA --qpu qpu0:2 --nodes=2 --resv physics\n#STRATA --hold --requeue\n",
			want:   []string{"qpu=qpu0:2", "nodes=2", "resv=physics", "hold=true", "requeue=true"}},
		{name: "stops at the first command",
			script: "#!/bin/sh\n#SBATCH -N 2\n\n# a comment\necho hi\n#SBATCH -N 8\n",
			want:   []string{"nodes=2"}},
		{name: "no shebang, first line a directive",
			script: "#SBATCH -D /tmp\n", want: []string{"chdir=/tmp"}},
		{name: "slurm options strata shares",
			script: "#SBATCH --begin=now+1h --dependency=afterok:3 --reservation=dat --hold --requeue --export=NONE --nice=5 -e err -a 1-3 -H --signal=USR1@90 --deadline=now+1d",
			want:   []string{"begin=now+1h", "dependency=afterok:3", "resv=dat", "hold=true", "requeue=true", "export=NONE", "nice=5", "error=err", "array=1-3", "hold=true", "signal=USR1@90", "deadline=now+1d"}},
		{name: "a node list, short and long",
			script: "#SBATCH -w n[0-1]\n#SBATCH --nodelist=n2\n#STRATA -w n3\n",
			want:   []string{"nodelist=n[0-1]", "nodelist=n2", "nodelist=n3"}},
		{name: "exclude",
			script: "#SBATCH -x n[0-1]\n#SBATCH --exclude=n2\n#STRATA -x n3\n",
			want:   []string{"exclude=n[0-1]", "exclude=n2", "exclude=n3"}},
		{name: "unknown sbatch options are warned about",
			script: "#SBATCH --mem=4G -p debug -N 2 --exclusive\n",
			want:   []string{"nodes=2"},
			warns:  []string{"line 1: #SBATCH --mem=4G ignored", "#SBATCH -p debug ignored", "#SBATCH --exclusive ignored"}},
		{name: "quotes and trailing comments",
			script: "#SBATCH -J \"my job\" # the name\n#STRATA --name 'a b'#x\n",
			want:   []string{"name=my job", "name=a b#x"}},
		{name: "a prefix must be a word", script: "#SBATCHED -N 3\n#STRATA-N 3\n", want: nil},
		{name: "indented directive is a comment", script: "  #SBATCH -N 3\n", want: nil},
		{name: "unknown strata option", script: "#!/bin/sh\n\n#STRATA --mem 4G\n", err: "line 3 (#STRATA --mem 4G): unknown option --mem"},
		{name: "strata word not an option", script: "#STRATA nodes=4\n", err: `line 1 (#STRATA nodes=4): "nodes=4" is not an option`},
		{name: "missing value", script: "#SBATCH -N\n", err: "line 1 (#SBATCH -N): -N needs a value"},
		{name: "boolean with value", script: "#STRATA --hold=yes\n", err: "--hold takes no value"},
		{name: "open quote", script: "#SBATCH -J 'sim\n", err: "line 1 (#SBATCH -J 'sim): a ' quote is not closed"},
		{name: "empty", script: "", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dirs, warns, err := parseDirectives(strings.NewReader(tc.script))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range dirs {
				got = append(got, d.flag+"="+d.value)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("directives %q, want %q", got, tc.want)
			}
			if len(warns) != len(tc.warns) {
				t.Fatalf("warnings %q, want %d like %q", warns, len(tc.warns), tc.warns)
			}
			for i, w := range tc.warns {
				if !strings.Contains(warns[i], w) {
					t.Errorf("warning %q lacks %q", warns[i], w)
				}
			}
		})
	}
}

func TestParseDependency(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want dependency
		err  string
	}{
		{in: "afterok:1:2,afterany:3", want: dependency{AfterOK: ids(1, 2), AfterAny: ids(3)}},
		{in: "afternotok:7", want: dependency{AfterNotOK: ids(7)}},
		{in: "singleton", want: dependency{Singleton: true}},
		{in: "singleton, afterok:4", want: dependency{Singleton: true, AfterOK: ids(4)}},
		{in: "afterok:1?afterany:2", err: "'?' (any one of) is not supported"},
		{in: "after:5", err: "after is not supported: use afterok"},
		{in: "afterok", err: `"afterok" names no job`},
		{in: "afterok:", err: "empty job ID"},
		{in: "afterok:0", err: "job IDs start at 1"},
		{in: "afterok:12_3", err: `"12_3" is not a job ID`},
		{in: "singleton:3", err: "singleton takes no job IDs"},
		{in: "later:3", err: `unknown dependency kind "later"`},
		{in: "afterok:1,,afterok:2", err: "empty item"},
		{in: "", err: "empty dependency"},
	} {
		got, err := parseDependency(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseDependency(%q): error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseDependency(%q): %v", tc.in, err)
			continue
		}
		if !slices.Equal(got.AfterOK, tc.want.AfterOK) || !slices.Equal(got.AfterAny, tc.want.AfterAny) ||
			!slices.Equal(got.AfterNotOK, tc.want.AfterNotOK) || got.Singleton != tc.want.Singleton {
			t.Errorf("parseDependency(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestExportEnv(t *testing.T) {
	env := map[string]string{"HOME": "/home/a", "PATH": "/bin", "DEBUG": "0"}
	for _, tc := range []struct {
		spec string
		want string // sorted NAME=VALUE, space-separated
		err  string
	}{
		{spec: "", want: "DEBUG=0 HOME=/home/a PATH=/bin"},
		{spec: "ALL", want: "DEBUG=0 HOME=/home/a PATH=/bin"},
		{spec: "NONE", want: ""},
		{spec: "PATH,X=1", want: "PATH=/bin X=1"},
		{spec: "ALL,DEBUG=1", want: "DEBUG=1 HOME=/home/a PATH=/bin"},
		{spec: "UNSET,HOME", want: "HOME=/home/a"},
		{spec: "A=x=y", want: "A=x=y"},
		{spec: "NONE,PATH", err: "NONE cannot be listed"},
		{spec: "PATH,,HOME", err: "empty item"},
		{spec: "1X=2", err: `"1X" is not a variable name`},
		{spec: "=v", err: `"" is not a variable name`},
	} {
		got, err := exportEnv(tc.spec, env)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("exportEnv(%q): error %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("exportEnv(%q): %v", tc.spec, err)
			continue
		}
		var kv []string
		for _, k := range sortedKeys(got) {
			kv = append(kv, k+"="+got[k])
		}
		if s := strings.Join(kv, " "); s != tc.want {
			t.Errorf("exportEnv(%q) = %q, want %q", tc.spec, s, tc.want)
		}
	}
	if env["DEBUG"] != "0" || len(env) != 3 {
		t.Errorf("exportEnv changed its input: %v", env)
	}
}

func ids(n ...api.JobID) []api.JobID { return n }

func sortedKeys(m map[string]string) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.Sort(keys)
	return keys
}
