package cliapp

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/api"
)

// FuzzParseDirectives: never a panic; an error names its line; every
// directive comes from a "#STRATA" or "#SBATCH" line before the first
// command, and sets a flag of submit's table.
func FuzzParseDirectives(f *testing.F) {
	for _, s := range []string{
		"#!/bin/sh\n#SBATCH -N 4 -t 1:00:00\n#STRATA --qpu qpu0:2\n./sim\n",
		"#SBATCH --mem=4G -p debug\n", "#STRATA --nope\n", "#SBATCH -J 'x\n", "#SBATCH -J \"a\\\"b\" # c\n",
		"#STRATA -N\n", "#STRATA --hold=1\n", "\n\n#SBATCH --array=1-3%2\necho\n#SBATCH -N 9", "#SBATCH\t-N\t2\r\n",
	} {
		f.Add(s)
	}
	flags := map[string]bool{}
	for _, o := range append(strataOptions(), sbatchOptions...) {
		flags[o.flag] = true
	}
	f.Fuzz(func(t *testing.T, script string) {
		dirs, warns, err := parseDirectives(strings.NewReader(script))
		if err != nil {
			if dirs != nil || warns != nil || !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("parseDirectives(%q) = %v, %v, %q", script, dirs, warns, err)
			}
			return
		}
		lines := strings.Split(script, "\n")
		for _, d := range dirs {
			if d.line < 1 || d.line > len(lines) {
				t.Fatalf("directive %+v: no such line in %q", d, script)
			}
			l := lines[d.line-1]
			if !hasPrefixWord(strings.TrimRight(l, " \t\r"), prefixStrata) && !hasPrefixWord(strings.TrimRight(l, " \t\r"), prefixSbatch) {
				t.Fatalf("directive %+v from line %q, which is not a directive line", d, l)
			}
			if !flags[d.flag] {
				t.Fatalf("directive %+v sets no known flag", d)
			}
		}
		for _, w := range warns {
			if !strings.Contains(w, "#SBATCH") || !strings.Contains(w, "ignored") {
				t.Fatalf("warning %q does not say what it ignored", w)
			}
		}
	})
}

// FuzzParseDependency: never a panic; what it accepts names valid IDs or
// singleton, and reads back the same from its canonical form.
func FuzzParseDependency(f *testing.F) {
	for _, s := range []string{"afterok:1:2,afterany:3", "singleton", "after:1", "afterok:1?afterany:2", "afternotok:0", ",", "afterok:18446744073709551616", "singleton,afterok:5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDependency(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("parseDependency(%q): an empty error", s)
			}
			return
		}
		var items []string
		for _, l := range []struct {
			kind string
			ids  []api.JobID
		}{{"afterok", d.AfterOK}, {"afterany", d.AfterAny}, {"afternotok", d.AfterNotOK}} {
			for _, id := range l.ids {
				if id == 0 {
					t.Fatalf("parseDependency(%q) gave job 0", s)
				}
				items = append(items, l.kind+":"+id.String())
			}
		}
		if d.Singleton {
			items = append(items, "singleton")
		}
		if len(items) == 0 {
			t.Fatalf("parseDependency(%q) accepted nothing", s)
		}
		back, err := parseDependency(strings.Join(items, ","))
		if err != nil || !slices.Equal(back.AfterOK, d.AfterOK) || !slices.Equal(back.AfterAny, d.AfterAny) || !slices.Equal(back.AfterNotOK, d.AfterNotOK) || back.Singleton != d.Singleton {
			t.Fatalf("parseDependency(%q) = %+v; its canonical form reads %+v, %v", s, d, back, err)
		}
	})
}

// FuzzExportEnv: never a panic; every variable it passes has a valid name
// and comes from the list or from the environment.
func FuzzExportEnv(f *testing.F) {
	for _, s := range []string{"ALL", "NONE", "PATH,X=1", "ALL,DEBUG=1", "NONE,PATH", "1X=2", ",", "A=b=c"} {
		f.Add(s)
	}
	env := map[string]string{"HOME": "/h", "PATH": "/bin"}
	f.Fuzz(func(t *testing.T, spec string) {
		got, err := exportEnv(spec, env)
		if err != nil {
			if got != nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("%q", spec)) {
				t.Fatalf("exportEnv(%q) = %v, %q", spec, got, err)
			}
			return
		}
		for k, v := range got {
			if !envName(k) {
				t.Fatalf("exportEnv(%q) passes %q", spec, k)
			}
			if ev, ok := env[k]; !(ok && ev == v) && !strings.Contains(spec, k+"="+v) {
				t.Fatalf("exportEnv(%q) made up %s=%s", spec, k, v)
			}
		}
	})
}
