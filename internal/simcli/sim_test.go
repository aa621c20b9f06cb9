package simcli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/internal/cliapp"
	"github.com/strata-hpc/strata/internal/clitest"
)

// runApp runs strata-broker's command line in-process with args and
// returns stdout, stderr and the exit code main would use.
func runApp(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cliapp.SimCommand = Command
	return clitest.Run(t, cliapp.App(), cliapp.ExitCode, args...)
}

const tinyTrace = `; Version: 2.2
; MaxProcs: 8
1 0 0 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1
2 10 0 50 8 -1 -1 8 60 -1 1 2 1 1 1 1 -1 -1
3 20 0 30 2 -1 -1 2 30 -1 1 1 1 1 1 1 -1 -1
4 30 0 0 2 -1 -1 2 30 -1 5 1 1 1 1 1 -1 -1
5 40 0 10 64 -1 -1 64 30 -1 1 1 1 1 1 1 -1 -1
`

func TestSimCommand(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "tiny.swf")
	os.WriteFile(trace, []byte(tinyTrace), 0o644)
	perJob := filepath.Join(dir, "jobs.csv")
	out, errOut, code := runApp(t, "sim", "--trace", trace, "--policy", "fcfs", "--json", "--per-job", perJob)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	for _, k := range []string{"jobs", "skipped", "units", "policy", "makespan_s", "utilization", "mean_wait_s", "median_wait_s", "max_wait_s", "mean_bsld", "elapsed_s"} {
		if _, ok := res[k]; !ok {
			t.Errorf("--json lacks %q: %s", k, out)
		}
	}
	// Jobs 1-3 run (4 never ran, 5 is larger than the machine); fcfs:
	// job 2 (8 units) waits for job 1 until 100, job 3 waits behind it.
	if res["jobs"] != 3.0 || res["skipped"] != 2.0 || res["units"] != 8.0 || res["policy"] != "fcfs" {
		t.Errorf("result %v", res)
	}
	if res["makespan_s"] != 180.0 || res["max_wait_s"] != 130.0 {
		t.Errorf("makespan %v (want 180: job 3 ends at 150+30), max wait %v (want 130)", res["makespan_s"], res["max_wait_s"])
	}
	csv, _ := os.ReadFile(perJob)
	if want := "id,submit,start,end,units\n1,0,0,100,4\n2,10,100,150,8\n3,20,150,180,2\n"; string(csv) != want {
		t.Errorf("--per-job:\n%s\nwant:\n%s", csv, want)
	}
	text, _, code := runApp(t, "sim", "--trace", trace)
	if code != 0 || !strings.Contains(text, "jobs skipped     2 (1 more processors than the machine, 1 run time <= 0)") {
		t.Errorf("text output (exit %d):\n%s", code, text)
	}
}

func TestSimCommandErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.swf")
	os.WriteFile(good, []byte(tinyTrace), 0o644)
	bad := filepath.Join(dir, "bad.swf")
	os.WriteFile(bad, []byte("; MaxProcs: 8\n1 0 0 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1\n2 10 zero 50\n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sim", "--trace", bad}, 1, "bad.swf:3:"},
		{[]string{"sim", "--trace", good, "--policy", "lifo"}, 2, `unknown policy "lifo": use fcfs, easy, conservative or hybrid:N`},
		{[]string{"sim", "--trace", good, "--policy", "hybrid:0"}, 2, "hybrid:N needs a whole number"},
		{[]string{"sim", "--trace", good, "--units", "-4"}, 2, "--units -4"},
		{[]string{"sim", "--trace", good, "--resv", "start=+1d,duration=soon,nodes=4"}, 1, "duration=soon"},
		{[]string{"sim", "--trace", good, "--estimate", "guess"}, 2, `unknown estimate "guess"`},
		{[]string{"sim", "--trace", filepath.Join(dir, "missing.swf")}, 1, "missing.swf"},
	} {
		_, errOut, code := runApp(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("strata %s: exit %d, %q; want exit %d and %q", strings.Join(tc.args, " "), code, errOut, tc.code, tc.want)
		}
	}
}

// TestSimHybrid: a trace with a hybrid side file reports each backend's QPU
// use and each user's share; a generated workload too; bad side files
// are refused with the line and the field, and nothing is replayed.
func TestSimHybrid(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "tiny.swf")
	os.WriteFile(trace, []byte(tinyTrace), 0o644)
	side := filepath.Join(dir, "hybrid.csv")
	os.WriteFile(side, []byte("job,backend,slots,qpu_jobs,shots,ms\n1,qpu0,2,3,1000,2000\n3,qpu1,1,2,500,1000\n"), 0o644)
	out, errOut, code := runApp(t, "sim", "--trace", trace, "--qpu", "qpu0:4,qpu1:1", "--qpu-jobs", side, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		QPU []struct {
			Backend     string
			Completed   int
			DeviceS     float64 `json:"device_s"`
			Utilization float64
			Users       []struct {
				User  string
				Share float64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.QPU) != 2 || res.QPU[0].Backend != "qpu0" || res.QPU[0].Completed != 3 || res.QPU[0].DeviceS != 6 ||
		res.QPU[0].Utilization <= 0 || len(res.QPU[0].Users) != 1 || res.QPU[0].Users[0].Share != 1 ||
		res.QPU[1].Completed != 2 || res.QPU[1].DeviceS != 2 {
		t.Errorf("QPU results: %s", out)
	}
	out, errOut, code = runApp(t, "sim", "--trace", trace, "--qpu-gen", "7", "--qpu-frac", "1")
	if code != 0 || !strings.Contains(out, "QPU qpu0") || !strings.Contains(out, "share") {
		t.Errorf("--qpu-gen: exit %d: %s%s", code, out, errOut)
	}
	for _, tc := range []struct{ file, want string }{
		{"1,qpu0,2,3,1000,2000\n2,qpu7,1,1,1,1\n", `line 2: field "backend": unknown backend "qpu7"`},
		{"1,qpu0,2,3,-1000,2000\n", `line 1: field "shots": -1000 is negative`},
		{"1,qpu1,2,3,1000,2000\n", `line 1: field "slots": 2 slots, but qpu1 has 1`},
	} {
		os.WriteFile(side, []byte(tc.file), 0o644)
		out, errOut, code := runApp(t, "sim", "--trace", trace, "--qpu", "qpu0:4,qpu1:1", "--qpu-jobs", side)
		if code == 0 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want a refusal with %q", tc.file, code, out, errOut, tc.want)
		}
	}
	if _, errOut, code := runApp(t, "sim", "--trace", trace, "--qpu-jobs", side, "--qpu-gen", "1"); code == 0 || !strings.Contains(errOut, "not both") {
		t.Errorf("--qpu-jobs with --qpu-gen: exit %d: %s", code, errOut)
	}
}
