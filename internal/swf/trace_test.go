package swf

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// workloadsDir returns the shared trace directory, shared/data/workloads
// beside the repository (the directory holding go.mod, found by walking up
// from the working directory), or skips the test if it is absent, as when
// the repository is cloned alone.
func workloadsDir(tb testing.TB) string {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			tb.Skipf("SWF traces not found: no go.mod in %s or above it, so no repository root to look beside", wd)
		}
		root = parent
	}
	dir := filepath.Join(root, "..", "shared", "data", "workloads")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		tb.Skipf("SWF traces not found: looked for directory %s (shared/data/workloads beside the repository root %s)", filepath.Clean(dir), root)
	}
	return dir
}

// traceFacts are the figures SOURCES.md gives for one trace, plus the Sim
// outcomes (machine = MaxProcs) counted independently with awk on the
// unpacked files.
type traceFacts struct {
	file                 string
	jobs                 int
	maxProcs, maxNodes   int
	maxRecords           int
	reqProcsUnknown      int // field 8 = -1
	allocProcsNone       int // field 5 <= 0
	runNone              int // field 4 <= 0
	reqTimeUnknown       int // field 9 = -1
	runOverReq           int // run > requested time (requested time known)
	status               map[int64]int
	firstSubmit          int64
	lastSubmit           int64
	load                 float64 // Σ(run·units)/(MaxProcs·span) over simulated jobs, 2 decimals
	skipped              [numSkipReasons]int
	unitsFromAlloc       int
	reqTimeFromRun       int
	rawContains          string // a licence or note line that Raw must keep verbatim
	unixStart            int64
	timeZoneString       string
	headerLines          int
	informationLineCount int
	copyrightLines       int // lines of the Copyright field, 0 if absent
	maxQueues            int
	queueLines           int
}

var traces = []traceFacts{
	{
		file: "CTC-SP2-1996-3.1-cln.swf.gz", jobs: 77222, maxProcs: 338, maxNodes: 338, maxRecords: 79302,
		reqProcsUnknown: 77222, allocProcsNone: 0, runNone: 17, reqTimeUnknown: 6, runOverReq: 7174,
		status:      map[int64]int{0: 16669, 1: 60553},
		firstSubmit: 0, lastSubmit: 29299062, load: 0.84,
		skipped:        [numSkipReasons]int{SkipNone: 77205, SkipNoRunTime: 17},
		unitsFromAlloc: 77205, reqTimeFromRun: 6,
		rawContains: "; MaxNodes: 338 (batch partition; 512 total)",
		unixStart:   835823160, timeZoneString: "US/Eastern", headerLines: 29, informationLineCount: 2,
		maxQueues: 4, queueLines: 4,
	},
	{
		file: "SDSC-SP2-1998-4.2-cln.swf.gz", jobs: 59715, maxProcs: 128, maxNodes: 128, maxRecords: 59715,
		reqProcsUnknown: 0, allocProcsNone: 5669, runNone: 5681, reqTimeUnknown: 66, runOverReq: 4134,
		status:      map[int64]int{1: 43117, 5: 16598},
		firstSubmit: 566129, lastSubmit: 63582293, load: 0.83,
		skipped:        [numSkipReasons]int{SkipNone: 54034, SkipNoRunTime: 5681},
		unitsFromAlloc: 0, reqTimeFromRun: 35,
		rawContains: ";   provided that this copyright notice is preserved in all copies and",
		unixStart:   893466664, timeZoneString: "US/Pacific", headerLines: 48, informationLineCount: 2,
		copyrightLines: 13, maxQueues: 7, queueLines: 7,
	},
	{
		file: "KTH-SP2-1996-2.1-cln.swf.gz", jobs: 28476, maxProcs: 100, maxNodes: 100, maxRecords: 28476,
		reqProcsUnknown: 1, allocProcsNone: 1, runNone: 8, reqTimeUnknown: 0, runOverReq: 475,
		status:      map[int64]int{0: 7946, 1: 20530},
		firstSubmit: 599850, lastSubmit: 29363618, load: 0.70,
		skipped:        [numSkipReasons]int{SkipNone: 28467, SkipNoRunTime: 8, SkipNoProcs: 1},
		unitsFromAlloc: 0, reqTimeFromRun: 0,
		rawContains: ";         job<=14 (14 jobs removed)",
		unixStart:   843480031, timeZoneString: "Europe/Stockholm", headerLines: 24, informationLineCount: 2,
	},
}

func TestRealTraces(t *testing.T) {
	dir := workloadsDir(t)
	for _, want := range traces {
		t.Run(strings.SplitN(want.file, "-", 2)[0], func(t *testing.T) {
			t.Parallel()
			r, err := Open(filepath.Join(dir, want.file))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			h := r.Header()
			if h.Version != "2.2" || h.Computer != "IBM SP2" {
				t.Errorf("Version %q, Computer %q; want 2.2, IBM SP2", h.Version, h.Computer)
			}
			if h.MaxProcs != want.maxProcs || h.MaxNodes != want.maxNodes || MachineUnits(h) != want.maxProcs {
				t.Errorf("MaxProcs %d, MaxNodes %d, MachineUnits %d; want %d, %d, %d",
					h.MaxProcs, h.MaxNodes, MachineUnits(h), want.maxProcs, want.maxNodes, want.maxProcs)
			}
			if h.MaxRecords != want.maxRecords || h.UnixStartTime != want.unixStart || h.TimeZoneString != want.timeZoneString {
				t.Errorf("MaxRecords %d, UnixStartTime %d, TimeZoneString %q; want %d, %d, %q",
					h.MaxRecords, h.UnixStartTime, h.TimeZoneString, want.maxRecords, want.unixStart, want.timeZoneString)
			}
			if len(h.Raw) != want.headerLines || h.Raw[0] != "; Version: 2.2" {
				t.Errorf("Raw has %d lines starting %q; want %d starting \"; Version: 2.2\"", len(h.Raw), h.Raw[0], want.headerLines)
			}
			if !contains(h.Raw, want.rawContains) {
				t.Errorf("Raw lacks the line %q", want.rawContains)
			}
			if n := strings.Count(h.Information, "\n") + 1; n != want.informationLineCount {
				t.Errorf("Information %q has %d lines, want %d", h.Information, n, want.informationLineCount)
			}
			if c := h.Fields["Copyright"]; want.copyrightLines == 0 && c != nil ||
				want.copyrightLines > 0 && (len(c) != 1 || strings.Count(c[0], "\n")+1 != want.copyrightLines) {
				t.Errorf("Copyright %q, want %d lines", c, want.copyrightLines)
			}
			if h.MaxQueues != want.maxQueues || len(h.Fields["Queue"]) != want.queueLines {
				t.Errorf("MaxQueues %d with %d Queue lines, want %d and %d", h.MaxQueues, len(h.Fields["Queue"]), want.maxQueues, want.queueLines)
			}
			if h.StartTime == "" || h.EndTime == "" || h.Fields["Note"] == nil {
				t.Errorf("StartTime %q, EndTime %q, Note %q: want all set", h.StartTime, h.EndTime, h.Fields["Note"])
			}

			var (
				got        traceFacts
				prevSubmit int64 = math.MinInt64
				work       float64
				decreasing int
			)
			got.status = map[int64]int{}
			for {
				j, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if got.jobs == 0 {
					got.firstSubmit = j.Submit
				}
				got.lastSubmit = j.Submit
				got.jobs++
				if j.Submit < prevSubmit {
					decreasing++
				}
				prevSubmit = j.Submit
				if j.ReqProcs == -1 {
					got.reqProcsUnknown++
				}
				if j.AllocProcs <= 0 {
					got.allocProcsNone++
				}
				if j.Run <= 0 {
					got.runNone++
				}
				if j.ReqTime == -1 {
					got.reqTimeUnknown++
				}
				if j.ReqTime > 0 && j.Run > j.ReqTime {
					got.runOverReq++
				}
				got.status[j.Status]++
				s, why := j.Sim(MachineUnits(h))
				got.skipped[why]++
				if why == SkipNone {
					work += float64(s.Run) * float64(s.Units)
					if s.UnitsFromAlloc {
						got.unitsFromAlloc++
					}
					if s.ReqTimeFromRun {
						got.reqTimeFromRun++
					}
				}
			}
			got.load = math.Round(100*work/(float64(h.MaxProcs)*float64(got.lastSubmit-got.firstSubmit))) / 100

			check := func(name string, g, w any) {
				t.Helper()
				if g != w {
					t.Errorf("%s = %v, want %v", name, g, w)
				}
			}
			check("jobs", got.jobs, want.jobs)
			check("jobs with requested procs = -1", got.reqProcsUnknown, want.reqProcsUnknown)
			check("jobs with allocated procs <= 0", got.allocProcsNone, want.allocProcsNone)
			check("jobs with run time <= 0", got.runNone, want.runNone)
			check("jobs with requested time = -1", got.reqTimeUnknown, want.reqTimeUnknown)
			check("jobs with run > requested time", got.runOverReq, want.runOverReq)
			check("first submit", got.firstSubmit, want.firstSubmit)
			check("last submit", got.lastSubmit, want.lastSubmit)
			check("jobs submitted before their predecessor", decreasing, 0)
			check("offered load", got.load, want.load)
			check("Sim outcomes", got.skipped, want.skipped)
			check("UnitsFromAlloc", got.unitsFromAlloc, want.unitsFromAlloc)
			check("ReqTimeFromRun", got.reqTimeFromRun, want.reqTimeFromRun)
			if len(got.status) != len(want.status) {
				t.Errorf("status counts %v, want %v", got.status, want.status)
			}
			for s, n := range want.status {
				check(fmt.Sprintf("jobs with status %d", s), got.status[s], n)
			}
			if _, err := r.Next(); !errors.Is(err, io.EOF) {
				t.Errorf("Next after the end: %v, want io.EOF", err)
			}
		})
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}
