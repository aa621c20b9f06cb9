package cliapp

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runStrata runs the strata front end's command line in this process, as
// Main does, and returns what it wrote and its exit code.
func runStrata(args ...string) (stdout string, code int, err error) {
	app := newApp()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errb
	err = app.Run(permuteArgs(app, append([]string{"strata"}, args...)))
	if err != nil {
		code = exitCode(err)
	}
	return out.String(), code, err
}

// TestCompletion: each shell gets its script; the hidden flag the bash and
// zsh scripts call lists the commands, subcommands and flags that may come
// next.
func TestCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want []string // lines (completion) or substrings (scripts) of stdout
		not  []string
	}{
		{[]string{"completion", "bash"}, 0, []string{"complete -o bashdefault -o default -F _strata_bash_autocomplete strata", "--generate-bash-completion"}, nil},
		{[]string{"completion", "zsh"}, 0, []string{"#compdef strata", "compdef _strata strata"}, nil},
		{[]string{"completion", "fish"}, 0, []string{"complete -c strata", "-a 'submit'", "-l all"}, nil},
		{[]string{"completion", "tcsh"}, 2, nil, nil},
		{[]string{"completion"}, 2, nil, nil},
		{[]string{"--generate-bash-completion"}, 0, []string{"submit", "jobs", "job", "qpu", "resv", "completion", "man"}, []string{"executor"}},
		{[]string{"job", "--generate-bash-completion"}, 0, []string{"show", "why", "update", "requeue"}, []string{"submit"}},
		{[]string{"qpu", "--generate-bash-completion"}, 0, []string{"submit", "jobs", "result", "slots"}, nil},
		{[]string{"jobs", "--a", "--generate-bash-completion"}, 0, []string{"--all", "--array"}, []string{"--json"}},
		{[]string{"jobs", "-", "--generate-bash-completion"}, 0, []string{"--all", "--json", "--user"}, nil},
	} {
		// urfave/cli's completion reads the words typed from os.Args
		// (DefaultCompleteWithFlags), not from the arguments of Run.
		saved := os.Args
		os.Args = append([]string{"strata"}, tc.args...)
		out, code, err := runStrata(tc.args...)
		os.Args = saved
		if code != tc.code {
			t.Errorf("strata %q: exit %d (%v), want %d", tc.args, code, err, tc.code)
			continue
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(out, "\n") {
			lines[strings.TrimSpace(strings.SplitN(l, ":", 2)[0])] = true
		}
		complete := tc.args[len(tc.args)-1] == "--generate-bash-completion"
		for _, w := range tc.want {
			if complete && !lines[w] || !complete && !strings.Contains(out, w) {
				t.Errorf("strata %q lacks %q:\n%s", tc.args, w, out)
			}
		}
		for _, w := range tc.not {
			if lines[w] {
				t.Errorf("strata %q offers %q:\n%s", tc.args, w, out)
			}
		}
	}
}

// TestCompletionBashSyntax: bash itself accepts the bash script.
func TestCompletionBashSyntax(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash here")
	}
	out, _, err := runStrata("completion", "bash")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, "-n")
	cmd.Stdin = strings.NewReader(out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("bash -n refuses the completion script: %v\n%s", err, msg)
	}
}

// TestMan: strata man is a roff page that names every command.
func TestMan(t *testing.T) {
	out, code, err := runStrata("man")
	if code != 0 {
		t.Fatalf("strata man: exit %d, %v", code, err)
	}
	if !strings.HasPrefix(out, ".nh\n.TH strata") {
		t.Errorf("strata man is not a roff man page:\n%.200s", out)
	}
	// A user command's page: section 1, as sbatch(1), scontrol(1) and
	// flux(1); 8 is for daemons.
	if th := strings.Fields(strings.SplitN(out, "\n", 3)[1]); len(th) < 3 || th[2] != "1" {
		t.Errorf("strata man: title line %q, want the page in section 1 (.TH strata 1 ...)", th)
	}
	// Commands are sections (.SH NAME), their subcommands subsections.
	for _, c := range newApp().Commands {
		if !c.Hidden && !strings.Contains(out, "\n.SH "+c.Name+"\n") && !strings.Contains(out, "\n.SH "+c.Name+",") {
			t.Errorf("strata man lacks the command %q", c.Name)
		}
		for _, s := range c.Subcommands {
			if !s.Hidden && !strings.Contains(out, "\n.SS "+s.Name+"\n") && !strings.Contains(out, "\n.SS "+s.Name+",") {
				t.Errorf("strata man lacks the command '%s %s'", c.Name, s.Name)
			}
		}
	}
	if _, code, _ := runStrata("man", "extra"); code != 2 {
		t.Errorf("strata man extra: exit %d, want 2", code)
	}
}
