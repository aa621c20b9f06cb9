package sim

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/strata-hpc/strata/internal/swf"
	"github.com/strata-hpc/strata/timeline"
)

// Hybrid is what one trace job does on a QPU: it holds Slots slots of
// Backend for its whole run, and when it starts it submits QPUJobs QPU jobs
// of Shots shots, each taking MS milliseconds of device time.
type Hybrid struct {
	Job     int64 // the trace's job number
	Backend string
	Slots   int
	QPUJobs int
	Shots   int
	MS      int64
}

// Bounds of a hybrid line: beyond them a file is more likely wrong than
// meant.
const (
	maxQPUJobs = 10000
	maxShots   = 10_000_000
	maxQPUMS   = 86_400_000 // a day of device time per QPU job
)

// hybridFields are the columns of a hybrid file, in order.
var hybridFields = [...]string{"job", "backend", "slots", "qpu_jobs", "shots", "ms"}

// ParseBackends reads QPU backends as "NAME:SLOTS[,NAME:SLOTS...]"
// ("qpu0:8,qpu1:4").
func ParseBackends(s string) ([]timeline.Pool, error) {
	var out []timeline.Pool
	seen := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(p), ":")
		size, err := strconv.Atoi(n)
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("sim: QPU backend %q: write it NAME:SLOTS, for example qpu0:8", p)
		case err != nil || size < 1:
			return nil, fmt.Errorf("sim: QPU backend %q: the slot count %q must be a whole number of at least 1", p, n)
		case seen[name]:
			return nil, fmt.Errorf("sim: QPU backend %s is listed twice", name)
		}
		seen[name] = true
		out = append(out, timeline.Pool{Name: name, Size: size})
	}
	return out, nil
}

// ParseHybrid reads a hybrid side file for an SWF trace: one line per trace
// job that uses a QPU, six comma-separated fields
//
//	job,backend,slots,qpu_jobs,shots,ms
//	17,qpu0,2,5,1000,1200
//
// (trace job 17 holds 2 slots of qpu0 while it runs, and at its start
// submits 5 QPU jobs of 1000 shots, each 1.2 s of device time). Blank
// lines, lines starting with '#' and a header line naming the fields are
// skipped. A line that is wrong (a field that is not a number, an unknown
// backend, more slots than the backend has, negative shots, a job listed
// twice) fails the whole file with its line number and field; name is the
// file's name for those errors. backends are the machine's QPU backends.
func ParseHybrid(r io.Reader, name string, backends []timeline.Pool) (map[int64]Hybrid, error) {
	size := map[string]int{}
	var names []string
	for _, b := range backends {
		size[b.Name] = b.Size
		names = append(names, b.Name)
	}
	out := map[int64]Hybrid{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, "job,") {
			continue
		}
		bad := func(field, format string, args ...any) error {
			return fmt.Errorf("sim: %s line %d: field %q: %s", name, line, field, fmt.Sprintf(format, args...))
		}
		f := strings.Split(text, ",")
		if len(f) != len(hybridFields) {
			return nil, fmt.Errorf("sim: %s line %d: %d fields, want %d: %s", name, line, len(f), len(hybridFields), strings.Join(hybridFields[:], ","))
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		num := func(i int, lo, hi int64) (int64, error) {
			n, err := strconv.ParseInt(f[i], 10, 64)
			switch {
			case err != nil:
				return 0, bad(hybridFields[i], "%q is not a whole number", f[i])
			case n < 0:
				return 0, bad(hybridFields[i], "%d is negative", n)
			case n < lo || n > hi:
				return 0, bad(hybridFields[i], "%d is out of range %d to %d", n, lo, hi)
			}
			return n, nil
		}
		var h Hybrid
		var err error
		var n int64
		if h.Job, err = num(0, 1, 1<<62); err != nil {
			return nil, err
		}
		if _, dup := out[h.Job]; dup {
			return nil, bad("job", "trace job %d is listed twice", h.Job)
		}
		h.Backend = f[1]
		s, ok := size[h.Backend]
		if !ok {
			return nil, bad("backend", "unknown backend %q; the backends are %v (set them with --qpu)", h.Backend, names)
		}
		if n, err = num(2, 1, 1<<31); err != nil {
			return nil, err
		}
		if n > int64(s) {
			return nil, bad("slots", "%d slots, but %s has %d", n, h.Backend, s)
		}
		h.Slots = int(n)
		if n, err = num(3, 0, maxQPUJobs); err != nil {
			return nil, err
		}
		h.QPUJobs = int(n)
		if n, err = num(4, 1, maxShots); err != nil {
			return nil, err
		}
		h.Shots = int(n)
		if h.MS, err = num(5, 0, maxQPUMS); err != nil {
			return nil, err
		}
		out[h.Job] = h
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sim: %s line %d: %w", name, line+1, err)
	}
	return out, nil
}

// GenHybrid makes a hybrid workload from jobs: each job, with probability
// frac, holds 1 to a quarter of the slots (at least 1) of one of backends,
// as hybrid jobs hold a QPU share rather than the device, and submits 1 to
// 8 QPU jobs
// of 100 to 5,000 shots, whose device time follows a simple model (50 ms
// plus 1 ms per 4 shots). The same seed gives the same workload.
func GenHybrid(jobs []swf.SimJob, backends []timeline.Pool, seed uint64, frac float64) map[int64]Hybrid {
	rng := rand.New(rand.NewPCG(seed, 0x5157a7a))
	out := map[int64]Hybrid{}
	if len(backends) == 0 {
		return out
	}
	for _, j := range jobs {
		if rng.Float64() >= frac {
			continue
		}
		b := backends[rng.IntN(len(backends))]
		shots := 100 * (1 + rng.IntN(50))
		out[j.ID] = Hybrid{Job: j.ID, Backend: b.Name, Slots: 1 + rng.IntN(max(1, b.Size/4)), QPUJobs: 1 + rng.IntN(8),
			Shots: shots, MS: 50 + int64(shots)/4}
	}
	return out
}
