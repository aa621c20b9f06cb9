package cliapp

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/internal/when"
)

// The simulated device's defaults (as package qpuexec has them).
const (
	defaultSimBase    = 200 * time.Millisecond
	defaultSimPerShot = 100 * time.Microsecond
)

func qpuExecutorCommand() *cli.Command {
	return &cli.Command{
		Name:  "executor",
		Usage: "serve a QPU backend: take its QPU jobs from the broker, run them on the device, report the results",
		UsageText: "strata qpu executor --backend NAME --creds FILE --sim [--sim-base D] [--sim-per-shot D] [--seed N]\n" +
			"   strata qpu executor --backend NAME --creds FILE --command DRIVER [-- DRIVER-ARGS...]",
		Description: "Connects to the broker of --uri (or $STRATA_URI) with executor credentials\n" +
			"(an admin makes them with 'strata user add NAME --executor'; the executor is\n" +
			"known by that NAME), registers for the backend, and runs its QPU jobs one at a\n" +
			"time until SIGINT or SIGTERM. A broker that goes away is waited for.\n\n" +
			"--sim is a simulated device: a state-vector simulator of up to 20 qubits that\n" +
			"runs OpenQASM 2.0 (h, x, y, z, s, sdg, t, tdg, rx, ry, rz, cx, cz, swap, measure)\n" +
			"or the compact form 'h q0; cx q0 q1' (every qubit measured at the end). A job\n" +
			"takes --sim-base plus --sim-per-shot for each shot; its counts are samples drawn\n" +
			"with --seed and the QPU job's ID, so a job gives the same counts wherever it\n" +
			"runs. A circuit it cannot read fails the QPU job, naming the line and why.\n" +
			"--command runs DRIVER for each job instead: it reads the payload on stdin,\n" +
			"the shot count in $STRATA_QPU_SHOTS, and prints {\"counts\": {\"00\": 512, ...}}.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "backend", Aliases: []string{"b"}, Usage: "the QPU backend to serve"},
			&cli.BoolFlag{Name: "sim", Usage: "run a simulated device"},
			&cli.StringFlag{Name: "sim-base", Usage: "with --sim: the time every job takes (200ms, 1s)", DefaultText: "200ms"},
			&cli.StringFlag{Name: "sim-per-shot", Usage: "with --sim: the time each shot takes (100us, 1ms)", DefaultText: "100us"},
			&cli.Int64Flag{Name: "seed", Usage: "with --sim: the seed the samples are drawn with (and the QPU job's ID)", DefaultText: "0"},
			&cli.StringFlag{Name: "command", Usage: "the device driver to run for each job (its arguments after --)"},
		},
		Action: runQPUExecutor,
	}
}

// qpuExecutorFlags are the arguments and flags of qpu executor, as typed.
type qpuExecutorFlags struct {
	Backend                string
	BackendSet             bool
	Sim                    bool
	SimBase, SimPerShot    string
	SimBaseSet, PerShotSet bool
	Seed                   int64
	SeedSet                bool
	Command                string
	CommandSet             bool
	Args                   []string
}

// options turns the flags of qpu executor into QPUExecutorOptions for the
// broker at url with the credentials file creds (Log is left to the
// caller). lookPath finds the driver (exec.LookPath). Errors are usage
// errors that name what to fix.
func (f qpuExecutorFlags) options(url, creds string, lookPath func(string) (string, error)) (QPUExecutorOptions, error) {
	o := QPUExecutorOptions{URL: url, Creds: creds, Backend: f.Backend, Sim: f.Sim, Seed: f.Seed}
	if !f.BackendSet {
		return o, usageErr(fmt.Errorf("--backend: say which QPU backend this executor serves, as in --backend qpu0"))
	}
	if err := parseBackendName(f.Backend); err != nil {
		return o, flagErr("-b/--backend", err)
	}
	if creds == "" {
		return o, usageErr(fmt.Errorf("--creds: give the executor's credentials file (or set $STRATA_CREDS); an admin makes one with 'strata user add NAME --executor'"))
	}
	switch {
	case f.Sim && f.CommandSet:
		return o, usageErr(fmt.Errorf("--sim and --command exclude each other: run a simulated device or a driver, not both"))
	case !f.Sim && !f.CommandSet:
		return o, usageErr(fmt.Errorf("no device: give --sim for a simulated device, or --command DRIVER for a device driver"))
	case len(f.Args) > 0 && !f.CommandSet:
		return o, usageErr(fmt.Errorf("'strata qpu executor' takes arguments only for --command's driver, got %q", f.Args))
	}
	if f.CommandSet {
		if f.Command == "" {
			return o, flagErr("--command", fmt.Errorf("empty: give the device driver's program"))
		}
		if _, err := lookPath(f.Command); err != nil {
			return o, flagErr("--command", fmt.Errorf("%s: no such program, or not executable: give the device driver's path", f.Command))
		}
		o.Command = append([]string{f.Command}, f.Args...)
	}
	o.SimBase, o.SimPerShot = defaultSimBase, defaultSimPerShot
	for _, d := range []struct {
		set  bool
		flag string
		in   string
		out  *time.Duration
	}{{f.SimBaseSet, "--sim-base", f.SimBase, &o.SimBase}, {f.PerShotSet, "--sim-per-shot", f.SimPerShot, &o.SimPerShot}} {
		if !d.set {
			continue
		}
		if !f.Sim {
			return o, usageErr(fmt.Errorf("%s goes with --sim: add --sim, or leave %s out", d.flag, d.flag))
		}
		v, err := when.ParseDuration(d.in)
		if err != nil {
			return o, flagErr(d.flag, err)
		}
		if v == 0 {
			return o, flagErr(d.flag, fmt.Errorf("%q: give a positive duration, as in 200ms or 1us", d.in))
		}
		*d.out = v
	}
	if f.SeedSet && !f.Sim {
		return o, usageErr(fmt.Errorf("--seed goes with --sim: add --sim, or leave --seed out"))
	}
	return o, nil
}

func runQPUExecutor(c *cli.Context) error {
	f := qpuExecutorFlags{
		Backend: c.String("backend"), BackendSet: c.IsSet("backend"),
		Sim: c.Bool("sim"), SimBase: c.String("sim-base"), SimBaseSet: c.IsSet("sim-base"),
		SimPerShot: c.String("sim-per-shot"), PerShotSet: c.IsSet("sim-per-shot"),
		Seed: c.Int64("seed"), SeedSet: c.IsSet("seed"),
		Command: c.String("command"), CommandSet: c.IsSet("command"), Args: c.Args().Slice(),
	}
	u, err := instanceURI(c)
	if err != nil {
		return err
	}
	o, err := f.options(u.String(), connString(c, "creds"), exec.LookPath)
	if err != nil {
		return err
	}
	o.Log = slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
	if RunQPUExecutor == nil {
		return runInBroker(c, "qpu executor")
	}
	ctx, stop := signal.NotifyContext(ctxOf(c), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return RunQPUExecutor(ctx, o)
}
