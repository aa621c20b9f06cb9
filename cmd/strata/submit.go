package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
)

// Defaults of submit and run. Without -t the walltime is left to the
// instance (its default, which inside a batch or alloc is at most what the
// child instance has left).
const (
	defaultNodes    = 1
	defaultWalltime = ""
)

// jobFlags are the flags submit and run share.
func jobFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "nodes", Aliases: []string{"N"}, Value: defaultNodes, Usage: "whole nodes to run on"},
		&cli.StringFlag{Name: "time", Aliases: []string{"t"}, Value: defaultWalltime,
			Usage: "walltime: 90m, 1h30m, 1d12h, D-HH:MM:SS, HH:MM:SS, MM:SS, or minutes alone (90); default: the instance's"},
		&cli.StringFlag{Name: "name", Usage: "the job's name (default: the command's base name)"},
		&cli.StringFlag{Name: "resv", Usage: "run inside this reservation"},
		&cli.StringFlag{Name: "begin", Usage: "not before this time: RFC 3339, now+2h, +30m, 17:00"},
		&cli.BoolFlag{Name: "hold", Usage: "queue the job held, until 'strata job update ID --release'"},
		&cli.StringFlag{Name: "afterok", Usage: "start after these jobs completed (comma-separated IDs)"},
		&cli.StringFlag{Name: "afterany", Usage: "start after these jobs ended, however (comma-separated IDs)"},
		&cli.StringFlag{Name: "afternotok", Usage: "start after these jobs ended other than completed (comma-separated IDs)"},
		&cli.BoolFlag{Name: "requeue", Usage: "requeue the job if a reservation kills it"},
		&cli.StringSliceFlag{Name: "qpu", Usage: "QPU slots, NAME:SLOTS (repeatable, or comma-separated)"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "stdout file template (%j job ID, %u user, %x name; default strata-%j.out in the working directory)"},
		&cli.StringFlag{Name: "error", Aliases: []string{"e"}, Usage: "stderr file template (default strata-%j.err in the working directory)"},
	}
}

// jobSpec is what the flags of submit and run say, as typed.
type jobSpec struct {
	Nodes                      int
	Time, Name, Resv, Begin    string
	Hold, Requeue              bool
	AfterOK, AfterAny, AfterNo string
	QPU                        []string
	Output, Error              string
	Command                    []string
}

func readJobSpec(c *cli.Context) jobSpec {
	return jobSpec{
		Nodes: c.Int("nodes"), Time: c.String("time"), Name: c.String("name"), Resv: c.String("resv"),
		Begin: c.String("begin"), Hold: c.Bool("hold"), Requeue: c.Bool("requeue"),
		AfterOK: c.String("afterok"), AfterAny: c.String("afterany"), AfterNo: c.String("afternotok"),
		QPU: c.StringSlice("qpu"), Output: c.String("output"), Error: c.String("error"),
		Command: c.Args().Slice(),
	}
}

// request turns the flags into a submit request, checking everything that
// can be checked here. cwd and environ (os.Environ's form) are sent with
// the command; now is what relative --begin times are relative to. Errors
// are usage errors naming the flag.
func (s jobSpec) request(now time.Time, cwd string, environ []string) (api.SubmitRequest, error) {
	r := api.SubmitRequest{
		Nodes: s.Nodes, Name: s.Name, Resv: s.Resv, Hold: s.Hold, Requeue: s.Requeue,
		Command: s.Command, Cwd: cwd, Stdout: s.Output, Stderr: s.Error,
	}
	if len(s.Command) == 0 || s.Command[0] == "" {
		return r, usageErr(fmt.Errorf("no command: give the program to run and its arguments after the flags, as in 'strata submit -N 2 -- ./sim input.dat'"))
	}
	if r.Name == "" {
		r.Name = defaultJobName(s.Command[0])
	}
	if s.Nodes < 1 {
		return r, flagErr("-N/--nodes", fmt.Errorf("%d: give a whole number of nodes from 1", s.Nodes))
	}
	var err error
	if s.Time != "" {
		if r.Walltime, err = parseWalltime(s.Time); err != nil {
			return r, flagErr("-t/--time", err)
		}
	}
	if len(s.Name) > 128 {
		return r, flagErr("--name", fmt.Errorf("%d bytes long: at most 128", len(s.Name)))
	}
	if s.Resv != "" {
		if err := parseResvName(s.Resv); err != nil {
			return r, flagErr("--resv", err)
		}
	}
	if s.Begin != "" {
		if r.Begin, err = parseBegin(s.Begin, now); err != nil {
			return r, flagErr("--begin", err)
		}
	}
	for _, d := range []struct {
		flag string
		val  string
		dst  *[]api.JobID
	}{{"--afterok", s.AfterOK, &r.AfterOK}, {"--afterany", s.AfterAny, &r.AfterAny}, {"--afternotok", s.AfterNo, &r.AfterNotOK}} {
		if *d.dst, err = parseJobIDList(d.val); err != nil {
			return r, flagErr(d.flag, err)
		}
	}
	if r.QPU, err = parseQPUSlots(s.QPU); err != nil {
		return r, flagErr("--qpu", err)
	}
	for _, f := range []struct{ flag, val string }{{"-o/--output", s.Output}, {"-e/--error", s.Error}} {
		if strings.ContainsRune(f.val, 0) {
			return r, flagErr(f.flag, fmt.Errorf("the file name contains a NUL byte"))
		}
	}
	r.Env = environMap(environ)
	if err := r.Validate(); err != nil {
		return r, usageErr(err)
	}
	return r, nil
}

// environMap turns os.Environ's NAME=VALUE list into the request's map,
// skipping entries with no name (Windows' "=C:=C:\" and the like). A later
// entry wins, as in os.Getenv.
func environMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(k, 0) {
			continue
		}
		m[k] = v
	}
	return m
}

// defaultJobName is the base name of the program, cut to 128 bytes.
func defaultJobName(prog string) string {
	n := filepath.Base(prog)
	for len(n) > 128 {
		_, size := utf8.DecodeLastRuneInString(n)
		n = n[:len(n)-size]
	}
	return n
}

// submitRequest builds the request of submit and run from the command line.
func submitRequest(c *cli.Context) (api.SubmitRequest, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return api.SubmitRequest{}, fmt.Errorf("cannot tell the working directory to run the job in: %w", err)
	}
	return readJobSpec(c).request(time.Now(), cwd, os.Environ())
}

func submitCommand() *cli.Command {
	return &cli.Command{
		Name:      "submit",
		Usage:     "queue a job and print its ID",
		UsageText: "strata submit [-N NODES] [-t WALLTIME] [--name NAME] [--resv NAME] [--begin TIME] [--hold] [--afterok IDS] [--afterany IDS] [--afternotok IDS] [--requeue] [--qpu NAME:SLOTS]... [-o FILE] [-e FILE] -- COMMAND [ARGS...]",
		Description: "Queues COMMAND to run in the current directory with the current environment\n" +
			"(all of it) and prints the new job's ID alone on stdout. Output goes to\n" +
			"strata-ID.out and strata-ID.err in the current directory unless -o/-e say otherwise;\n" +
			"strata-ID.err is removed at the end if the job wrote nothing to it.",
		Flags:  jobFlags(),
		Action: runSubmit,
	}
}

func runSubmit(c *cli.Context) error {
	req, err := submitRequest(c)
	if err != nil {
		return err
	}
	job, err := dialSubmit(c, req)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.App.Writer, job.ID)
	return nil
}
