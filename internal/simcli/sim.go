// Package simcli is the 'strata sim' command: the trace replay of package
// sim behind the command line. It is strata-broker's, not the front
// end's, which runs strata-broker for it (see cliapp.SimCommand).
package simcli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/cliapp"
	"github.com/strata-hpc/strata/internal/swf"
	"github.com/strata-hpc/strata/sim"
)

// Command is 'strata sim': a trace replayed through the scheduling core on
// a virtual clock. It runs in strata-broker (see cliapp.SimCommand).
func Command() *cli.Command {
	return &cli.Command{
		Name:      "sim",
		Usage:     cliapp.SimUsage,
		UsageText: "strata sim --trace FILE.swf[.gz] [--policy easy] [--units N] [--estimate requested|actual] [--resv SPEC]... [--qpu qpu0:8 (--qpu-jobs FILE.csv | --qpu-gen SEED)] [--per-job FILE.csv] [--json]",
		Description: "Replays the trace with a virtual clock through the same scheduling core the broker runs.\n" +
			"One SWF processor is one node. --resv injects reservations, e.g.\n" +
			"--resv 'start=+7d,duration=8h,nodes=128,every=7d' (a weekly 8-hour DAT of 128 nodes).\n\n" +
			"A hybrid workload adds QPU backends (--qpu) and says which trace jobs hold QPU slots and submit\n" +
			"QPU jobs: a side file (--qpu-jobs), one line per such job,\n" +
			"  job,backend,slots,qpu_jobs,shots,ms\n" +
			"  17,qpu0,2,5,1000,1200\n" +
			"(trace job 17 holds 2 slots of qpu0 and at its start submits 5 QPU jobs of 1000 shots, 1.2 s of\n" +
			"device time each), or generated (--qpu-gen SEED: a --qpu-frac share of the jobs, 0.1 by default).\n" +
			"The result adds each backend's QPU utilization and each user's share of its device time.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "trace", Usage: "the SWF trace (gzip is read transparently)", Required: true},
			&cli.StringFlag{Name: "policy", Value: "easy", Usage: "fcfs, easy, conservative or hybrid:N"},
			&cli.IntFlag{Name: "units", Usage: "machine size in processors (default: the header's MaxProcs, else MaxNodes)"},
			&cli.StringFlag{Name: "estimate", Value: "requested", Usage: "walltime a job declares: requested (the trace's) or actual (its run time)"},
			&cli.StringSliceFlag{Name: "resv", Usage: "inject a reservation: start=+7d,duration=8h,nodes=128[,every=7d][,until=+90d] (repeatable)"},
			&cli.IntFlag{Name: "limit", Usage: "replay only the first N jobs of the trace"},
			&cli.StringFlag{Name: "per-job", Usage: "write one CSV line per job (id,submit,start,end,units) to this file"},
			&cli.StringFlag{Name: "qpu", Usage: "QPU backends of the machine: NAME:SLOTS[,NAME:SLOTS] (default qpu0:8 with --qpu-jobs or --qpu-gen)"},
			&cli.StringFlag{Name: "qpu-jobs", Usage: "hybrid side file: job,backend,slots,qpu_jobs,shots,ms per line (see above)"},
			&cli.Uint64Flag{Name: "qpu-gen", Usage: "generate a hybrid workload with this seed instead of --qpu-jobs"},
			&cli.Float64Flag{Name: "qpu-frac", Value: 0.1, Usage: "with --qpu-gen: the share of trace jobs that use a QPU"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"},
		},
		Action: runSim,
	}
}

func runSim(c *cli.Context) error {
	pol, err := instance.ParsePolicy(c.String("policy"))
	if err != nil {
		return cliapp.UsageErr(err)
	}
	est, err := sim.ParseEstimate(c.String("estimate"))
	if err != nil {
		return cliapp.UsageErr(err)
	}
	if c.Int("units") < 0 {
		return cliapp.UsageErr(fmt.Errorf("--units %d: the machine size must be a positive number of processors", c.Int("units")))
	}
	if c.Int("limit") < 0 {
		return cliapp.UsageErr(fmt.Errorf("--limit %d must not be negative", c.Int("limit")))
	}
	begin := time.Now()
	r, err := swf.Open(c.String("trace"))
	if err != nil {
		return err
	}
	defer r.Close()
	jobs, units, skipped, err := sim.Load(r, c.Int("units"), c.Int("limit"))
	if err != nil {
		return err
	}
	cfg := sim.Config{Policy: pol, Estimate: est, Resvs: c.StringSlice("resv"), PerJob: c.String("per-job") != ""}
	if err := hybridConfig(c, jobs, &cfg); err != nil {
		return err
	}
	if isTerminal(os.Stderr) && !c.Bool("json") {
		bar := newProgress(c.App.ErrWriter, "replaying")
		cfg.Progress = bar.update
		defer bar.done()
	}
	res, err := sim.Run(jobs, units, cfg)
	if err != nil {
		return err
	}
	res.SkippedBy = skipped
	for _, n := range skipped {
		res.Skipped += n
	}
	res.Elapsed = time.Since(begin).Seconds()
	if f := c.String("per-job"); f != "" {
		if err := writePerJob(f, res.PerJob); err != nil {
			return err
		}
	}
	if cfg.Progress != nil {
		cfg.Progress(res.Jobs, res.Jobs)
		fmt.Fprintln(c.App.ErrWriter)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		return enc.Encode(res)
	}
	printSim(c.App.Writer, c.String("trace"), res)
	return nil
}

// hybridConfig reads the QPU side of a replay from c's flags into cfg.
func hybridConfig(c *cli.Context, jobs []swf.SimJob, cfg *sim.Config) error {
	file, gen := c.String("qpu-jobs"), c.IsSet("qpu-gen")
	if file != "" && gen {
		return cliapp.UsageErr(fmt.Errorf("--qpu-jobs and --qpu-gen both given: read a hybrid workload or generate one, not both"))
	}
	if c.IsSet("qpu-frac") && (!gen || c.Float64("qpu-frac") < 0 || c.Float64("qpu-frac") > 1) {
		return cliapp.UsageErr(fmt.Errorf("--qpu-frac %g: give a share from 0 to 1, with --qpu-gen", c.Float64("qpu-frac")))
	}
	spec := c.String("qpu")
	if spec == "" && file == "" && !gen {
		return nil
	}
	if spec == "" {
		spec = "qpu0:8"
	}
	pools, err := sim.ParseBackends(spec)
	if err != nil {
		return cliapp.UsageErr(fmt.Errorf("--qpu: %w", err))
	}
	cfg.QPUs = pools
	switch {
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("--qpu-jobs: %w", err)
		}
		defer f.Close()
		cfg.Hybrid, err = sim.ParseHybrid(f, file, pools)
		if err != nil {
			return cliapp.UsageErr(err)
		}
	case gen:
		cfg.Hybrid = sim.GenHybrid(jobs, pools, c.Uint64("qpu-gen"), c.Float64("qpu-frac"))
	}
	return nil
}

func writePerJob(path string, jobs []sim.JobResult) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--per-job: %w", err)
	}
	w := csv.NewWriter(f)
	w.Write([]string{"id", "submit", "start", "end", "units"})
	for _, j := range jobs {
		w.Write([]string{strconv.FormatInt(j.ID, 10), strconv.FormatInt(j.Submit, 10), strconv.FormatInt(j.Start, 10), strconv.FormatInt(j.End, 10), strconv.Itoa(j.Units)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("--per-job: %w", err)
	}
	return f.Close()
}

func printSim(w io.Writer, trace string, r sim.Result) {
	fmt.Fprintf(w, "trace            %s\n", trace)
	fmt.Fprintf(w, "policy           %s (walltime: %s estimates)\n", r.Policy, r.Estimate)
	fmt.Fprintf(w, "machine          %d units\n", r.Units)
	fmt.Fprintf(w, "jobs simulated   %d\n", r.Jobs)
	skip := fmt.Sprintf("%d", r.Skipped)
	if r.Skipped > 0 {
		var parts []string
		keys := make([]string, 0, len(r.SkippedBy))
		for k := range r.SkippedBy {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%d %s", r.SkippedBy[k], k))
		}
		skip += " (" + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintf(w, "jobs skipped     %s\n", skip)
	if r.Resvs > 0 {
		fmt.Fprintf(w, "reservations     %d\n", r.Resvs)
	}
	fmt.Fprintf(w, "timed out        %d\n", r.TimedOut)
	fmt.Fprintf(w, "makespan         %d s (%.1f days)\n", r.Makespan, float64(r.Makespan)/86400)
	fmt.Fprintf(w, "utilization      %.4f\n", r.Utilization)
	fmt.Fprintf(w, "wait mean        %.0f s\n", r.MeanWait)
	fmt.Fprintf(w, "wait median      %.0f s\n", r.MedianWait)
	fmt.Fprintf(w, "wait max         %d s\n", r.MaxWait)
	fmt.Fprintf(w, "bounded slowdown %.2f (mean, tau 10 s)\n", r.MeanBSLD)
	for _, q := range r.QPU {
		fmt.Fprintf(w, "QPU %-12s %d slots, %d QPU jobs completed, %d cancelled, %.0f device s, utilization %.4f\n",
			q.Backend, q.Slots, q.Completed, q.Cancelled, q.DeviceSecs, q.Utilization)
		for _, u := range q.Users {
			fmt.Fprintf(w, "  %-14s %6d QPU jobs %10.0f device s  share %.4f\n", u.User, u.Jobs, u.DeviceSecs, u.Share)
		}
	}
	fmt.Fprintf(w, "elapsed          %.2f s\n", r.Elapsed)
}
