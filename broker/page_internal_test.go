package broker

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
)

// TestEncodedList: a list reply made of items encoded one by one is the
// JSON that json.Marshal writes for the reply types, byte for byte, with
// and without a next cursor, empty or not, with characters that
// json.Marshal escapes.
func TestEncodedList(t *testing.T) {
	at := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	jobs := []api.Job{
		{ID: 1, User: "alice", Name: "a<b>&c", Command: []string{"sh", "-c", "echo \"hi\"\n\u2028"}, State: api.JobPending, SubmitTime: at},
		{ID: 22, User: "bob", NNodes: 4, Nodes: "n[1-4]", State: api.JobRunning, StartTime: at.Add(time.Minute)},
	}
	resvs := []api.Resv{{Name: "physics", Start: at, End: at.Add(time.Hour), Nodes: "n1", NNodes: 1, Users: []string{"alice"}}}
	qjobs := []api.QPUJob{
		{ID: 3, Name: "bell<1>", User: "alice", Session: "root.7", Backend: "qpu0", Shots: 10, State: api.QPUCompleted, Submit: at, End: at.Add(time.Second),
			Result: &api.QPUResult{Counts: map[string]int{"00": 6, "11": 4}, Log: "ok\n"}},
		{ID: 4, User: "bob", Session: "root", Backend: "qpu1", State: api.QPUQueued, Submit: at},
	}
	for _, tc := range []struct {
		name  string
		field string
		items []any
		want  any
	}{
		{"jobs", "jobs", anys(jobs), api.JobsReply{Jobs: jobs}},
		{"jobs next", "jobs", anys(jobs), api.JobsReply{Jobs: jobs, Next: "22"}},
		{"no jobs", "jobs", nil, api.JobsReply{Jobs: []api.Job{}}},
		{"resvs next", "resvs", anys(resvs), api.ResvsReply{Resvs: resvs, Next: "1796306400:physics\"<"}},
		{"qpu jobs", "jobs", anys(qjobs), api.QPUJobsReply{Jobs: qjobs}},
		{"qpu jobs next", "jobs", anys(qjobs), api.QPUJobsReply{Jobs: qjobs, Next: "4"}},
		{"no qpu jobs", "jobs", nil, api.QPUJobsReply{Jobs: []api.QPUJob{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, enc, err := fitEncoded(tc.items)
			if err != nil || n != len(tc.items) {
				t.Fatalf("fitEncoded: %d of %d, %v", n, len(tc.items), err)
			}
			var next string
			switch w := tc.want.(type) {
			case api.JobsReply:
				next = w.Next
			case api.ResvsReply:
				next = w.Next
			case api.QPUJobsReply:
				next = w.Next
			}
			want, err := json.Marshal(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if got := encodedList(tc.field, enc, next); string(got) != string(want) {
				t.Errorf("encodedList:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestAcctEncoded: acct's reply, made of its jobs encoded one by one, is
// the JSON that json.Marshal writes for api.AcctReply, byte for byte, with
// and without the reservation of the first page and a next cursor.
func TestAcctEncoded(t *testing.T) {
	at := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	code := 3
	jobs := []api.AcctJob{
		{ID: 1, User: "alice", Name: "a\"b<", State: api.JobCompleted, Instance: "root", NNodes: 2, Nodes: "n[1-2]", SubmitTime: at, StartTime: at, EndTime: at.Add(time.Hour),
			ElapsedS: 3600, NodeHours: 2, Archived: true},
		{ID: 9, User: "bob", State: api.JobFailed, Instance: "root.physics", Resv: "physics", QPU: map[string]int{"qpu0": 2}, SubmitTime: at, EndTime: at,
			ExitCode: &code, QPUSlotHours: 0.25},
	}
	rv := &api.Resv{Name: "physics", Start: at, End: at.Add(time.Hour), Nodes: "n1", NNodes: 1, Users: []string{"alice"}, State: "ended"}
	for _, tc := range []struct {
		name string
		rep  api.AcctReply
	}{
		{"jobs", api.AcctReply{Jobs: jobs}},
		{"none", api.AcctReply{Jobs: []api.AcctJob{}}},
		{"next", api.AcctReply{Jobs: jobs, Next: "l9"}},
		{"resv", api.AcctReply{Jobs: jobs, Resv: rv}},
		{"archived resv, next", api.AcctReply{Jobs: jobs[:1], Next: "a12", Resv: rv, ResvArchived: true}},
		{"no resv, none", api.AcctReply{Jobs: []api.AcctJob{}, Resv: rv, ResvArchived: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, enc, err := fitEncoded(tc.rep.Jobs)
			if err != nil || n != len(tc.rep.Jobs) {
				t.Fatalf("fitEncoded: %d of %d, %v", n, len(tc.rep.Jobs), err)
			}
			got, err := acctEncoded(enc, tc.rep)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(tc.rep)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("acctEncoded:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestFitEncodedPage: fitEncoded stops before the item that would take
// the page past api.MaxPageBytes, keeps at least one item, and returns the
// encodings of the items of the page only.
func TestFitEncodedPage(t *testing.T) {
	big := make([]byte, api.MaxPageBytes/3)
	for i := range big {
		big[i] = 'x'
	}
	items := []string{string(big), string(big), string(big), "small"}
	n, enc, err := fitEncoded(items)
	if err != nil || n != 2 || len(enc) != 2 {
		t.Fatalf("three items of a third of the page each: %d fit, %d encoded, %v; want 2", n, len(enc), err)
	}
	huge := []string{string(big) + string(big) + string(big) + string(big), "small"}
	if n, enc, err := fitEncoded(huge); err != nil || n != 1 || len(enc) != 1 {
		t.Fatalf("one item over the page: %d fit, %d encoded, %v; want 1", n, len(enc), err)
	}
	if _, _, err := fitEncoded([]any{func() {}}); err == nil {
		t.Fatal("an item that cannot be encoded: no error")
	}
}

func anys[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
