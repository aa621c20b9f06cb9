package cliapp

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
	"github.com/strata-hpc/strata/internal/swf"
	"github.com/strata-hpc/strata/sim"
)

func simCommand() *cli.Command {
	return &cli.Command{
		Name:      "sim",
		Usage:     "replay a workload trace (Standard Workload Format) through the scheduler",
		UsageText: "strata sim --trace FILE.swf[.gz] [--policy easy] [--units N] [--estimate requested|actual] [--resv SPEC]... [--per-job FILE.csv] [--json]",
		Description: "Replays the trace with a virtual clock through the same scheduling core the broker runs.\n" +
			"One SWF processor is one node. --resv injects reservations, e.g.\n" +
			"--resv 'start=+7d,duration=8h,nodes=128,every=7d' (a weekly 8-hour DAT of 128 nodes).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "trace", Usage: "the SWF trace (gzip is read transparently)", Required: true},
			&cli.StringFlag{Name: "policy", Value: "easy", Usage: "fcfs, easy, conservative or hybrid:N"},
			&cli.IntFlag{Name: "units", Usage: "machine size in processors (default: the header's MaxProcs, else MaxNodes)"},
			&cli.StringFlag{Name: "estimate", Value: "requested", Usage: "walltime a job declares: requested (the trace's) or actual (its run time)"},
			&cli.StringSliceFlag{Name: "resv", Usage: "inject a reservation: start=+7d,duration=8h,nodes=128[,every=7d][,until=+90d] (repeatable)"},
			&cli.IntFlag{Name: "limit", Usage: "replay only the first N jobs of the trace"},
			&cli.StringFlag{Name: "per-job", Usage: "write one CSV line per job (id,submit,start,end,units) to this file"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON object"},
		},
		Action: runSim,
	}
}

func runSim(c *cli.Context) error {
	pol, err := instance.ParsePolicy(c.String("policy"))
	if err != nil {
		return usageErr(err)
	}
	est, err := sim.ParseEstimate(c.String("estimate"))
	if err != nil {
		return usageErr(err)
	}
	if c.Int("units") < 0 {
		return usageErr(fmt.Errorf("--units %d: the machine size must be a positive number of processors", c.Int("units")))
	}
	if c.Int("limit") < 0 {
		return usageErr(fmt.Errorf("--limit %d must not be negative", c.Int("limit")))
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
	fmt.Fprintf(w, "elapsed          %.2f s\n", r.Elapsed)
}
