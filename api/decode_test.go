package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDecodeRequest(t *testing.T) {
	for _, tc := range []struct {
		in      string
		wantErr string // substring of the error; "" means success
	}{
		{``, ""},
		{`  `, ""},
		{`{}`, ""},
		{`{"nodes":2,"walltime_s":60,"command":["./sim","-x"],"qpu":{"qpu0":2},"afterok":[3]}`, ""},
		{`{"nodes":2} `, ""},
		{`{"nodes":2,"bogus":1}`, `unknown field "bogus"`},
		{`{"nodes":"two"}`, `field "nodes" must be a number, got string`},
		{`{"command":"./sim"}`, `field "command" must be a list, got string`},
		{`{"qpu":{"qpu0":"x"}}`, `field "qpu" must be a number, got string`},
		{`{"nodes":2}{"nodes":3}`, `unexpected data after the JSON value`},
		{`{"nodes":2} x`, `unexpected data after the JSON value`},
		{`{"nodes":2`, `JSON ends early`},
		{`{"nodes":2,}`, `malformed JSON at byte`},
		{`[1]`, `the request must be an object, got array`},
		{`{"begin":"tomorrow"}`, `invalid request:`},
		{`{"nodes":-1e400}`, `invalid request:`},
	} {
		var req SubmitRequest
		err := DecodeRequest([]byte(tc.in), &req)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("DecodeRequest(%s): %v", tc.in, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("DecodeRequest(%s) = %+v, want an error containing %q", tc.in, req, tc.wantErr)
			continue
		}
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("DecodeRequest(%s): %v is not invalid_argument", tc.in, err)
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("DecodeRequest(%s) = %q, want it to contain %q", tc.in, err, tc.wantErr)
		}
	}
}

// FuzzDecodeRequest checks that DecodeRequest never panics, that every error
// is an invalid_argument, and that what it accepts survives a round trip:
// decode → encode → decode → encode gives the same bytes.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `{"nodes":2,"walltime_s":3600,"command":["a"]}`,
		`{"nodes":8,"walltime_s":60,"name":"x","resv":"physics","begin":"2026-12-03T17:00:00Z","hold":true,` +
			`"afterok":[1],"afterany":[2],"afternotok":[3],"requeue":true,"qpu":{"qpu0":4},"command":["./sim","--x"],` +
			`"cwd":"/home/a","env":{"A":"1"},"stdout":"out.%j","stderr":"err.%j"}`,
		`{"nodes":1}{}`, `{"x":1}`, `{"qpu":{"":0}}`, `"\ud800"`, `{"name":"\xff"}`,
		// Values past the limits (api.Limits).
		`{"nodes":1,"walltime_s":9223372036854775807,"command":["a"]}`,
		`{"nodes":1,"walltime_s":31622401,"command":["a"]}`,
		`{"nodes":1,"command":["a"],"afterok":[18446744073709551615]}`,
		`{"nodes":1,"command":["a"],"begin":"9999-12-31T23:59:59Z"}`,
		`{"nodes":1,"command":["a"],"begin":"0001-01-01T00:00:01Z"}`,
		`{"nodes":1048577,"command":["a"]}`,
		`{"nodes":1,"command":["a"],"qpu":{"qpu0":65537}}`,
		`{"nodes":1,"command":["a"],"env":{"A":"` + strings.Repeat("x", 200) + `"}}`,
	} {
		f.Add([]byte(s))
	}
	small := Limits{MaxWalltime: 24 * time.Hour, MaxEnvBytes: 100}
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		var req SubmitRequest
		if err := DecodeRequest(data, &req); err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("error %v is not invalid_argument", err)
			}
			return
		}
		_ = req.Validate() // must not panic either
		for _, l := range []Limits{{}, small} {
			if err := l.Check(now, &req); err != nil {
				if !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("Check: error %v is not invalid_argument", err)
				}
				continue
			}
			// What passes is within the limits.
			l = l.Normalized()
			env := 0
			for k, v := range req.Env {
				env += len(k) + len(v) + 2
			}
			switch {
			case req.Walltime < 0 || time.Duration(req.Walltime)*time.Second > l.MaxWalltime:
				t.Fatalf("walltime %d passed %+v", req.Walltime, l)
			case env > l.MaxEnvBytes:
				t.Fatalf("environment of %d bytes passed %+v", env, l)
			case req.Nodes > MaxNodes:
				t.Fatalf("nodes %d passed", req.Nodes)
			case !req.Begin.IsZero() && (req.Begin.Unix() < 0 || req.Begin.After(now.Add(MaxAhead))):
				t.Fatalf("begin %v passed", req.Begin)
			}
			for _, d := range req.Dependencies() {
				if d.Job > MaxJobID {
					t.Fatalf("dependency %v passed", d)
				}
			}
		}
		b1, err := json.Marshal(&req)
		if err != nil {
			t.Fatalf("accepted request does not encode: %v", err)
		}
		var again SubmitRequest
		if err := DecodeRequest(b1, &again); err != nil {
			t.Fatalf("re-decoding %s: %v", b1, err)
		}
		b2, _ := json.Marshal(&again)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("round trip changed the request:\n%s\n%s", b1, b2)
		}
	})
}

func TestSubmitValidate(t *testing.T) {
	ok := SubmitRequest{Nodes: 1, Walltime: 60, Command: []string{"true"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(r *SubmitRequest){
		"no nodes":          func(r *SubmitRequest) { r.Nodes = 0 },
		"negative walltime": func(r *SubmitRequest) { r.Walltime = -1 },
		"no command":        func(r *SubmitRequest) { r.Command = nil },
		"empty argv0":       func(r *SubmitRequest) { r.Command = []string{""} },
		"dep on 0":          func(r *SubmitRequest) { r.AfterAny = []JobID{0} },
		"bad qpu":           func(r *SubmitRequest) { r.QPU = map[string]int{"Q P U": 1} },
		"zero slots":        func(r *SubmitRequest) { r.QPU = map[string]int{"qpu0": 0} },
		"bad env":           func(r *SubmitRequest) { r.Env = map[string]string{"A=B": "1"} },
		"bad resv":          func(r *SubmitRequest) { r.Resv = "Physics!" },
		"long name":         func(r *SubmitRequest) { r.Name = strings.Repeat("x", 129) },
		"neg walltime":      func(r *SubmitRequest) { r.Walltime = -5 },
	} {
		r := ok
		mut(&r)
		if err := r.Validate(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: Validate = %v, want invalid_argument", name, err)
		}
	}
	r := SubmitRequest{AfterOK: []JobID{1, 2}, AfterNotOK: []JobID{3}}
	deps := r.Dependencies()
	if len(deps) != 3 || deps[0] != (Dependency{AfterOK, 1}) || deps[2] != (Dependency{AfterNotOK, 3}) {
		t.Errorf("Dependencies = %v", deps)
	}
}

func TestUpdateValidate(t *testing.T) {
	for _, tc := range []struct {
		r  UpdateRequest
		ok bool
	}{
		{UpdateRequest{ID: 1, Resv: "physics"}, true},
		{UpdateRequest{ID: 1, NoResv: true}, true},
		{UpdateRequest{ID: 1, Hold: true}, true},
		{UpdateRequest{ID: 1, Release: true, Walltime: 60}, true},
		{UpdateRequest{ID: 1, Begin: time.Unix(1e9, 0)}, true},
		{UpdateRequest{ID: 1}, false},
		{UpdateRequest{ID: 1, Exclude: new("n[0-1]")}, true},
		{UpdateRequest{ID: 1, Exclude: new("")}, true},
		{UpdateRequest{ID: 1, NodeList: new("n0"), Exclude: new("")}, true},
		{UpdateRequest{ID: 1, NodeList: new("n0"), Exclude: new("n1")}, false},
		{UpdateRequest{Hold: true}, false},
		{UpdateRequest{ID: 1, Resv: "p", NoResv: true}, false},
		{UpdateRequest{ID: 1, Hold: true, Release: true}, false},
		{UpdateRequest{ID: 1, Walltime: -1}, false},
		{UpdateRequest{ID: 1, Nodes: 3}, true},
		{UpdateRequest{ID: 1, Nodes: -1}, false},
		{UpdateRequest{ID: 1, QPU: &map[string]int{"qpu0": 2}}, true},
		{UpdateRequest{ID: 1, QPU: &map[string]int{}}, true},
		{UpdateRequest{ID: 1, QPU: &map[string]int{"qpu0": 0}}, false},
		{UpdateRequest{ID: 1, QPU: &map[string]int{"Bad Name": 1}}, false},
		{UpdateRequest{ID: 1, Name: new("sim-v2")}, true},
		{UpdateRequest{ID: 1, Name: new("")}, false},
		{UpdateRequest{ID: 1, WalltimeDelta: -600}, true},
		{UpdateRequest{ID: 1, WalltimeDelta: 600, Walltime: 60}, false},
	} {
		err := tc.r.Validate()
		if tc.ok != (err == nil) {
			t.Errorf("%+v: Validate = %v", tc.r, err)
		}
	}
}

func TestCancelValidate(t *testing.T) {
	for _, tc := range []struct {
		r  CancelRequest
		ok bool
	}{
		{CancelRequest{ID: 1}, true},
		{CancelRequest{ID: 1, Signal: "USR1"}, true},
		{CancelRequest{ID: 1, Signal: "sigterm"}, true},
		{CancelRequest{ID: 1, Signal: "10"}, true},
		{CancelRequest{ID: 1, Task: new(3), Signal: "USR2"}, true},
		{CancelRequest{ID: 1, Signal: "USR9"}, false},
		{CancelRequest{ID: 1, Signal: "0"}, false},
		{CancelRequest{ID: 1, Signal: "USR1", ExitCode: new(0)}, false},
		{CancelRequest{ID: 1, ExitCode: new(3)}, true},
	} {
		err := tc.r.Validate()
		if tc.ok != (err == nil) {
			t.Errorf("%+v: Validate = %v", tc.r, err)
		}
	}
}

func TestJobJSON(t *testing.T) {
	zero := 0
	j := Job{ID: 42, User: "alice", State: JobCompleted, NNodes: 2, Walltime: 60, ExitCode: &zero,
		SubmitTime: time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":42,"user":"alice","state":"completed","nnodes":2,"walltime_s":60,"submit_time":"2026-12-03T17:00:00Z","exit_code":0}`
	if string(b) != want {
		t.Errorf("Job JSON =\n%s\nwant\n%s", b, want)
	}
	if !JobTimeout.Terminal() || JobRunning.Terminal() || JobState("x").Valid() {
		t.Error("JobState predicates")
	}
}
