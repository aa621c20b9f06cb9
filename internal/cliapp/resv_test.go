package cliapp

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// Flag → request translation of resv, batch and alloc: pure functions,
// driven through the real flag definitions as the app parses them.

func parseResvCreate(t *testing.T, args ...string) ([]api.ResvCreateRequest, error) {
	t.Helper()
	var reqs []api.ResvCreateRequest
	err := parseCommand(t, resvCommand(), "create", func(c *cli.Context) error {
		if err := noArgs(c); err != nil {
			return err
		}
		var err error
		reqs, err = readResvCreateFlags(c).requests(testNow)
		return err
	}, append([]string{"resv", "create"}, args...)...)
	return reqs, err
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestResvCreateRequests(t *testing.T) {
	base := func(f func(r *api.ResvCreateRequest)) api.ResvCreateRequest {
		r := api.ResvCreateRequest{Name: "physics", Start: utc("2026-12-03T17:00:00Z"), End: utc("2026-12-04T01:00:00Z"), Nodes: 64}
		if f != nil {
			f(&r)
		}
		return r
	}
	const win = "--name physics --start 2026-12-03T17:00:00Z --duration 8h"
	for _, tc := range []struct {
		args string
		want []api.ResvCreateRequest
	}{
		{win + " --nodes 64", []api.ResvCreateRequest{base(nil)}},
		// --end instead of --duration; flags in any order.
		{"--nodes 64 --end 2026-12-04T01:00:00Z --start 2026-12-03T17:00:00Z --name physics", []api.ResvCreateRequest{base(nil)}},
		// Relative times are relative to now; starts are whole seconds.
		{"--name physics --start +1h --duration 30m --nodes 2", []api.ResvCreateRequest{{Name: "physics", Start: testNow.Add(time.Hour), End: testNow.Add(90 * time.Minute), Nodes: 2}}},
		{"--name physics --start 17:00 --duration 1d12h --nodes 2", []api.ResvCreateRequest{{Name: "physics", Start: utc("2026-12-02T17:00:00Z"), End: utc("2026-12-04T05:00:00Z"), Nodes: 2}}},
		// now is this very second: the broker takes its own (StartNow).
		{"--name physics --start now --duration 8h --nodes 2", []api.ResvCreateRequest{{Name: "physics", Start: testNow, End: testNow.Add(8 * time.Hour), StartNow: true, Nodes: 2}}},
		{"--name physics --start now+0 --end 2026-12-02T12:00:00Z --nodes 2", []api.ResvCreateRequest{{Name: "physics", Start: testNow, End: utc("2026-12-02T12:00:00Z"), StartNow: true, Nodes: 2}}},
		{"--name physics --start now+1 --duration 8h --nodes 2", []api.ResvCreateRequest{{Name: "physics", Start: testNow.Add(time.Second), End: testNow.Add(8*time.Hour + time.Second), Nodes: 2}}},
		{"--name dat --start now --duration 1h --nodes 2 --every 1d --until now+36hours", []api.ResvCreateRequest{
			{Name: "dat-1", Start: testNow, End: testNow.Add(time.Hour), StartNow: true, Nodes: 2},
			{Name: "dat-2", Start: testNow.Add(24 * time.Hour), End: testNow.Add(25 * time.Hour), Nodes: 2},
		}},
		// Times as people type them.
		{"--name physics --start now+1hour --duration 30m --nodes 2", []api.ResvCreateRequest{{Name: "physics", Start: testNow.Add(time.Hour), End: testNow.Add(90 * time.Minute), Nodes: 2}}},
		{"--name physics --start 'tomorrow 09:00' --duration 8h --nodes 2", []api.ResvCreateRequest{{Name: "physics", Start: utc("2026-12-03T09:00:00Z"), End: utc("2026-12-03T17:00:00Z"), Nodes: 2}}},
		{"--name physics --start tue --end wed --nodes 2", []api.ResvCreateRequest{{Name: "physics", Start: utc("2026-12-08T00:00:00Z"), End: utc("2026-12-09T00:00:00Z"), Nodes: 2}}},
		{"--name physics --start 12/24 --duration 1d --nodes 2", []api.ResvCreateRequest{{Name: "physics", Start: utc("2026-12-24T00:00:00Z"), End: utc("2026-12-25T00:00:00Z"), Nodes: 2}}},
		{win + " --nodelist node[0-63]", []api.ResvCreateRequest{base(func(r *api.ResvCreateRequest) { r.Nodes, r.NodeList = 0, "node[0-63]" })}},
		// Hostlists, --qpu and --users lists keep their commas.
		{win + " --nodelist node[0-3,8] --qpu qpu0:4 --qpu qpu1:1,qpu2:2 --users alice,bob --users ' carol '", []api.ResvCreateRequest{base(func(r *api.ResvCreateRequest) {
			r.Nodes, r.NodeList = 0, "node[0-3,8]"
			r.QPU = map[string]int{"qpu0": 4, "qpu1": 1, "qpu2": 2}
			r.Users = []string{"alice", "bob", "carol"}
		})}},
		// QPU slots alone.
		{win + " --qpu qpu0:4", []api.ResvCreateRequest{base(func(r *api.ResvCreateRequest) { r.Nodes, r.QPU = 0, map[string]int{"qpu0": 4} })}},
		{win + " --nodes 64 --overlap kill --grace 30s --requeue-killed --dry-run --json", []api.ResvCreateRequest{base(func(r *api.ResvCreateRequest) {
			r.Overlap, r.GraceS, r.RequeueKilled, r.DryRun = "kill", 30, true, true
		})}},
		{win + " --nodelist node[0-3] --maint --overlap kill", []api.ResvCreateRequest{base(func(r *api.ResvCreateRequest) {
			r.Nodes, r.NodeList, r.Maint, r.Overlap = 0, "node[0-3]", true, "kill"
		})}},
		{win + " --nodes 64 --overlap drain --grace 0 --grace 1.5s", []api.ResvCreateRequest{base(func(r *api.ResvCreateRequest) { r.Overlap, r.GraceS = "drain", 2 })}},
		// Repetition: NAME-1, NAME-2, ... while the start is before --until.
		{"--name dat --start 2026-12-03T17:00:00Z --duration 8h --nodes 4 --every 7d --until 2026-12-24T00:00:00Z --users alice", []api.ResvCreateRequest{
			{Name: "dat-1", Start: utc("2026-12-03T17:00:00Z"), End: utc("2026-12-04T01:00:00Z"), Nodes: 4, Users: []string{"alice"}},
			{Name: "dat-2", Start: utc("2026-12-10T17:00:00Z"), End: utc("2026-12-11T01:00:00Z"), Nodes: 4, Users: []string{"alice"}},
			{Name: "dat-3", Start: utc("2026-12-17T17:00:00Z"), End: utc("2026-12-18T01:00:00Z"), Nodes: 4, Users: []string{"alice"}},
		}},
		{"--name dat --start 2026-12-03T17:00:00Z --duration 1d --nodes 4 --every 1d --until 2026-12-05T17:00:00Z --dry-run", []api.ResvCreateRequest{
			{Name: "dat-1", Start: utc("2026-12-03T17:00:00Z"), End: utc("2026-12-04T17:00:00Z"), Nodes: 4, DryRun: true},
			{Name: "dat-2", Start: utc("2026-12-04T17:00:00Z"), End: utc("2026-12-05T17:00:00Z"), Nodes: 4, DryRun: true},
		}},
	} {
		got, err := parseResvCreate(t, splitArgs(tc.args)...)
		if err != nil {
			t.Errorf("resv create %s: %v", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("resv create %s:\n got %+v\nwant %+v", tc.args, got, tc.want)
		}
	}
}

// Every bad value is a usage error (exit 2) whose message names the flag,
// found before anything is sent.
func TestResvCreateErrors(t *testing.T) {
	const ok = "--name physics --start 2026-12-03T17:00:00Z --duration 8h --nodes 4"
	for _, tc := range []struct{ args, want string }{
		{"--start 2026-12-03T17:00:00Z --duration 8h --nodes 4", "--name"},
		{"--name Physics! --start 2026-12-03T17:00:00Z --duration 8h --nodes 4", "--name"},
		{"--name a234567890123456789012345678901 --start 2026-12-03T17:00:00Z --duration 1h --nodes 1 --every 1d --until 2027-01-30T00:00:00Z", "--name"},
		{"--name physics --duration 8h --nodes 4", "--start"},
		{"--name physics --start someday --duration 8h --nodes 4", "--start"},
		{"--name physics --start 02/30 --duration 8h --nodes 4", "February has no day 30"},
		{"--name physics --start 2026-12-02T09:59:59Z --duration 8h --nodes 4", "2026-12-02T09:59:59Z is in the past: give now or a later time"},
		{"--name physics --start today --duration 8h --nodes 4", "in the past"},
		{"--name physics --start 2026-12-03T25:00:00Z --duration 8h --nodes 4", "--start"},
		{"--name physics --start 2026-12-01T17:00:00Z --duration 8h --nodes 4", "--start"}, // in the past
		{"--name physics --start 2026-12-03T17:00:00Z --nodes 4", "--duration or --end"},
		{"--name physics --start 2026-12-03T17:00:00Z --duration 8h --end 2026-12-04T01:00:00Z --nodes 4", "--end and --duration"},
		{"--name physics --start 2026-12-03T17:00:00Z --duration soon --nodes 4", "--duration"},
		{"--name physics --start 2026-12-03T17:00:00Z --duration 0 --nodes 4", "--duration"},
		{"--name physics --start 2026-12-03T17:00:00Z --duration -1h --nodes 4", "--duration"},
		{"--name physics --start 2026-12-03T17:00:00Z --end 2026-12-03T16:00:00Z --nodes 4", "--end"}, // before the start
		{"--name physics --start 2026-12-03T17:00:00Z --end 2026-12-03T17:00:00Z --nodes 4", "--end"},
		{"--name physics --start 2026-12-03T17:00:00Z --end someday --nodes 4", "--end"},
		{"--name physics --start 2026-12-03T17:00:00Z --duration 8h", "--nodes or --nodelist"},
		{"--name physics --start 2026-12-03T17:00:00Z --duration 8h --nodes 4 --nodelist n[0-3]", "--nodes and --nodelist"},
		{"--name physics --start 2026-12-03T17:00:00Z --duration 8h --nodes 0", "--nodes"},
		{"--name physics --start 2026-12-03T17:00:00Z --duration 8h --nodes -3", "--nodes"},
		{"--name physics --start 2026-12-03T17:00:00Z --duration 8h --nodes many", "nodes"},
		{"--name physics --start 2026-12-03T17:00:00Z --duration 8h --nodelist n[0-3", "--nodelist"},
		{"--name physics --start 2026-12-03T17:00:00Z --duration 8h --nodelist n[3-0]", "--nodelist"},
		{"--name physics --start 2026-12-03T17:00:00Z --duration 8h --nodelist n1,n1", "--nodelist"},
		{ok + " --qpu qpu0", "--qpu"},
		{ok + " --qpu qpu0:0", "--qpu"},
		{ok + " --qpu qpu0:1,qpu0:2", "--qpu"},
		{ok + " --users alice,,bob", "--users"},
		{ok + " --users Alice", "--users"},
		{ok + " --users alice --users alice", "--users"},
		{ok + " --overlap preempt", "--overlap"},
		{ok + " --overlap KILL", "--overlap"},
		{ok + " --grace -5s", "--grace"},
		{ok + " --grace forever", "--grace"},
		{ok + " --every 7d", "--every"},
		{ok + " --until 2027-01-01", "--until"},
		{ok + " --every 1h --until 2027-01-01", "--every"}, // occurrences would overlap
		{ok + " --every soon --until 2027-01-01", "--every"},
		{ok + " --every 0 --until 2027-01-01", "--every"},
		{ok + " --every 1d --until never", "--until"},
		{ok + " --every 1d --until 2026-12-03T00:00:00Z", "--until"},
		{ok + " --every 8h --until 2030-01-01", "--every"}, // more than resv.MaxOccurrences
		{ok + " --maint --users alice", "--users"},
		{ok + " --maint --qpu qpu0:1", "--qpu"},
		{ok + " extra", "takes no arguments"},
		{ok + " --bogus", "bogus"},
	} {
		_, err := parseResvCreate(t, splitArgs(tc.args)...)
		if err == nil || exitCode(err) != 2 {
			t.Errorf("resv create %s = %v (exit %d); want a usage error, exit 2", tc.args, err, exitCode(err))
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "resv: invalid") || strings.Contains(err.Error(), "when: ") {
			t.Errorf("resv create %s: %q; want a message naming %s, without package prefixes", tc.args, err, tc.want)
		}
	}
}

func parseResvUpdate(t *testing.T, args ...string) (api.ResvUpdateRequest, error) {
	t.Helper()
	var req api.ResvUpdateRequest
	err := parseCommand(t, resvCommand(), "update", func(c *cli.Context) error {
		name, err := oneResvName(c)
		if err != nil {
			return err
		}
		req, err = readResvUpdateFlags(c).request(name, testNow)
		return err
	}, append([]string{"resv", "update"}, args...)...)
	return req, err
}

func TestResvUpdateRequest(t *testing.T) {
	for _, tc := range []struct {
		args string
		want api.ResvUpdateRequest
	}{
		{"physics --end 2026-12-04T03:00:00Z", api.ResvUpdateRequest{Name: "physics", End: utc("2026-12-04T03:00:00Z")}},
		// --duration counts from the reservation's start, which only the
		// broker knows, unless --start is given: the broker adds it.
		{"physics --duration 10h", api.ResvUpdateRequest{Name: "physics", DurationS: 36000}},
		{"physics --start 2026-12-03T18:00:00Z --duration 10h", api.ResvUpdateRequest{Name: "physics", Start: utc("2026-12-03T18:00:00Z"), End: utc("2026-12-04T04:00:00Z")}},
		{"physics --start now --duration 2h", api.ResvUpdateRequest{Name: "physics", Start: testNow, End: testNow.Add(2 * time.Hour), StartNow: true}},
		{"physics --start noon", api.ResvUpdateRequest{Name: "physics", Start: utc("2026-12-02T12:00:00Z")}},
		{"physics --add-users dave,erin --remove-users bob --dry-run", api.ResvUpdateRequest{Name: "physics", AddUsers: []string{"dave", "erin"}, RemoveUsers: []string{"bob"}, DryRun: true}},
		{"--nodes 8 physics --json", api.ResvUpdateRequest{Name: "physics", Nodes: 8}},
		{"physics --nodelist n[0-3,7]", api.ResvUpdateRequest{Name: "physics", NodeList: "n[0-3,7]"}},
	} {
		got, err := parseResvUpdate(t, splitArgs(tc.args)...)
		if err != nil {
			t.Errorf("resv update %s: %v", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("resv update %s:\n got %+v\nwant %+v", tc.args, got, tc.want)
		}
	}
	for _, tc := range []struct{ args, want string }{
		{"physics", "nothing to change"},
		{"--end 2026-12-04T03:00:00Z", "one reservation name"},
		{"physics dat --end 2026-12-04T03:00:00Z", "one reservation name"},
		{"Physics! --end 2026-12-04T03:00:00Z", "reservation name"},
		{"physics --end 2026-12-04T03:00:00Z --duration 1h", "--end and --duration"},
		{"physics --end someday", "--end"},
		{"physics --start 2026-12-03T18:00:00Z --end 2026-12-03T17:00:00Z", "--end"},
		{"physics --start 2026-12-01T18:00:00Z", "--start"},
		{"physics --start today", "--start"},
		{"physics --duration 0s", "--duration"},
		{"physics --nodes 2 --nodelist n[0-1]", "--nodes and --nodelist"},
		{"physics --nodelist n[0-", "--nodelist"},
		{"physics --nodes 0", "--nodes"},
		{"physics --add-users Bob", "--add-users"},
		{"physics --remove-users bob,", "--remove-users"},
		{"physics --add-users bob --remove-users bob", "--add-users and --remove-users"},
	} {
		_, err := parseResvUpdate(t, splitArgs(tc.args)...)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("resv update %s = %v (exit %d); want exit 2 naming %s", tc.args, err, exitCode(err), tc.want)
		}
	}
}

func parseResvPlan(t *testing.T, args ...string) (api.ResvPlanRequest, error) {
	t.Helper()
	var req api.ResvPlanRequest
	err := parseCommand(t, resvCommand(), "plan", func(c *cli.Context) error {
		var err error
		req, err = readResvPlanFlags(c).request(testNow)
		return err
	}, append([]string{"resv", "plan"}, args...)...)
	return req, err
}

func TestResvPlanRequest(t *testing.T) {
	for _, tc := range []struct {
		args string
		want api.ResvPlanRequest
	}{
		{"--nodes 4 --duration 8h", api.ResvPlanRequest{Nodes: 4, DurationS: 8 * 3600, Count: 5}},
		{"--nodelist n[0-3] --qpu qpu0:2 --duration 90m --after 2026-12-03T17:00:00Z --count 3 --overlap kill --json",
			api.ResvPlanRequest{NodeList: "n[0-3]", QPU: map[string]int{"qpu0": 2}, DurationS: 5400, After: utc("2026-12-03T17:00:00Z"), Count: 3, Overlap: "kill"}},
		{"--nodes 1 --duration 1h --after +2h", api.ResvPlanRequest{Nodes: 1, DurationS: 3600, After: testNow.Add(2 * time.Hour), Count: 5}},
		{"--nodelist n[0-3] --duration 1h --maint", api.ResvPlanRequest{NodeList: "n[0-3]", DurationS: 3600, Count: 5, Maint: true}},
		{"--nodes 2 --duration 1h --project 8", api.ResvPlanRequest{Nodes: 2, DurationS: 3600, Count: 5, Project: 8}},
	} {
		got, err := parseResvPlan(t, splitArgs(tc.args)...)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("resv plan %s:\n got %+v, %v\nwant %+v", tc.args, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ args, want string }{
		{"--duration 8h", "--nodes or --nodelist"},
		{"--nodes 4", "--duration"},
		{"--nodes 4 --duration 0", "--duration"},
		{"--nodes 4 --nodelist n1 --duration 1h", "--nodes and --nodelist"},
		{"--nodelist n[ --duration 1h", "--nodelist"},
		{"--nodes 4 --duration 1h --after someday", "--after"},
		{"--nodes 4 --duration 1h --count 0", "--count"},
		{"--nodes 4 --duration 1h --count 51", "--count"},
		{"--nodes 4 --duration 1h --project 65", "--project"},
		{"--nodes 4 --duration 1h --project -1", "--project"},
		{"--nodes 4 --duration 1h --overlap maybe", "--overlap"},
		{"--nodes 4 --duration 1h --qpu q", "--qpu"},
		{"--nodes 4 --duration 1h --qpu qpu0:1 --maint", "--qpu"},
	} {
		_, err := parseResvPlan(t, splitArgs(tc.args)...)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("resv plan %s = %v (exit %d); want exit 2 naming %s", tc.args, err, exitCode(err), tc.want)
		}
	}
}

// The resv, batch and alloc commands refuse bad arguments with exit code 2
// before they dial (there is no broker to dial here).
func TestResvUsageErrorsBeforeDial(t *testing.T) {
	t.Setenv(api.EnvURI, "strata://127.0.0.1:1/root")
	t.Setenv(api.EnvCreds, "/nonexistent/creds")
	for _, args := range [][]string{
		{"resv"},
		{"resv", "frob"},
		{"resv", "list", "x"},
		{"resv", "show"},
		{"resv", "show", "Bad!"},
		{"resv", "show", "a", "b"},
		{"resv", "delete"},
		{"resv", "delete", "x", "--bogus"},
		{"resv", "create", "--name", "x", "--start", "+1h", "--duration", "1h"},
		{"resv", "update", "x"},
		{"resv", "plan", "--nodes", "1"},
		{"batch"},
		{"batch", "-N0", "true"},
		{"batch", "-t", "soon", "true"},
		{"batch", "./no-such-script.sh"},
		{"alloc", "-N", "x"},
		{"alloc", "-t", "0"},
		{"alloc", "--resv", "Bad!"},
	} {
		app := newApp()
		app.Writer, app.ErrWriter = io.Discard, io.Discard
		err := app.Run(permuteArgs(app, append([]string{"strata"}, args...)))
		if args[0] == "resv" && len(args) == 1 {
			// 'strata resv' alone shows its help.
			if err != nil {
				t.Errorf("strata resv = %v", err)
			}
			continue
		}
		if err == nil || exitCode(err) != 2 {
			t.Errorf("strata %q = %v (exit %d); want a usage error, exit 2", args, err, exitCode(err))
		}
	}
}

func TestPermuteArgsResvBatch(t *testing.T) {
	app := newApp()
	for _, tc := range []struct{ in, want string }{
		{"resv show physics --json", "resv show --json physics"},
		{"resv update physics --end 17:00 --dry-run", "resv update --end 17:00 --dry-run physics"},
		{"resv delete physics --uri u", "resv delete --uri u physics"},
		// batch and alloc: -N4 splits; the script's arguments are its own.
		{"batch -N4 -t1h job.sh -N 2 --x", "batch -N 4 -t 1h job.sh -N 2 --x"},
		{"alloc -N2 -- sh -c 'exit 3'", "alloc -N 2 -- sh -c 'exit 3'"},
		{"alloc -N2", "alloc -N 2"},
	} {
		got := permuteArgs(app, append([]string{"strata"}, splitArgs(tc.in)...))[1:]
		if want := splitArgs(tc.want); !slices.Equal(got, want) {
			t.Errorf("permuteArgs(%q) = %q; want %q", tc.in, got, want)
		}
	}
}

func TestBatchScript(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"job.sh": 0o755, "plain.sh": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	for _, tc := range []struct{ arg, want, err string }{
		{"job.sh", "./job.sh", ""}, // a file here, not a command in PATH
		{"./job.sh", "./job.sh", ""},
		{filepath.Join(dir, "job.sh"), filepath.Join(dir, "job.sh"), ""},
		{"sh", "sh", ""}, // no such file: a command in PATH
		{"plain.sh", "", "not executable"},
		{"./missing.sh", "", "missing.sh"},
		{"missing.sh", "", "nor a command in PATH"},
		{"sub", "", "directory"},
	} {
		got, err := batchScript(tc.arg, dir)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("batchScript(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("batchScript(%q) = %q, %v; want an error saying %q", tc.arg, got, err, tc.err)
		}
	}
}

func TestBatchAndAllocRequest(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.sh"), nil, 0o755)
	var req api.SubmitRequest
	err := parseCommand(t, batchCommand(), "", func(c *cli.Context) error {
		var err error
		req, err = readJobSpec(c).batchRequest(testNow, dir, testEnv)
		return err
	}, splitArgs("batch -N4 -t 2h --qpu qpu0:1 job.sh -x in.dat")...)
	if err != nil {
		t.Fatal(err)
	}
	if !req.Instance || req.Nodes != 4 || req.Walltime != 7200 || req.Name != "job.sh" || !slices.Equal(req.Command, []string{"./job.sh", "-x", "in.dat"}) || req.QPU["qpu0"] != 1 || req.Cwd != dir {
		t.Errorf("batch request: %+v", req)
	}
	err = parseCommand(t, batchCommand(), "", func(c *cli.Context) error {
		_, err := readJobSpec(c).batchRequest(testNow, dir, testEnv)
		return err
	}, "batch", "-N", "2")
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "no script") {
		t.Errorf("batch without a script: %v", err)
	}

	var local []string
	err = parseCommand(t, allocCommand(), "", func(c *cli.Context) error {
		var err error
		req, local, err = readJobSpec(c).allocRequest(testNow, dir, testEnv, "/bin/zsh")
		return err
	}, splitArgs("alloc -N2 -t 90m --resv physics")...)
	if err != nil {
		t.Fatal(err)
	}
	if !req.Instance || req.Nodes != 2 || req.Walltime != 5400 || req.Name != "alloc" || req.Resv != "physics" ||
		!slices.Equal(req.Command, []string{"sleep", "5400"}) || req.Stdout != os.DevNull || req.Stderr != os.DevNull {
		t.Errorf("alloc request: %+v", req)
	}
	if !slices.Equal(local, []string{"/bin/zsh"}) {
		t.Errorf("alloc runs %q; want the shell", local)
	}
	err = parseCommand(t, allocCommand(), "", func(c *cli.Context) error {
		var err error
		req, local, err = readJobSpec(c).allocRequest(testNow, dir, testEnv, "/bin/sh")
		return err
	}, splitArgs("alloc --name mine -o alloc.out -- sh -c 'exit 3'")...)
	if err != nil || req.Name != "mine" || req.Stdout != "alloc.out" || req.Walltime != 0 || !slices.Equal(req.Command, []string{"sleep", "infinity"}) || !slices.Equal(local, []string{"sh", "-c", "exit 3"}) {
		t.Errorf("alloc -- COMMAND: %+v, %q, %v", req, local, err)
	}
	err = parseCommand(t, allocCommand(), "", func(c *cli.Context) error {
		_, _, err := readJobSpec(c).allocRequest(testNow, dir, testEnv, "/bin/sh")
		return err
	}, splitArgs("alloc --signal USR1@60")...)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "a signal would end it") {
		t.Errorf("alloc --signal: %v; want a usage error saying why", err)
	}
}

func TestAllocEnv(t *testing.T) {
	env := allocEnv([]string{"PATH=/bin", "STRATA_URI=strata://h:1/root", "STRATA_JOBID=9", "HOME=/h"},
		api.Job{ID: 12, URI: "strata://h:1/root/j12", Nodes: "n[0-1]", NNodes: 2})
	want := []string{"PATH=/bin", "HOME=/h", "STRATA_URI=strata://h:1/root/j12", "STRATA_JOBID=12", "STRATA_NODELIST=n[0-1]", "STRATA_NNODES=2"}
	if !slices.Equal(env, want) {
		t.Errorf("allocEnv = %q; want %q", env, want)
	}
}

func TestParseUserList(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []string
		err  string
	}{
		{nil, nil, ""},
		{[]string{"alice"}, []string{"alice"}, ""},
		{[]string{"bob,alice", " carol "}, []string{"bob", "alice", "carol"}, ""},
		{[]string{"alice, bob"}, []string{"alice", "bob"}, ""},
		{[]string{""}, nil, "empty user name"},
		{[]string{"alice,"}, nil, "empty user name"},
		{[]string{"Alice"}, nil, `"Alice"`},
		{[]string{"alice", "alice"}, nil, "twice"},
		{[]string{"a b"}, nil, `"a b"`},
	} {
		got, err := parseUserList(tc.in)
		switch {
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("parseUserList(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseUserList(%q) = %q, %v; want an error saying %s", tc.in, got, err, tc.err)
		}
	}
}

func FuzzParseUserList(f *testing.F) {
	for _, s := range []string{"alice", "alice,bob", " alice , bob ", "alice,,bob", ",", "", "Alice", "alice,alice", "a-b_c9", "_x", "a\x00b", "ä"} {
		f.Add(s, "bob")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		users, err := parseUserList([]string{a, b})
		if err != nil {
			if users != nil || err.Error() == "" || strings.Contains(err.Error(), "resv: ") {
				t.Fatalf("parseUserList(%q, %q) = %q, %q", a, b, users, err)
			}
			return
		}
		// Every name is valid and given once; read back joined, they are
		// the same list.
		seen := map[string]bool{}
		for _, u := range users {
			if api.ValidateUser(u) != nil || seen[u] || strings.TrimSpace(u) != u {
				t.Fatalf("parseUserList(%q, %q) = %q", a, b, users)
			}
			seen[u] = true
		}
		back, err := parseUserList([]string{strings.Join(users, ",")})
		if err != nil || !slices.Equal(back, users) {
			t.Fatalf("parseUserList(%q) = %q, %v; want %q", strings.Join(users, ","), back, err, users)
		}
	})
}

// FuzzResvCreateFlags: whatever --users, --qpu and --nodelist hold, resv
// create either refuses with a usage error naming a flag, or sends what
// was asked.
func FuzzResvCreateFlags(f *testing.F) {
	f.Add("alice,bob", "qpu0:4", "n[0-3]")
	f.Add("alice,,bob", "qpu0", "n[0-")
	f.Add("", "qpu0:1,qpu1:2", "")
	f.Add("x", "qpu0:1,qpu0:1", "n1,n1")
	f.Fuzz(func(t *testing.T, users, qpu, nodelist string) {
		fl := resvCreateFlags{Name: "physics", Start: "+1h", Duration: "1h", NodeList: nodelist}
		if users != "" {
			fl.Users = []string{users}
		}
		if qpu != "" {
			fl.QPU = []string{qpu}
		}
		reqs, err := fl.requests(testNow)
		if err != nil {
			if exitCode(err) != 2 || !strings.Contains(err.Error(), "--") {
				t.Fatalf("requests(%q, %q, %q) = %v (exit %d)", users, qpu, nodelist, err, exitCode(err))
			}
			return
		}
		if len(reqs) != 1 {
			t.Fatalf("%d requests", len(reqs))
		}
		r := reqs[0]
		if r.NodeList != nodelist || (nodelist == "" && len(r.QPU) == 0) {
			t.Fatalf("request %+v for nodelist %q, qpu %q", r, nodelist, qpu)
		}
		if nodelist != "" {
			if _, err := hostlist.Parse(r.NodeList); err != nil {
				t.Fatalf("sent a malformed hostlist %q", r.NodeList)
			}
		}
		for name, n := range r.QPU {
			if !nameRe.MatchString(name) || n < 1 {
				t.Fatalf("QPU %q: %d", name, n)
			}
		}
		if strings.Count(users, ",")+1 != len(r.Users) && users != "" {
			t.Fatalf("users %q sent as %q", users, r.Users)
		}
	})
}

func TestPrintResvCreated(t *testing.T) {
	rv := api.Resv{Name: "physics", State: "planned", Start: utc("2026-12-03T17:00:00Z"), End: utc("2026-12-04T01:00:00Z"),
		Nodes: "n[0-3]", NNodes: 4, QPU: map[string]int{"qpu1": 1, "qpu0": 4}, Users: []string{"alice", "bob"}, Overlap: "kill", GraceS: 90,
		Path: "root.physics", Killed: []api.KilledJob{{ID: 7, User: "carol", Nodes: "n[0-7]"}, {ID: 9, User: "dave", Nodes: "n3"}}}
	t.Setenv("TZ", "UTC")
	var b bytes.Buffer
	printResvCreated(&b, rv, true)
	out := b.String()
	for _, want := range []string{
		"dry run: nothing was created",
		"state:            planned",
		"start:            2026-12-03T17:00:00Z",
		"duration:         8h",
		"nodes:            n[0-3]",
		"qpu:              qpu0:4,qpu1:1",
		"users:            alice,bob",
		"grace:            1m30s (90s)",
		"uri:              -",
		"it would kill 2 running jobs (SIGTERM, then SIGKILL after 1m30s)",
		"  7   carol  n[0-7]",
		"  9   dave   n3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	rv.State, rv.Killed, rv.Overlap = "pending", nil, "drain"
	printResvCreated(&b, rv, false)
	if out := b.String(); !strings.HasPrefix(out, "reservation physics created:\n") || !strings.Contains(out, "kills no job") {
		t.Errorf("created output:\n%s", out)
	}
	b.Reset()
	maint := api.Resv{Name: "fix", State: "pending", Start: rv.Start, End: rv.End, Nodes: "n[0-3]", NNodes: 4, Overlap: "drain", Maint: true, Killed: []api.KilledJob{}}
	printResvCreated(&b, maint, false)
	if out := b.String(); !strings.Contains(out, "maint:            true") || !strings.Contains(out, "maintenance window: it admits no jobs") {
		t.Errorf("maintenance created output:\n%s", out)
	}
	b.Reset()
	printResvs(&b, []api.Resv{rv, maint})
	if out := b.String(); !strings.Contains(out, "KIND") || !strings.Contains(out, "0       dat\n") || !strings.Contains(out, "0       maint\n") {
		t.Errorf("resv list with maintenance:\n%s", out)
	}
	b.Reset()
	rv.State, rv.URI, rv.Killed = "active", "strata://h:1/root/physics", []api.KilledJob{{ID: 7, User: "carol", Nodes: "n[0-7]"}}
	printResv(&b, rv)
	if out := b.String(); !strings.Contains(out, "uri:              strata://h:1/root/physics") || !strings.Contains(out, "killed: 1 job at its start") || !strings.Contains(out, "carol") {
		t.Errorf("show output:\n%s", out)
	}
}

func TestPrintPlan(t *testing.T) {
	t.Setenv("TZ", "UTC")
	var b bytes.Buffer
	printPlan(&b, []api.ResvWindow{
		{Start: utc("2026-12-03T17:00:00Z"), End: utc("2026-12-03T18:00:00Z"), Nodes: "n[0-3]", NodeHoursLost: 1.5,
			Killed:  []api.KilledJob{{ID: 7, User: "bob", Nodes: "n[0-7]"}, {ID: 8, User: "carol", Nodes: "n9"}},
			Delayed: []api.DelayedJob{{ID: 9, User: "dave", From: utc("2026-12-03T17:00:00Z"), To: utc("2026-12-03T18:30:00Z")}, {ID: 10, User: "erin", From: utc("2026-12-03T17:00:00Z")}}},
		{Start: utc("2026-12-03T20:00:00Z"), End: utc("2026-12-03T21:00:00Z"), Nodes: "n[4-7]", NodeHoursLost: 0.001},
	})
	want := alignWant(`#  START  END  NODES  KILLED (ID USER NODES)  NODE-HOURS LOST  DELAYED (ID USER BY)
1  2026-12-03T17:00:00Z  2026-12-03T18:00:00Z  n[0-3]  7 bob n[0-7]; 8 carol n9  1.50  9 dave +1h30m; 10 erin no longer fits
2  2026-12-03T20:00:00Z  2026-12-03T21:00:00Z  n[4-7]  -  <0.01  -
`)
	if b.String() != want {
		t.Errorf("plan:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	printPlan(&b, nil)
	if !strings.Contains(b.String(), "no window") {
		t.Errorf("empty plan: %q", b.String())
	}
}
