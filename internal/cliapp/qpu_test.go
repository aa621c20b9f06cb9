package cliapp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
)

const testQPUKey = "0123456789abcdef"

// parseQPUSubmit runs args through qpu submit with jobID as $STRATA_JOBID
// and stdin as its input, and returns the request it would send.
func parseQPUSubmit(t *testing.T, jobID, stdin string, args ...string) (api.QPUSubmitRequest, error) {
	t.Helper()
	return parseQPUSubmitAt(t, "root", jobID, stdin, args...)
}

// parseQPUSubmitAt is parseQPUSubmit with the request going to instance
// path.
func parseQPUSubmitAt(t *testing.T, path, jobID, stdin string, args ...string) (api.QPUSubmitRequest, error) {
	t.Helper()
	var req api.QPUSubmitRequest
	err := parseCommand(t, qpuCommand(), "submit", func(c *cli.Context) error {
		f := qpuSubmitFlags{
			Backend: c.String("backend"), BackendSet: c.IsSet("backend"),
			Shots: c.Int("shots"), ShotsSet: c.IsSet("shots"),
			Name: c.String("name"), Args: c.Args().Slice(),
			JobID: jobID, Path: path, Key: testQPUKey,
		}
		var err error
		req, err = f.request(strings.NewReader(stdin))
		return err
	}, append([]string{"qpu", "submit"}, args...)...)
	return req, err
}

func TestQPUSubmitRequest(t *testing.T) {
	dir := t.TempDir()
	bell := filepath.Join(dir, "bell.qasm")
	if err := os.WriteFile(bell, []byte("OPENQASM 3;\nh q[0];\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := func(f func(r *api.QPUSubmitRequest)) api.QPUSubmitRequest {
		r := api.QPUSubmitRequest{Backend: "qpu0", Payload: []byte("OPENQASM 3;\nh q[0];\n"), Key: testQPUKey}
		if f != nil {
			f(&r)
		}
		return r
	}
	for _, tc := range []struct {
		path, jobID, stdin string
		args               []string
		want               api.QPUSubmitRequest
	}{
		{"", "", "", []string{"--backend", "qpu0", bell}, base(nil)},
		{"", "", "", []string{bell, "--backend", "qpu0"}, base(nil)},
		{"", "", "", []string{"-b", "qpu0", bell}, base(nil)},
		{"", "", "", []string{"--backend=qpu0", "--shots", "4000", "--name", "bell pair", bell},
			base(func(r *api.QPUSubmitRequest) { r.Shots, r.Name = 4000, "bell pair" })},
		{"", "", "", []string{bell, "--shots=1", "-b", "qpu0"}, base(func(r *api.QPUSubmitRequest) { r.Shots = 1 })},
		{"", "", "pulse 1 2 3", []string{"--backend", "ion-1", "-"},
			base(func(r *api.QPUSubmitRequest) { r.Backend, r.Payload = "ion-1", []byte("pulse 1 2 3") })},
		{"", "", "x", []string{"-", "--backend", "qpu0"}, base(func(r *api.QPUSubmitRequest) { r.Payload = []byte("x") })},
		{"", "42", "", []string{"--backend", "qpu0", bell}, base(func(r *api.QPUSubmitRequest) { r.Job = 42 })},
		{"root.physics", "42", "", []string{"--backend", "qpu0", bell}, base(func(r *api.QPUSubmitRequest) { r.Job = 42 })},
		// Inside job 42's own instance (batch, alloc), the instance is the session.
		{"root.j42", "42", "", []string{"--backend", "qpu0", bell}, base(nil)},
		{"root.physics.j42", "042", "", []string{"--backend", "qpu0", bell}, base(nil)},
		{"root.j142", "42", "", []string{"--backend", "qpu0", bell}, base(func(r *api.QPUSubmitRequest) { r.Job = 42 })},
		{"", "", strings.Repeat("x", api.MaxQPUPayload), []string{"--backend", "qpu0", "-"},
			base(func(r *api.QPUSubmitRequest) { r.Payload = []byte(strings.Repeat("x", api.MaxQPUPayload)) })},
	} {
		path := "root"
		if tc.path != "" {
			path = tc.path
		}
		got, err := parseQPUSubmitAt(t, path, tc.jobID, tc.stdin, tc.args...)
		if err != nil {
			t.Errorf("qpu submit %q: %v", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("qpu submit %q:\n got %+v\nwant %+v", tc.args, got, tc.want)
		}
	}
}

func TestQPUSubmitErrors(t *testing.T) {
	dir := t.TempDir()
	bell := filepath.Join(dir, "bell.qasm")
	empty := filepath.Join(dir, "empty.qasm")
	big := filepath.Join(dir, "big.qasm")
	for name, data := range map[string]string{bell: "h q[0];", empty: "", big: strings.Repeat("x", api.MaxQPUPayload+1)} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		jobID, stdin string
		args         []string
		msg          []string // all in the error
	}{
		{"", "", []string{bell}, []string{"--backend", "say which", "qpu status"}},
		{"", "", []string{"--backend", "", bell}, []string{"--backend", "empty"}},
		{"", "", []string{"--backend", "QPU0", bell}, []string{"--backend", `"QPU0"`, "not a QPU backend name"}},
		{"", "", []string{"-b", "qpu0", "--shots", "0", bell}, []string{"--shots", "1 to 10000000"}},
		{"", "", []string{"-b", "qpu0", "--shots", "-5", bell}, []string{"--shots"}},
		{"", "", []string{"-b", "qpu0", "--shots", "10000001", bell}, []string{"--shots", "1 to 10000000"}},
		{"", "", []string{"-b", "qpu0", "--shots", "many", bell}, []string{"shots"}},
		{"", "", []string{"-b", "qpu0", "--name", strings.Repeat("n", 129), bell}, []string{"--name", "at most 128"}},
		{"x1", "", []string{"-b", "qpu0", bell}, []string{"$STRATA_JOBID", `"x1"`, "unset it"}},
		{"0", "", []string{"-b", "qpu0", bell}, []string{"$STRATA_JOBID", "start at 1"}},
		{"", "", []string{"-b", "qpu0"}, []string{"one payload file", "got 0"}},
		{"", "", []string{"-b", "qpu0", bell, bell}, []string{"one payload file", "got 2"}},
		{"", "", []string{"-b", "qpu0", filepath.Join(dir, "nope.qasm")}, []string{"cannot read the payload", "nope.qasm", "no such file"}},
		{"", "", []string{"-b", "qpu0", dir}, []string{"is a directory"}},
		{"", "", []string{"-b", "qpu0", empty}, []string{"empty.qasm", "is empty"}},
		{"", "", []string{"-b", "qpu0", "-"}, []string{"stdin", "is empty"}},
		{"", "", []string{"-b", "qpu0", big}, []string{"big.qasm", "larger than 262144 bytes"}},
		{"", strings.Repeat("x", api.MaxQPUPayload+1), []string{"-b", "qpu0", "-"}, []string{"stdin", "larger than"}},
		{"", "", []string{"-b", "qpu0", "--bogus", bell}, []string{"bogus"}},
	} {
		_, err := parseQPUSubmit(t, tc.jobID, tc.stdin, tc.args...)
		if err == nil {
			t.Errorf("qpu submit %q: no error", tc.args)
			continue
		}
		if exitCode(err) != 2 {
			t.Errorf("qpu submit %q: exit code %d, want 2 (%v)", tc.args, exitCode(err), err)
		}
		for _, m := range tc.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("qpu submit %q: error %q does not contain %q", tc.args, err, m)
			}
		}
	}
}

func TestNewQPUKey(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		k := newKey()
		if len(k) != 16 || strings.Trim(k, "0123456789abcdef") != "" || seen[k] {
			t.Fatalf("newKey() = %q (seen before: %t)", k, seen[k])
		}
		seen[k] = true
	}
}

// fakeCall is a broker for submitQPU and qpuResult: it records the
// requests and answers each with the next of replies.
type fakeCall struct {
	reqs    []any
	replies []func(resp any) error
}

func (f *fakeCall) call(_ context.Context, _ string, req, resp any) error {
	f.reqs = append(f.reqs, req)
	if len(f.replies) == 0 {
		return api.Errorf(api.CodeInternal, "no more replies")
	}
	r := f.replies[0]
	f.replies = f.replies[1:]
	return r(resp)
}

func replyJob(j api.QPUJob) func(any) error {
	return func(resp any) error { *resp.(*api.QPUJob) = j; return nil }
}

func replyErr(code api.Code) func(any) error {
	return func(any) error { return api.Errorf(code, "%s", code) }
}

func TestQPUResultWait(t *testing.T) {
	queued := api.QPUJob{ID: 7, State: api.QPUQueued}
	done := api.QPUJob{ID: 7, State: api.QPUCompleted, Result: &api.QPUResult{Counts: map[string]int{"00": 1}}}

	// Without --wait: one request, whatever the state.
	f := &fakeCall{replies: []func(any) error{replyJob(queued)}}
	j, err := qpuResult(context.Background(), f.call, 7, false, 0)
	if err != nil || j.State != api.QPUQueued || !reflect.DeepEqual(f.reqs, []any{api.QPUResultRequest{ID: 7}}) {
		t.Errorf("qpuResult(no wait) = %+v, %v; sent %+v", j, err, f.reqs)
	}

	// With --wait: again until it has ended, each request waiting at most
	// 60 s; a round without a reply is asked again.
	f = &fakeCall{replies: []func(any) error{replyJob(queued), replyErr(api.CodeDeadlineExceeded), replyJob(done)}}
	j, err = qpuResult(context.Background(), f.call, 7, true, 0)
	if err != nil || j.State != api.QPUCompleted || len(f.reqs) != 3 {
		t.Fatalf("qpuResult(wait) = %+v, %v after %d requests", j, err, len(f.reqs))
	}
	for _, r := range f.reqs {
		if r != (api.QPUResultRequest{ID: 7, Wait: true, TimeoutMS: 60000}) {
			t.Errorf("sent %+v", r)
		}
	}

	// With --timeout: no request waits past it, and the job is returned
	// as it is when it passes.
	f = &fakeCall{replies: slices.Repeat([]func(any) error{replyJob(queued)}, 100)}
	start := time.Now()
	j, err = qpuResult(context.Background(), f.call, 7, true, 500*time.Millisecond)
	if el := time.Since(start); err != nil || j.State != api.QPUQueued || el < 500*time.Millisecond || el > 5*time.Second {
		t.Errorf("qpuResult(wait, 500ms) = %+v, %v after %v", j, err, el)
	}
	for _, r := range f.reqs {
		if r := r.(api.QPUResultRequest); !r.Wait || r.TimeoutMS < 1 || r.TimeoutMS > 500 {
			t.Errorf("sent %+v with --timeout 500ms", r)
		}
	}
	if err := qpuOutcome(j, true, 500*time.Millisecond); exitCode(err) != 1 || !strings.Contains(err.Error(), "still queued after --timeout 0.5s") {
		t.Errorf("qpuOutcome = %v", err)
	}

	// Other errors end the wait.
	f = &fakeCall{replies: []func(any) error{replyErr(api.CodeNotFound)}}
	if _, err := qpuResult(context.Background(), f.call, 7, true, 0); !isCode(err, api.CodeNotFound) {
		t.Errorf("qpuResult = %v; want not_found", err)
	}
}

func TestQPUOutcome(t *testing.T) {
	for _, tc := range []struct {
		j    api.QPUJob
		wait bool
		want string // "" for no error
	}{
		{api.QPUJob{ID: 3, State: api.QPUCompleted}, false, ""},
		{api.QPUJob{ID: 3, State: api.QPUFailed, Reason: "executor lost twice"}, false, "QPU job 3 failed: executor lost twice"},
		{api.QPUJob{ID: 3, State: api.QPUFailed}, true, "QPU job 3 failed"},
		{api.QPUJob{ID: 3, State: api.QPUCancelled, Reason: "session revoked:\nmaintenance"}, false, "QPU job 3 was cancelled: session revoked: maintenance"},
		{api.QPUJob{ID: 3, State: api.QPUQueued, Reason: "behind 2 QPU jobs"}, false, "QPU job 3 has no result yet: it is queued: behind 2 QPU jobs; add --wait"},
		{api.QPUJob{ID: 3, State: api.QPURunning}, false, "it is running; add --wait"},
	} {
		err := qpuOutcome(tc.j, tc.wait, time.Minute)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("qpuOutcome(%+v) = %v", tc.j, err)
		case tc.want != "" && (err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("qpuOutcome(%+v) = %v; want exit 1 with %q", tc.j, err, tc.want)
		}
	}
}

func TestQPUResultFlags(t *testing.T) {
	for _, tc := range []struct {
		f    qpuResultFlags
		want time.Duration
		err  string
	}{
		{qpuResultFlags{}, 0, ""},
		{qpuResultFlags{Wait: true}, 0, ""},
		{qpuResultFlags{Wait: true, Timeout: "90s", TimeoutSet: true}, 90 * time.Second, ""},
		{qpuResultFlags{Wait: true, Timeout: "1h30m", TimeoutSet: true}, 90 * time.Minute, ""},
		{qpuResultFlags{Wait: true, Timeout: "500ms", TimeoutSet: true}, 500 * time.Millisecond, ""},
		{qpuResultFlags{Timeout: "1m", TimeoutSet: true}, 0, "goes with --wait"},
		{qpuResultFlags{Wait: true, Timeout: "0", TimeoutSet: true}, 0, "positive"},
		{qpuResultFlags{Wait: true, Timeout: "", TimeoutSet: true}, 0, "--timeout"},
		{qpuResultFlags{Wait: true, Timeout: "soon", TimeoutSet: true}, 0, `--timeout: `},
		{qpuResultFlags{Wait: true, Timeout: "-5s", TimeoutSet: true}, 0, "--timeout"},
	} {
		got, err := tc.f.timeout()
		if tc.err != "" {
			if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: timeout() = %v, %v; want a usage error with %q", tc.f, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%+v: timeout() = %v, %v; want %v", tc.f, got, err, tc.want)
		}
	}
}

func TestQPUMaintRequest(t *testing.T) {
	parse := func(args ...string) (api.QPUMaintRequest, error) {
		var req api.QPUMaintRequest
		err := parseCommand(t, qpuCommand(), "maint", func(c *cli.Context) error {
			var err error
			req, err = qpuMaintRequest(c.Args().Slice(), c.String("reason"), c.IsSet("reason"))
			return err
		}, append([]string{"qpu", "maint"}, args...)...)
		return req, err
	}
	for _, tc := range []struct {
		args []string
		want api.QPUMaintRequest
		err  string
	}{
		{[]string{"qpu0", "on"}, api.QPUMaintRequest{Backend: "qpu0", On: true}, ""},
		{[]string{"qpu0", "ON", "--reason", "calibration"}, api.QPUMaintRequest{Backend: "qpu0", On: true, Reason: "calibration"}, ""},
		{[]string{"--reason", "cooling down", "qpu0", "on"}, api.QPUMaintRequest{Backend: "qpu0", On: true, Reason: "cooling down"}, ""},
		{[]string{"qpu0", "off"}, api.QPUMaintRequest{Backend: "qpu0"}, ""},
		{[]string{"qpu0", "Off"}, api.QPUMaintRequest{Backend: "qpu0"}, ""},
		{[]string{"qpu0", "of"}, api.QPUMaintRequest{}, `"of" is neither on nor off`},
		{[]string{"qpu0", "true"}, api.QPUMaintRequest{}, "neither on nor off"},
		{[]string{"qpu0"}, api.QPUMaintRequest{}, "takes a backend name and on or off"},
		{[]string{"on"}, api.QPUMaintRequest{}, "takes a backend name and on or off"},
		{[]string{"qpu0", "on", "now"}, api.QPUMaintRequest{}, "got 3 arguments"},
		{[]string{"Qpu0", "on"}, api.QPUMaintRequest{}, "not a QPU backend name"},
		{[]string{"qpu0", "off", "--reason", "done"}, api.QPUMaintRequest{}, "--reason: goes with on"},
		{[]string{"qpu0", "on", "--reason", " "}, api.QPUMaintRequest{}, "--reason: empty"},
		{[]string{"qpu0", "on", "--reason", strings.Repeat("r", 257)}, api.QPUMaintRequest{}, "at most 256"},
	} {
		got, err := parse(tc.args...)
		if tc.err != "" {
			if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("qpu maint %q = %v; want a usage error with %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("qpu maint %q = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
}

func TestQPURevokeRequest(t *testing.T) {
	parse := func(args ...string) (api.QPURevokeRequest, error) {
		var req api.QPURevokeRequest
		err := parseCommand(t, qpuCommand(), "revoke", func(c *cli.Context) error {
			var err error
			req, err = qpuRevokeRequest(c.Args().Slice(), c.String("backend"), c.IsSet("backend"), c.String("reason"))
			return err
		}, append([]string{"qpu", "revoke"}, args...)...)
		return req, err
	}
	for _, tc := range []struct {
		args []string
		want api.QPURevokeRequest
		err  string
	}{
		{[]string{"root.physics"}, api.QPURevokeRequest{Session: "root.physics"}, ""},
		{[]string{"root.physics", "--backend", "qpu0", "--reason", "over budget"}, api.QPURevokeRequest{Session: "root.physics", Backend: "qpu0", Reason: "over budget"}, ""},
		{[]string{"-b", "qpu0", "root/12"}, api.QPURevokeRequest{Session: "root/12", Backend: "qpu0"}, ""},
		{[]string{}, api.QPURevokeRequest{}, "takes one session"},
		{[]string{"a", "b"}, api.QPURevokeRequest{}, "got 2 arguments"},
		{[]string{""}, api.QPURevokeRequest{}, "empty session"},
		{[]string{"root physics"}, api.QPURevokeRequest{}, "not a session"},
		{[]string{"root.*"}, api.QPURevokeRequest{}, "wildcards"},
		{[]string{"root.x", "--backend", "Q!"}, api.QPURevokeRequest{}, "-b/--backend"},
		{[]string{"root.x", "--reason", strings.Repeat("r", 257)}, api.QPURevokeRequest{}, "--reason"},
	} {
		got, err := parse(tc.args...)
		if tc.err != "" {
			if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("qpu revoke %q = %v; want a usage error with %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("qpu revoke %q = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
}

func TestQPUAcctRequest(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     api.QPUAcctRequest
		err      string
	}{
		{"", "", api.QPUAcctRequest{}, ""},
		{"2026-12-01", "", api.QPUAcctRequest{From: utc("2026-12-01T00:00:00Z")}, ""},
		{"-24h", "now", api.QPUAcctRequest{From: testNow.Add(-24 * time.Hour), To: testNow}, ""},
		{"now-7d", "2026-12-03T17:00:00Z", api.QPUAcctRequest{From: testNow.Add(-7 * 24 * time.Hour), To: utc("2026-12-03T17:00:00Z")}, ""},
		{"", "+1.5s", api.QPUAcctRequest{To: testNow.Add(time.Second)}, ""},
		{"yesterday", "", api.QPUAcctRequest{}, "--from"},
		{"", "25:00", api.QPUAcctRequest{}, "--to"},
		{"now", "-1h", api.QPUAcctRequest{}, "is not after --from"},
		{"now", "now", api.QPUAcctRequest{}, "is not after --from"},
	} {
		got, err := qpuAcctRequest(tc.from, tc.to, testNow)
		if tc.err != "" {
			if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("qpuAcctRequest(%q, %q) = %v; want a usage error with %q", tc.from, tc.to, err, tc.err)
			}
			continue
		}
		if err != nil || !got.From.Equal(tc.want.From) || !got.To.Equal(tc.want.To) {
			t.Errorf("qpuAcctRequest(%q, %q) = %+v, %v; want %+v", tc.from, tc.to, got, err, tc.want)
		}
	}
}

func TestParseQPUJobID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		err  string
	}{
		{"1", 1, ""},
		{"007", 7, ""},
		{"18446744073709551615", 1<<64 - 1, ""},
		{"", 0, "empty QPU job ID"},
		{"0", 0, "start at 1"},
		{"18446744073709551616", 0, "too large"},
		{"-1", 0, "not a QPU job ID"},
		{"+1", 0, "not a QPU job ID"},
		{"12a", 0, "'strata qpu jobs'"},
		{" 1", 0, "not a QPU job ID"},
	} {
		got, err := parseQPUJobID(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseQPUJobID(%q) = %d, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseQPUJobID(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// The qpu commands refuse bad arguments with exit code 2 before they dial
// (there is no broker to dial here).
func TestQPUUsageErrorsBeforeDial(t *testing.T) {
	t.Setenv(api.EnvURI, "strata://127.0.0.1:1/root")
	t.Setenv(api.EnvCreds, "/nonexistent/creds")
	t.Setenv("STRATA_JOBID", "")
	dir := t.TempDir()
	for _, args := range [][]string{
		{"qpu", "frob"},
		{"qpu", "status", "x"},
		{"qpu", "status", "--bogus"},
		{"qpu", "slots"},
		{"qpu", "slots", "Bad!"},
		{"qpu", "slots", "a", "b"},
		{"qpu", "maint", "qpu0"},
		{"qpu", "maint", "qpu0", "onn"},
		{"qpu", "maint", "qpu0", "off", "--reason", "x"},
		{"qpu", "submit", filepath.Join(dir, "x.qasm")},
		{"qpu", "submit", "--backend", "qpu0"},
		{"qpu", "submit", "--backend", "qpu0", filepath.Join(dir, "missing.qasm")},
		{"qpu", "submit", "--backend", "qpu0", "-"}, // stdin is empty here
		{"qpu", "submit", "--backend", "qpu0", "--shots", "0", "-"},
		{"qpu", "jobs", "x"},
		{"qpu", "jobs", "--backend", "Q"},
		{"qpu", "show"},
		{"qpu", "show", "x"},
		{"qpu", "show", "0"},
		{"qpu", "cancel", "1", "2"},
		{"qpu", "result", "abc"},
		{"qpu", "result", "1", "--timeout", "1m"},
		{"qpu", "result", "1", "--wait", "--timeout", "soon"},
		{"qpu", "revoke"},
		{"qpu", "revoke", "a b"},
		{"qpu", "acct", "--from", "yesterday"},
		{"qpu", "acct", "x"},
		{"user", "add", "exec1", "--executor", "--admin", "-o", filepath.Join(dir, "e.creds")},
	} {
		app := newApp()
		app.Writer, app.ErrWriter, app.Reader = io.Discard, io.Discard, strings.NewReader("")
		err := app.Run(permuteArgs(app, append([]string{"strata"}, args...)))
		if err == nil || exitCode(err) != 2 {
			t.Errorf("strata %q = %v (exit %d); want a usage error, exit 2", args, err, exitCode(err))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "e.creds")); err == nil {
		t.Errorf("user add --executor --admin created the credentials file")
	}
}

func TestPermuteArgsQPU(t *testing.T) {
	app := newApp()
	for _, tc := range []struct{ in, want string }{
		{"qpu show 7 --json", "qpu show --json 7"},
		{"qpu submit bell.qasm --backend qpu0 --shots 100", "qpu submit --backend qpu0 --shots 100 bell.qasm"},
		{"qpu submit - -b qpu0", "qpu submit -b qpu0 -- -"},
		{"qpu result 7 --wait --timeout 10m --json", "qpu result --wait --timeout 10m --json 7"},
		{"qpu maint qpu0 on --reason calibration", "qpu maint --reason calibration qpu0 on"},
		{"qpu slots qpu0 --json", "qpu slots --json qpu0"},
	} {
		got := permuteArgs(app, append([]string{"strata"}, splitArgs(tc.in)...))[1:]
		if want := splitArgs(tc.want); !slices.Equal(got, want) {
			t.Errorf("permuteArgs(%q) = %q; want %q", tc.in, got, want)
		}
	}
}

// Output.

func TestPrintQPUStatus(t *testing.T) {
	bs := []api.QPUBackend{
		{Name: "ion", Total: 4, Used: 0, Available: 4, Accessible: false, Executors: nil, Running: nil},
		{Name: "qpu0", Total: 8, Used: 3, Available: 5, Reserved: 4, Accessible: true, Executors: []string{"exec-a", "exec-b"}, Queued: 12, Running: []uint64{41}, Concurrency: 1},
		{Name: "qpu1", Total: 2, Used: 2, Available: 0, Maint: true, MaintReason: "calibration\nuntil 17:00", Executors: []string{"exec-c"}, Queued: 3},
		{Name: "qpu2", Total: 2, Maint: true, Executors: []string{"exec-d"}},
		{Name: "qpu3", Total: 1, Accessible: false, Executors: []string{"exec-e"}, Running: []uint64{5, 6}},
	}
	var b bytes.Buffer
	printQPUStatus(&b, bs)
	want := alignWant("" +
		"BACKEND  TOTAL  USED  AVAILABLE  RESERVED  ACCESSIBLE  EXECUTORS  QUEUED  RUNNING\n" +
		"ion  4  0  4  0  no (no executor)  -  0  -\n" +
		"qpu0  8  3  5  4  yes  exec-a,exec-b  12  41\n" +
		"qpu1  2  2  0  0  no (maintenance: calibration until 17:00)  exec-c  3  -\n" +
		"qpu2  2  0  0  0  no (maintenance)  exec-d  0  -\n" +
		"qpu3  1  0  0  0  no  exec-e  0  5,6\n")
	if got := b.String(); got != want {
		t.Errorf("printQPUStatus:\n%s\nwant:\n%s", got, want)
	}
	b.Reset()
	printQPUStatus(&b, nil)
	if got := b.String(); !strings.Contains(got, "no QPU backends") || !strings.Contains(got, "--qpu NAME:SLOTS") {
		t.Errorf("printQPUStatus(nil) = %q", got)
	}
}

func TestPrintQPUSlots(t *testing.T) {
	s := api.QPUSlots{Total: 8, Used: 3, Available: 5}
	var b bytes.Buffer
	if err := printQPUSlots(&b, "qpu0", s, true); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `{"total":8,"used":3,"available":5}`+"\n"; got != want {
		t.Errorf("printQPUSlots(json) = %q; want %q", got, want)
	}
	var back map[string]any
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back) != 3 {
		t.Errorf("slots JSON %q: %v, %d keys; want exactly total, used, available", b.String(), err, len(back))
	}
	b.Reset()
	printQPUSlots(&b, "qpu0", api.QPUSlots{}, true)
	if got, want := b.String(), `{"total":0,"used":0,"available":0}`+"\n"; got != want {
		t.Errorf("printQPUSlots(json, zero) = %q; want %q (zeros written out)", got, want)
	}
	b.Reset()
	printQPUSlots(&b, "qpu0", s, false)
	if got, want := b.String(), "qpu0: 8 slots, 3 used, 5 available\n"; got != want {
		t.Errorf("printQPUSlots = %q; want %q", got, want)
	}
}

func TestPrintQPUMaint(t *testing.T) {
	for _, tc := range []struct {
		b    api.QPUBackend
		want string
	}{
		{api.QPUBackend{Name: "qpu0", Maint: true, MaintReason: "calibration", Queued: 4}, "qpu0 is in maintenance: it runs no QPU jobs; 4 stay queued\n"},
		{api.QPUBackend{Name: "qpu0", Accessible: true, Executors: []string{"e"}}, "qpu0 is in service; accessible: yes\n"},
		{api.QPUBackend{Name: "qpu0"}, "qpu0 is in service; accessible: no (no executor)\n"},
	} {
		var b bytes.Buffer
		printQPUMaint(&b, tc.b)
		if got := b.String(); got != tc.want {
			t.Errorf("printQPUMaint(%+v) = %q; want %q", tc.b, got, tc.want)
		}
	}
}

func TestPrintQPUJobs(t *testing.T) {
	jobs := []api.QPUJob{
		{ID: 1, Name: "bell", User: "alice", Session: "root.physics", Backend: "qpu0", Shots: 1000, State: api.QPUCompleted,
			Start: testNow, End: testNow.Add(time.Second), ExecMS: 1234},
		{ID: 2, User: "alice", Session: "root/12", Backend: "qpu0", Shots: 100, State: api.QPURunning, Start: testNow},
		{ID: 3, Name: "ghz\t5", User: "bob", Session: "root.b", Backend: "ion", Shots: 10, State: api.QPUQueued, Reason: "behind 2 QPU jobs\nof root.physics"},
		{ID: 4, User: "bob", Session: "root.b", Backend: "ion", Shots: 10, State: api.QPUFailed, Start: testNow, ExecMS: 250, Reason: "executor lost twice"},
	}
	var b bytes.Buffer
	printQPUJobs(&b, jobs)
	want := alignWant("" +
		"ID  NAME  USER  SESSION  BACKEND  SHOTS  STATE  EXEC  REASON\n" +
		"1  bell  alice  root.physics  qpu0  1000  completed  1.234s  -\n" +
		"2  -  alice  root/12  qpu0  100  running  0s  -\n" +
		"3  ghz 5  bob  root.b  ion  10  queued  -  behind 2 QPU jobs of root.physics\n" +
		"4  -  bob  root.b  ion  10  failed  250ms  executor lost twice\n")
	if got := b.String(); got != want {
		t.Errorf("printQPUJobs:\n%s\nwant:\n%s", got, want)
	}
}

func TestPrintQPUJob(t *testing.T) {
	j := api.QPUJob{ID: 9, Name: "bell", User: "alice", Session: "root.physics", Backend: "qpu0", Shots: 1000,
		State: api.QPUCompleted, Reason: "completed", Submit: testNow, Start: testNow.Add(time.Second), End: testNow.Add(3 * time.Second),
		ExecMS: 2000, Executor: "exec-a", Attempts: 2, Bytes: 321,
		Result: &api.QPUResult{Counts: map[string]int{"00": 498, "11": 502}}}
	var b bytes.Buffer
	printQPUJob(&b, j)
	got := b.String()
	for _, want := range []string{
		"id:", " 9\n", "name:", "bell", "user:", "alice", "session:", "root.physics", "backend:", "qpu0",
		"shots:", "1000", "state:", "completed", "reason:", "submit:", fmtTime(testNow), "start:", fmtTime(testNow.Add(time.Second)),
		"end:", "exec:", "2s", "executor:", "exec-a", "attempts:", " 2\n", "payload_bytes:", "321",
		"result:", "2 bitstrings over 1000 shots (see 'strata qpu result 9')",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("printQPUJob output lacks %q:\n%s", want, got)
		}
	}
	b.Reset()
	printQPUJob(&b, api.QPUJob{ID: 10, State: api.QPUQueued})
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if k, v, _ := strings.Cut(line, ":"); k != "id" && k != "shots" && k != "state" && k != "attempts" && k != "payload_bytes" && strings.TrimSpace(v) != "-" {
			t.Errorf("printQPUJob(empty): %q; want -", line)
		}
	}
}

func TestPrintCounts(t *testing.T) {
	var b bytes.Buffer
	printCounts(&b, &api.QPUResult{Counts: map[string]int{"00": 400, "11": 400, "01": 100, "10": 99, "111": 1}})
	want := alignWant("" +
		"BITSTRING  COUNT  FRACTION\n" +
		"00  400  0.4000\n" +
		"11  400  0.4000\n" +
		"01  100  0.1000\n" +
		"10  99  0.0990\n" +
		"111  1  0.0010\n")
	if got := b.String(); got != want {
		t.Errorf("printCounts:\n%s\nwant:\n%s", got, want)
	}
	for _, r := range []*api.QPUResult{nil, {}} {
		b.Reset()
		printCounts(&b, r)
		if !strings.Contains(b.String(), "no counts") {
			t.Errorf("printCounts(%v) = %q", r, b.String())
		}
	}
}

func TestSortedCounts(t *testing.T) {
	got := sortedCounts(map[string]int{"b": 2, "a": 2, "c": 3, "d": 1})
	want := []qpuCount{{"c", 3}, {"a", 2}, {"b", 2}, {"d", 1}}
	if !slices.Equal(got, want) {
		t.Errorf("sortedCounts = %v; want %v", got, want)
	}
}

func TestPrintQPURevoked(t *testing.T) {
	var b bytes.Buffer
	printQPURevoked(&b, api.QPUSession{ID: "root.physics", Backend: "qpu0", Slots: 2, Reason: "over budget"})
	if got, want := b.String(), "session root.physics revoked on qpu0 (2 slots freed): over budget\n"; got != want {
		t.Errorf("printQPURevoked = %q; want %q", got, want)
	}
	b.Reset()
	printQPURevoked(&b, api.QPUSession{ID: "root/12"})
	if got, want := b.String(), "session root/12 revoked\n"; got != want {
		t.Errorf("printQPURevoked = %q; want %q", got, want)
	}
}

func TestPrintQPUAcct(t *testing.T) {
	rep := api.QPUAcctReply{
		From: utc("2026-12-01T00:00:00Z"), To: utc("2026-12-02T00:00:00Z"),
		Users: []api.QPUAcctRow{
			{User: "alice", QPUSecs: 12.5, Jobs: map[string]int{"completed": 10, "failed": 1}, SlotHours: 4},
			{User: "bob", QPUSecs: 0.0004, Jobs: map[string]int{"cancelled": 2, "lost": 1}, SlotHours: 0.001},
		},
		Instances: []api.QPUAcctRow{
			{Instance: "root.physics", User: "alice", QPUSecs: 12.5, Jobs: map[string]int{"completed": 10, "failed": 1}, SlotHours: 4},
		},
	}
	var b bytes.Buffer
	printQPUAcct(&b, rep)
	want := "QPU use from " + fmtTime(rep.From) + " to " + fmtTime(rep.To) + "\n" +
		"\nper user:\n" +
		alignWant(""+
			"  USER  QPU-SECONDS  COMPLETED  FAILED  CANCELLED  LOST  SLOT-HOURS\n"+
			"  alice  12.500  10  1  0  0  4.00\n"+
			"  bob  0.000  0  0  2  1  <0.01\n") +
		"\nper instance:\n" +
		alignWant(""+
			"  INSTANCE  USER  QPU-SECONDS  COMPLETED  FAILED  CANCELLED  LOST  SLOT-HOURS\n"+
			"  root.physics  alice  12.500  10  1  0  0  4.00\n")
	if got := b.String(); got != alignIndented(want) {
		t.Errorf("printQPUAcct:\n%s\nwant:\n%s", got, alignIndented(want))
	}
	b.Reset()
	printQPUAcct(&b, api.QPUAcctReply{})
	if got, want := b.String(), "QPU use from the start to now\n\nper user:\n  none\n\nper instance:\n  none\n"; got != want {
		t.Errorf("printQPUAcct(empty) = %q; want %q", got, want)
	}
}

// alignIndented puts back the two-blank indent that alignWant drops from
// a table's first column.
func alignIndented(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if line != "" && !strings.HasPrefix(line, "  ") && !strings.HasSuffix(line, ":") && !strings.HasPrefix(line, "QPU use") {
			line = "  " + line
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// Fuzz tests of the parsers.

func FuzzParseQPUJobID(f *testing.F) {
	for _, s := range []string{"1", "007", "0", "", "-1", "+1", "1e3", " 1", "18446744073709551615", "18446744073709551616", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := parseQPUJobID(s)
		if err != nil {
			if id != 0 || !strings.Contains(err.Error(), "QPU job ID") {
				t.Fatalf("parseQPUJobID(%q) = %d, %v", s, id, err)
			}
			return
		}
		n, perr := strconv.ParseUint(s, 10, 64)
		if perr != nil || n != id || id == 0 || strings.TrimLeft(s, "0123456789") != "" {
			t.Fatalf("parseQPUJobID(%q) = %d; strconv says %d, %v", s, id, n, perr)
		}
	})
}

func FuzzParseOnOff(f *testing.F) {
	for _, s := range []string{"on", "off", "ON", "Off", "of", "", "true", "o\u0307n", "\u212aon"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		on, err := parseOnOff(s)
		switch l := strings.ToLower(s); {
		case l == "on" && (err != nil || !on), l == "off" && (err != nil || on):
			t.Fatalf("parseOnOff(%q) = %t, %v", s, on, err)
		case l != "on" && l != "off" && (err == nil || !strings.Contains(err.Error(), "neither on nor off")):
			t.Fatalf("parseOnOff(%q) = %t, %v; want an error", s, on, err)
		}
	})
}

func FuzzParseSessionArg(f *testing.F) {
	for _, s := range []string{"root.physics", "root/12", "", "a b", "root.*", "root.>", "\x00", strings.Repeat("a", 257)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := parseSessionArg(s)
		if err != nil {
			return
		}
		if s == "" || len(s) > 256 || strings.ContainsAny(s, " \t\n\x00*>") {
			t.Fatalf("parseSessionArg(%q) accepted it", s)
		}
	})
}

// FuzzQPUSubmitFlags: whatever --backend, --name, --shots, $STRATA_JOBID
// and the payload hold, qpu submit either refuses with a usage error or
// sends a request the broker's own check accepts, carrying them as given.
func FuzzQPUSubmitFlags(f *testing.F) {
	f.Add("qpu0", "bell", 1000, true, "", []byte("h q[0];"))
	f.Add("QPU", "", 0, true, "12", []byte{})
	f.Add("qpu0", "", 0, false, "x", []byte("x"))
	f.Add("", "n", -1, true, "0", []byte("x"))
	f.Fuzz(func(t *testing.T, backend, name string, shots int, shotsSet bool, jobID string, payload []byte) {
		fl := qpuSubmitFlags{Backend: backend, BackendSet: true, Shots: shots, ShotsSet: shotsSet, Name: name,
			Args: []string{"-"}, JobID: jobID, Key: testQPUKey}
		r, err := fl.request(bytes.NewReader(payload))
		if err != nil {
			if exitCode(err) != 2 || err.Error() == "" {
				t.Fatalf("request(%q, %q, %d, %q) = %v (exit %d)", backend, name, shots, jobID, err, exitCode(err))
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("sent a request the broker refuses: %v", err)
		}
		if r.Backend != backend || r.Name != name || !bytes.Equal(r.Payload, payload) || r.Key != testQPUKey ||
			(shotsSet && r.Shots != shots) || (!shotsSet && r.Shots != 0) || (jobID == "" && r.Job != 0) || (jobID != "" && r.Job.String() != strings.TrimLeft(jobID, "0")) {
			t.Fatalf("flags %+v, payload %q sent as %+v", fl, payload, r)
		}
	})
}
