package cliapp

import (
	"bytes"
	"strings"
	"testing"
)

// TestBadInvocations: misspelt commands and subcommands, at every level,
// are usage errors (exit 2) that suggest the nearest command; nothing is
// sent to a broker (none runs here).
func TestBadInvocations(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"sumbit"}, 2, `unknown command "sumbit" (did you mean 'submit'?)`},
		{[]string{"job", "shwo"}, 2, "unknown command 'job shwo' (did you mean 'show'?)"},
		{[]string{"user", "lst"}, 2, "unknown command 'user lst' (did you mean 'list'?)"},
		{[]string{"resv", "delet"}, 2, "(did you mean 'delete'?)"},
		{[]string{"qpu", "stauts"}, 2, "(did you mean 'status'?)"},
		{[]string{"resource", "gant"}, 2, "(did you mean 'gantt'?)"},
		{[]string{"zzzzzz"}, 2, `unknown command "zzzzzz": see 'strata --help'`},
		{[]string{"job", "show"}, 2, ""},
		{[]string{"whoami", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"jobs", "--alll"}, 2, "flag provided but not defined: -alll (did you mean --all?)"},
		{[]string{"jobs", "--stat", "running"}, 2, "(did you mean --state?)"},
		{[]string{"jobs", "--jsn"}, 2, "(did you mean --json?)"},
		{[]string{"job", "show", "--jsno", "1"}, 2, "(did you mean --json?)"},
		{[]string{"qpu", "jobs", "--all-user"}, 2, "(did you mean --all-users?)"},
		{[]string{"submit", "--nodse", "2", "true"}, 2, "(did you mean --nodes?)"},
		{[]string{"--cred", "x", "jobs"}, 2, "(did you mean --creds?)"},
		{[]string{"jobs", "--zzzzzzzz"}, 2, "flag provided but not defined: -zzzzzzzz (see --help)"},
	} {
		app := newApp()
		var out, errb bytes.Buffer
		app.Writer, app.ErrWriter = &out, &errb
		err := app.Run(permuteArgs(app, append([]string{"strata"}, tc.args...)))
		code := 0
		if err != nil {
			code = exitCode(err)
		}
		if code != tc.code || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("strata %q: exit %d, %v; want exit %d saying %q", tc.args, code, err, tc.code, tc.msg)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"show", "show", 0}, {"shwo", "show", 2}, {"lst", "list", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
