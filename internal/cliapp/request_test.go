package cliapp

import (
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
)

// testNow is the "now" of relative times in these tests: a Wednesday.
var testNow = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

var testEnv = []string{"PATH=/usr/bin:/bin", "HOME=/home/alice", "EMPTY=", "A=b=c", "=C:=C:\\", "PATH=/opt/bin"}

// parseCommand runs args through a one-command app made of cmd as the CLI
// prepares it (permuted, usage errors exit 2), with act as the action of
// cmd or of its subcommand sub.
func parseCommand(t *testing.T, cmd *cli.Command, sub string, act cli.ActionFunc, args ...string) error {
	t.Helper()
	prepare(cmd)
	leaf := cmd
	if sub != "" {
		leaf = cmd.Command(sub)
	}
	leaf.Action = act
	app := &cli.App{Name: "strata", Flags: globalFlags(), DisableSliceFlagSeparator: true, Commands: []*cli.Command{cmd}, Writer: io.Discard, ErrWriter: io.Discard, OnUsageError: onUsageError}
	return app.Run(permuteArgs(app, append([]string{"strata"}, args...)))
}

func parseSubmit(t *testing.T, args ...string) (api.SubmitRequest, error) {
	t.Helper()
	var req api.SubmitRequest
	err := parseCommand(t, submitCommand(), "", func(c *cli.Context) error {
		var err error
		req, err = readJobSpec(c).request(testNow, "/work", testEnv)
		return err
	}, append([]string{"submit"}, args...)...)
	return req, err
}

func TestSubmitRequest(t *testing.T) {
	env := map[string]string{"PATH": "/opt/bin", "HOME": "/home/alice", "EMPTY": "", "A": "b=c"}
	base := func(f func(r *api.SubmitRequest)) api.SubmitRequest {
		r := api.SubmitRequest{Nodes: 1, Name: "sim", Command: []string{"./sim", "-x", "in.dat"}, Cwd: "/work", Env: env}
		if f != nil {
			f(&r)
		}
		return r
	}
	for _, tc := range []struct {
		args []string
		want api.SubmitRequest
	}{
		{[]string{"--", "./sim", "-x", "in.dat"}, base(nil)},
		{[]string{"./sim", "-x", "in.dat"}, base(nil)},
		{[]string{"-N", "4", "-t", "1d12h", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Nodes, r.Walltime = 4, 129600 })},
		{[]string{"-N4", "-t30", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Nodes, r.Walltime = 4, 1800 })},
		{[]string{"--nodes=2", "--time=1-00:00:00", "--", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Nodes, r.Walltime = 2, 86400 })},
		{[]string{"-t", "02:00:30", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Walltime = 7230 })},
		{[]string{"--signal", "USR1@120", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Warn, r.WarnBefore = "USR1", 120 })},
		{[]string{"--signal=sigusr2", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Warn, r.WarnBefore = "USR2", 60 })},
		{[]string{"--signal", "10@0", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Warn, r.WarnBefore = "USR1", 0 })},
		{[]string{"--deadline", "now+3h", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Deadline = testNow.Add(3 * time.Hour) })},
		{[]string{"--name", "big run", "--resv", "physics", "--hold", "--requeue", "--", "./sim", "-x", "in.dat"},
			base(func(r *api.SubmitRequest) { r.Name, r.Resv, r.Hold, r.Requeue = "big run", "physics", true, true })},
		{[]string{"--begin", "now+2h", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Begin = testNow.Add(2 * time.Hour) })},
		{[]string{"--begin", "17:00", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Begin = time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC) })},
		{[]string{"--begin", "now+1hour", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Begin = testNow.Add(time.Hour) })},
		{[]string{"--begin", "tomorrow", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Begin = time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC) })},
		{[]string{"--begin", "tue 09:00", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Begin = time.Date(2026, 12, 8, 9, 0, 0, 0, time.UTC) })},
		{[]string{"--begin", "12/08", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Begin = time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC) })},
		{[]string{"--begin", "teatime", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Begin = time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC) })},
		{[]string{"--begin", "2026-12-03T17:00:00Z", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Begin = time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC) })},
		{[]string{"--afterok", "1,2", "--afterany", "3", "--afternotok", " 4 , 5", "./sim", "-x", "in.dat"},
			base(func(r *api.SubmitRequest) {
				r.AfterOK, r.AfterAny, r.AfterNotOK = []api.JobID{1, 2}, []api.JobID{3}, []api.JobID{4, 5}
			})},
		{[]string{"--qpu", "qpu0:2", "--qpu", "ion:1", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.QPU = map[string]int{"qpu0": 2, "ion": 1} })},
		{[]string{"--qpu", "qpu0:2,ion:1", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.QPU = map[string]int{"qpu0": 2, "ion": 1} })},
		{[]string{"-o", "out-%j.txt", "-e", "/tmp/err-%j", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Stdout, r.Stderr = "out-%j.txt", "/tmp/err-%j" })},
		{[]string{"-w", "n[1-3]", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Nodes, r.NodeList = 3, "n[1-3]" })},
		{[]string{"--nodelist", "n3,n1", "-N", "2", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Nodes, r.NodeList = 2, "n[1,3]" })},
		{[]string{"-x", "n3,n1", "-N", "2", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Nodes, r.Exclude = 2, "n[1,3]" })},
		{[]string{"--exclude", "n[4-5]", "./sim", "-x", "in.dat"}, base(func(r *api.SubmitRequest) { r.Exclude = "n[4-5]" })},
		// What follows the command belongs to it, flags included.
		{[]string{"./sim", "-x", "in.dat", "-N", "4"}, base(func(r *api.SubmitRequest) { r.Command = append(r.Command, "-N", "4") })},
		{[]string{"-N", "2", "./sim", "--", "-t"}, base(func(r *api.SubmitRequest) { r.Nodes, r.Command = 2, []string{"./sim", "--", "-t"} })},
		{[]string{"/usr/local/bin/sim"}, base(func(r *api.SubmitRequest) { r.Command = []string{"/usr/local/bin/sim"} })},
	} {
		got, err := parseSubmit(t, tc.args...)
		if err != nil {
			t.Errorf("submit %q: %v", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("submit %q:\n got %+v\nwant %+v", tc.args, got, tc.want)
		}
	}
}

func TestSubmitRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  []string // all in the error
	}{
		{[]string{}, []string{"no command"}},
		{[]string{"--"}, []string{"no command"}},
		{[]string{"-N", "0", "true"}, []string{"-N/--nodes", "from 1"}},
		{[]string{"-N", "-3", "true"}, []string{"-N/--nodes"}},
		{[]string{"-N", "x", "true"}, []string{"-N"}},
		{[]string{"-t", "0", "true"}, []string{"-t/--time", "at least 1s"}},
		{[]string{"-t", "soon", "true"}, []string{"-t/--time", `"soon"`, "1h30m"}},
		{[]string{"-t", "-5m", "true"}, []string{"-t/--time", "negative"}},
		{[]string{"--deadline", "someday", "true"}, []string{"--deadline", `"someday"`, "now+1hour"}},
		{[]string{"--signal", "USR9", "true"}, []string{"--signal", `unknown signal "USR9"`, "USR1@120"}},
		{[]string{"--signal", "USR1@x", "true"}, []string{"--signal", "0 to 65535 seconds"}},
		{[]string{"--signal", "USR1@65536", "true"}, []string{"--signal", "0 to 65535 seconds"}},
		{[]string{"--signal", "B:USR1@60", "true"}, []string{"--signal", "every process of the job", "B:"}},
		{[]string{"--begin", "someday", "true"}, []string{"--begin", `"someday"`, "now+1hour", "tomorrow", "tuesday 09:00", "MM/DD[/YY]"}},
		{[]string{"--begin", "02/30", "true"}, []string{"--begin", "February has no day 30", "now+1hour"}},
		{[]string{"--begin", "25:00", "true"}, []string{"--begin"}},
		{[]string{"--afterok", "x", "true"}, []string{"--afterok", `"x"`}},
		{[]string{"--afterany", "0", "true"}, []string{"--afterany", "start at 1"}},
		{[]string{"--afternotok", "1,", "true"}, []string{"--afternotok", "empty"}},
		{[]string{"--qpu", "qpu0", "true"}, []string{"--qpu", "NAME:SLOTS"}},
		{[]string{"--qpu", "qpu0:0", "true"}, []string{"--qpu", "whole number"}},
		{[]string{"--qpu", "qpu0:1", "--qpu", "qpu0:2", "true"}, []string{"--qpu", "twice"}},
		{[]string{"--resv", "Physics!", "true"}, []string{"--resv", "reservation name"}},
		{[]string{"--name", strings.Repeat("x", 129), "true"}, []string{"--name", "at most 128"}},
		{[]string{"-w", "n[3-1]", "true"}, []string{"-w/--nodelist", "hostlist"}},
		{[]string{"-w", "n[1-2]", "-N", "3", "true"}, []string{"-w/--nodelist", "names 2 nodes", "-N asks for 3"}},
		{[]string{"-x", "n[3-1]", "true"}, []string{"-x/--exclude", "hostlist"}},
		{[]string{"-x", "n1", "-w", "n2", "true"}, []string{"-x/--exclude", "-w/--nodelist", "give one of the two"}},
		{[]string{"--bogus", "true"}, []string{"bogus"}},
		{[]string{"--hold=maybe", "true"}, []string{"hold"}},
	} {
		_, err := parseSubmit(t, tc.args...)
		if err == nil {
			t.Errorf("submit %q: no error", tc.args)
			continue
		}
		if exitCode(err) != 2 {
			t.Errorf("submit %q: exit code %d, want 2 (%v)", tc.args, exitCode(err), err)
		}
		for _, m := range tc.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("submit %q: error %q does not contain %q", tc.args, err, m)
			}
		}
	}
}

func TestDefaultJobName(t *testing.T) {
	for in, want := range map[string]string{
		"sleep": "sleep", "./sim": "sim", "/usr/bin/env": "env", "a/b/": "b",
		strings.Repeat("é", 100): strings.Repeat("é", 64),
	} {
		if got := defaultJobName(in); got != want {
			t.Errorf("defaultJobName(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestEnvironMap(t *testing.T) {
	got := environMap(testEnv)
	want := map[string]string{"PATH": "/opt/bin", "HOME": "/home/alice", "EMPTY": "", "A": "b=c"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("environMap = %v; want %v", got, want)
	}
	r := api.SubmitRequest{Nodes: 1, Walltime: 1, Command: []string{"x"}, Env: environMap([]string{"=x", "", "NOVALUE", "\x00=1", "OK=1"})}
	if err := r.Validate(); err != nil {
		t.Errorf("environMap let through a name Validate refuses: %v", err)
	}
}

func TestUpdateRequest(t *testing.T) {
	parse := func(args ...string) (api.UpdateRequest, error) {
		var req api.UpdateRequest
		err := parseCommand(t, jobCommand(), "update", func(c *cli.Context) error {
			ids, err := jobIDArgs(c)
			if err != nil {
				return err
			}
			req, err = updateFlagsOf(c).request(ids[0], testNow)
			return err
		}, append([]string{"job", "update"}, args...)...)
		return req, err
	}
	for _, tc := range []struct {
		args []string
		want api.UpdateRequest
		err  string
	}{
		{[]string{"12", "--hold"}, api.UpdateRequest{ID: 12, Hold: true}, ""},
		{[]string{"--release", "12"}, api.UpdateRequest{ID: 12, Release: true}, ""},
		{[]string{"12", "--resv", "physics"}, api.UpdateRequest{ID: 12, Resv: "physics"}, ""},
		{[]string{"12", "--no-resv"}, api.UpdateRequest{ID: 12, NoResv: true}, ""},
		{[]string{"12", "-t", "2h", "--begin", "+30m"}, api.UpdateRequest{ID: 12, Walltime: 7200, Begin: testNow.Add(30 * time.Minute)}, ""},
		{[]string{"12", "-t2h"}, api.UpdateRequest{ID: 12, Walltime: 7200}, ""},
		{[]string{"12", "-t", "+1h"}, api.UpdateRequest{ID: 12, WalltimeDelta: 3600}, ""},
		{[]string{"12", "-t", "-30m"}, api.UpdateRequest{ID: 12, WalltimeDelta: -1800}, ""},
		{[]string{"12", "--time=+1:00:00"}, api.UpdateRequest{ID: 12, WalltimeDelta: 3600}, ""},
		{[]string{"12", "-t", "+soon"}, api.UpdateRequest{}, "-t/--time"},
		{[]string{"12", "--name", "sim-v2"}, api.UpdateRequest{ID: 12, Name: new("sim-v2")}, ""},
		{[]string{"12", "--name", ""}, api.UpdateRequest{}, "--name"},
		{[]string{"12", "-x", "n[3-1]"}, api.UpdateRequest{}, "-x/--exclude"},
		{[]string{"12", "-x", "n1,n2,n3"}, api.UpdateRequest{ID: 12, Exclude: new("n[1-3]")}, ""},
		{[]string{"12", "--exclude", ""}, api.UpdateRequest{ID: 12, Exclude: new("")}, ""},
		{[]string{"12", "-w", "n[0-1]"}, api.UpdateRequest{ID: 12, NodeList: new("n[0-1]")}, ""},
		{[]string{"12", "-w", "n0", "-x", ""}, api.UpdateRequest{ID: 12, NodeList: new("n0"), Exclude: new("")}, ""},
		{[]string{"12", "-w", "n0", "-x", "n1"}, api.UpdateRequest{}, "exclude each other"},
		{[]string{"12", "-w", "n[0"}, api.UpdateRequest{}, "-w/--nodelist"},
		{[]string{"12", "-N", "3"}, api.UpdateRequest{ID: 12, Nodes: 3}, ""},
		{[]string{"12", "--nodes", "0"}, api.UpdateRequest{}, "-N/--nodes"},
		{[]string{"12", "-N", "-2"}, api.UpdateRequest{}, "-N/--nodes"},
		{[]string{"12", "--qpu", "qpu0:2", "--qpu", "ibm:1"}, api.UpdateRequest{ID: 12, QPU: &map[string]int{"qpu0": 2, "ibm": 1}}, ""},
		{[]string{"12", "--qpu", ""}, api.UpdateRequest{ID: 12, QPU: &map[string]int{}}, ""},
		{[]string{"12", "--qpu", "qpu0"}, api.UpdateRequest{}, "--qpu"},
		{[]string{"12", "--qpu", "qpu0:0"}, api.UpdateRequest{}, "--qpu"},
		{[]string{"12"}, api.UpdateRequest{}, "nothing to change"},
		{[]string{"12", "--hold", "--release"}, api.UpdateRequest{}, "exclude each other"},
		{[]string{"12", "--resv", "physics", "--no-resv"}, api.UpdateRequest{}, "exclude each other"},
		{[]string{"12", "--resv", ""}, api.UpdateRequest{}, "--no-resv"},
		{[]string{"12", "--resv", "UP"}, api.UpdateRequest{}, "--resv"},
		{[]string{"12", "-t", "0"}, api.UpdateRequest{}, "-t/--time"},
		{[]string{"12", "-t", ""}, api.UpdateRequest{}, "-t/--time"},
		{[]string{"12", "--begin", "later"}, api.UpdateRequest{}, "--begin"},
		{[]string{"x", "--hold"}, api.UpdateRequest{}, "not a job ID"},
		{[]string{"--hold"}, api.UpdateRequest{}, "needs at least one job ID"},
		{[]string{"1", "2", "--hold"}, api.UpdateRequest{ID: 1, Hold: true}, ""}, // each job in turn (runJobUpdate)
	} {
		got, err := parse(tc.args...)
		if tc.err != "" {
			if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("job update %q = %+v, %v; want exit 2 and an error containing %q", tc.args, got, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("job update %q = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
}

func TestJobsRequest(t *testing.T) {
	for _, tc := range []struct {
		all         bool
		user, state string
		want        api.JobsRequest
		err         string
	}{
		{false, "", "", api.JobsRequest{}, ""},
		{true, "bob", "", api.JobsRequest{All: true, User: "bob"}, ""},
		{false, "*", "running,pending", api.JobsRequest{User: "*", State: []api.JobState{api.JobRunning, api.JobPending}}, ""},
		{false, "", "timeout", api.JobsRequest{All: true, State: []api.JobState{api.JobTimeout}}, ""},
		{false, "Bob", "", api.JobsRequest{}, "-u/--user"},
		{false, "exec_x", "", api.JobsRequest{}, "-u/--user"},
		{false, "", "done", api.JobsRequest{}, "--state"},
	} {
		got, err := jobsRequest(tc.all, tc.user, tc.state)
		if tc.err != "" {
			if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("jobsRequest(%v, %q, %q) = %v; want exit 2 naming %s", tc.all, tc.user, tc.state, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("jobsRequest(%v, %q, %q) = %+v, %v; want %+v", tc.all, tc.user, tc.state, got, err, tc.want)
		}
	}
}

// The commands that take arguments refuse bad ones with exit code 2 before
// dialling (the action would fail to dial: no broker, no credentials).
func TestUsageErrorsBeforeDial(t *testing.T) {
	t.Setenv(api.EnvURI, "strata://127.0.0.1:1/root")
	t.Setenv(api.EnvCreds, "/nonexistent/creds")
	for _, args := range [][]string{
		{"cancel"},
		{"cancel", "12", "x"},
		{"cancel", "12", "-u", "alice"},
		{"cancel", "--name", ""},
		{"cancel", "-u", ""},
		{"cancel", "--state", ""},
		{"cancel", "--state", "completed"},
		{"cancel", "--state", "nope"},
		{"cancel", "-u", "NotAUser"},
		{"wait", "0"},
		{"job", "show"},
		{"job", "show", "1", "2"},
		{"job", "show", "abc"},
		{"job", "update", "1"},
		{"jobs", "extra"},
		{"jobs", "--state", "nope"},
		{"jobs", "-u", "NotAUser"},
		{"uri", "1", "2"},
		{"uri", "Not-A-Name"},
		{"--uri", "http://x/root", "uri"},
		{"uri", "--uri", "host:99999"},
		{"user", "add"},
		{"user", "add", "Alice"},
		{"user", "add", "alice", "-o", ""},
		{"user", "list", "x"},
		{"whoami", "x"},
		{"whoami", "--bogus"},
		{"resource", "list", "x"},
		{"submit", "-t", "x", "true"},
		{"run", "-N", "0", "true"},
		{"run"},
		{"frob"},
	} {
		app := newApp()
		app.Writer, app.ErrWriter = io.Discard, io.Discard
		err := app.Run(permuteArgs(app, append([]string{"strata"}, args...)))
		if err == nil || exitCode(err) != 2 {
			t.Errorf("strata %q = %v (exit %d); want a usage error, exit 2", args, err, exitCode(err))
		}
	}
}

// A missing broker is reported as the client reports it, exit code 1.
func TestNoBroker(t *testing.T) {
	app := newApp()
	app.Writer, app.ErrWriter = io.Discard, io.Discard
	err := app.Run([]string{"strata", "whoami", "--uri", "strata://127.0.0.1:1/root", "--creds", "/nonexistent/creds"})
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("whoami without credentials = %v; want exit 1", err)
	}
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeUnauthenticated {
		t.Errorf("whoami with missing creds = %v; want the client's unauthenticated error", err)
	}
}

func TestPermuteArgs(t *testing.T) {
	app := newApp()
	for _, tc := range []struct{ in, want string }{
		{"job show 12 --json", "job show --json 12"},
		{"job show --json 12", "job show --json 12"},
		{"--uri u job show 12 --creds c --json", "--uri u job show --creds c --json 12"},
		{"job update 12 --resv physics -t 2h", "job update --resv physics -t 2h 12"},
		{"job update 12 -t2h", "job update -t 2h 12"},
		{"cancel 12 13 --uri x", "cancel --uri x 12 13"},
		{"cancel 12 -- -13", "cancel -- 12 -13"},
		{"cancel -- 12", "cancel 12"},
		{"user add alice --admin -o a.creds", "user add --admin -o a.creds alice"},
		{"jobs -a -u '*'", "jobs -a -u '*'"},
		{"uri physics --uri=strata://h/root", "uri --uri=strata://h/root physics"},
		// submit and run: the command line starts at the first argument.
		{"submit -N4 -t1h sleep 30 -N 2", "submit -N 4 -t 1h sleep 30 -N 2"},
		{"run --name x -- sh -c 'exit 3'", "run --name x -- sh -c 'exit 3'"},
		{"submit --hold sleep -t", "submit --hold sleep -t"},
		{"run -t 1s -o out sleep 30", "run -t 1s -o out sleep 30"},
		// Commands that are not the CLI's user commands are left alone.
		{"sim --trace x.swf extra --json", "sim --trace x.swf extra --json"},
		{"broker start --listen 127.0.0.1:1 --nodes n[0-3]", "broker start --listen 127.0.0.1:1 --nodes n[0-3]"},
		{"frob 1 --x", "frob 1 --x"},
		{"", ""},
	} {
		in := append([]string{"strata"}, splitArgs(tc.in)...)
		got := permuteArgs(app, in)[1:]
		if want := splitArgs(tc.want); !slices.Equal(got, want) {
			t.Errorf("permuteArgs(%q) = %q; want %q", tc.in, got, want)
		}
	}
}

// splitArgs splits at blanks, with '...' quoting.
func splitArgs(s string) []string {
	var out []string
	for len(s) > 0 {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			break
		}
		if s[0] == '\'' {
			end := strings.IndexByte(s[1:], '\'') + 1
			out = append(out, s[1:end])
			s = s[end+1:]
			continue
		}
		end := strings.IndexByte(s, ' ')
		if end < 0 {
			end = len(s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// The instance comes from --uri after the command, else --uri before it,
// else $STRATA_URI, else the local root.
func TestURIPrecedence(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"uri"}, "strata://127.0.0.1:4222/root"},
		{"strata://env:1/root/physics", []string{"uri"}, "strata://env:1/root/physics"},
		{"strata://env:1", []string{"--uri", "app:2", "uri"}, "strata://app:2/root"},
		{"strata://env:1", []string{"--uri", "app:2", "uri", "--uri", "cmd:3/root/x"}, "strata://cmd:3/root/x"},
		{"", []string{"uri", "--uri=CMD"}, "strata://cmd:4222/root"},
	} {
		t.Setenv(api.EnvURI, tc.env)
		app := newApp()
		var out strings.Builder
		app.Writer, app.ErrWriter = &out, io.Discard
		if err := app.Run(permuteArgs(app, append([]string{"strata"}, tc.args...))); err != nil {
			t.Errorf("STRATA_URI=%s strata %q: %v", tc.env, tc.args, err)
			continue
		}
		if got := strings.TrimSpace(out.String()); got != tc.want {
			t.Errorf("STRATA_URI=%s strata %q printed %q; want %q", tc.env, tc.args, got, tc.want)
		}
	}
}

func TestGuard(t *testing.T) {
	err := guard(func(*cli.Context) error { panic("boom") })(cli.NewContext(newApp(), nil, nil))
	if err == nil || !strings.Contains(err.Error(), "internal error") || !strings.Contains(err.Error(), "boom") || strings.Contains(err.Error(), "goroutine") {
		t.Errorf("guard: %v", err)
	}
}

func TestAcctWindow(t *testing.T) {
	day := func(d, h, m int) time.Time { return time.Date(2026, 12, d, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		now          time.Time
		args         []string
		since, until time.Time
		err          string
	}{
		{now: day(2, 10, 0), since: day(2, 0, 0)},
		{now: day(2, 10, 0), args: []string{"--until", "-1h"}, since: day(2, 0, 0), until: day(2, 9, 0)},
		// Just after midnight an hour ago is yesterday: the window is
		// yesterday's, not one that ends before it starts.
		{now: day(4, 0, 25), args: []string{"--until", "-1h"}, since: day(3, 0, 0), until: day(3, 23, 25)},
		{now: day(4, 0, 25), args: []string{"--until", "2026-12-04"}, since: day(3, 0, 0), until: day(4, 0, 0)},
		{now: day(4, 0, 25), args: []string{"--since", "-2d"}, since: day(2, 0, 25)},
		{now: day(4, 0, 25), args: []string{"--since", "-1h", "--until", "-2h"}, err: "not after --since"},
		{now: day(4, 0, 25), args: []string{"--since", "+1m", "--until", "+2m"}, since: day(4, 0, 26), until: day(4, 0, 27)},
	} {
		var req api.AcctRequest
		err := parseCommand(t, acctCommand(), "", func(c *cli.Context) error {
			var err error
			req, err = acctRequest(c, tc.now)
			return err
		}, append([]string{"acct"}, tc.args...)...)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("acct %q at %v: error %v, want one saying %q", tc.args, tc.now, err, tc.err)
			}
			continue
		}
		if err != nil || !req.Since.Equal(tc.since) || !req.Until.Equal(tc.until) {
			t.Errorf("acct %q at %v: window [%v, %v), %v; want [%v, %v)", tc.args, tc.now, req.Since, req.Until, err, tc.since, tc.until)
		}
	}
}
