package cliapp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/hostlist"
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
		&cli.StringFlag{Name: "nodelist", Aliases: []string{"w"}, Usage: "run on exactly these nodes, a hostlist: node[0-3] (-N, if given, must count them)"},
		&cli.StringFlag{Name: "exclude", Aliases: []string{"x"}, Usage: "never run on these nodes, a hostlist: node[4-5] (not with -w)"},
		&cli.StringFlag{Name: "time", Aliases: []string{"t"}, Value: defaultWalltime,
			Usage: "walltime: 90m, 1h30m, 1d12h, D-HH:MM:SS, HH:MM:SS, MM:SS, or minutes alone (90); default: the instance's"},
		&cli.StringFlag{Name: "name", Usage: "the job's name (default: the command's base name)"},
		&cli.StringFlag{Name: "resv", Usage: "run inside this reservation"},
		&cli.StringFlag{Name: "begin", Usage: "not before this time: " + timeForms},
		&cli.BoolFlag{Name: "hold", Usage: "queue the job held, until 'strata job update ID --release'"},
		&cli.StringFlag{Name: "afterok", Usage: "start after these jobs completed (comma-separated IDs)"},
		&cli.StringFlag{Name: "afterany", Usage: "start after these jobs ended, however (comma-separated IDs)"},
		&cli.StringFlag{Name: "afternotok", Usage: "start after these jobs ended other than completed (comma-separated IDs)"},
		&cli.BoolFlag{Name: "requeue", Usage: "requeue the job if a reservation kills it or its node goes down"},
		&cli.StringSliceFlag{Name: "qpu", Usage: "QPU slots, NAME:SLOTS (repeatable, or comma-separated)"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "stdout file template (%j job ID, %u user, %x name; default strata-%j.out in the working directory)"},
		&cli.StringFlag{Name: "error", Aliases: []string{"e"}, Usage: "stderr file template (default strata-%j.err in the working directory)"},
		&cli.IntFlag{Name: "ntasks", Aliases: []string{"n"}, Usage: "tasks the job runs: recorded, and exported to it as STRATA_NTASKS (the job starts them)"},
		&cli.StringFlag{Name: "chdir", Aliases: []string{"D"}, Usage: "the job's working directory (default: the current one)"},
		&cli.StringFlag{Name: "export", Usage: "environment to pass: ALL (default), NONE, or a comma list of NAME and NAME=VALUE (with ALL: added to all)"},
		&cli.IntFlag{Name: "nice", Usage: "lower the job's priority by N (1-15 make a difference); a negative N raises it (admins only)"},
		&cli.StringFlag{Name: "dependency", Aliases: []string{"d"}, Usage: "Slurm's syntax: afterok:ID[:ID...], afterany:..., afternotok:..., singleton; comma-separated, all must hold"},
		&cli.StringFlag{Name: "array", Aliases: []string{"a"}, Usage: "a job array: task indexes as 1-1000, 1,3,5-9:2, with %N to run at most N at once; each task gets STRATA_ARRAY_TASK_ID, and %A/%a in -o/-e"},
		&cli.StringFlag{Name: "deadline", Usage: "cancel the job if it cannot end by this time (its walltime spent), as sbatch --deadline: " + timeForms},
		&cli.StringFlag{Name: "signal", Usage: "SIG[@SECS]: send the job SIG (USR1, a name or number) SECS seconds (default 60) before its walltime ends, to save its work"},
		&cli.BoolFlag{Name: "verbose", Usage: "say which script directives the command line overrode"},
	}
}

// jobSpec is what the flags of submit and run say, as typed.
type jobSpec struct {
	Nodes                      int
	NodesSet                   bool // -N was given (by a flag or a directive)
	NodeList, Exclude          string
	Time, Name, Resv, Begin    string
	Hold, Requeue              bool
	AfterOK, AfterAny, AfterNo string
	QPU                        []string
	Output, Error              string
	NTasks, Nice               int
	Chdir, Export, Dependency  string
	Array, Signal, Deadline    string
	Command                    []string
}

func readJobSpec(c *cli.Context) jobSpec {
	return jobSpec{
		Nodes: c.Int("nodes"), NodesSet: c.IsSet("nodes"), NodeList: c.String("nodelist"), Exclude: c.String("exclude"), Time: c.String("time"), Name: c.String("name"), Resv: c.String("resv"),
		Begin: c.String("begin"), Hold: c.Bool("hold"), Requeue: c.Bool("requeue"),
		AfterOK: c.String("afterok"), AfterAny: c.String("afterany"), AfterNo: c.String("afternotok"),
		QPU: c.StringSlice("qpu"), Output: c.String("output"), Error: c.String("error"),
		NTasks: c.Int("ntasks"), Nice: c.Int("nice"), Chdir: c.String("chdir"), Export: c.String("export"),
		Dependency: c.String("dependency"), Array: c.String("array"), Signal: c.String("signal"), Deadline: c.String("deadline"),
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
		Command: s.Command, Cwd: jobDir(cwd, s.Chdir), Stdout: s.Output, Stderr: s.Error,
		NTasks: s.NTasks, Nice: s.Nice,
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
	if s.NodeList != "" {
		names, err := hostlist.Parse(s.NodeList)
		if err != nil {
			return r, flagErr("-w/--nodelist", fmt.Errorf("%w: give a hostlist such as node[0-3] or n1,n5", err))
		}
		if s.NodesSet && s.Nodes != len(names) {
			return r, flagErr("-w/--nodelist", fmt.Errorf("%s names %d nodes but -N asks for %d: drop -N, or make the two agree", s.NodeList, len(names), s.Nodes))
		}
		r.Nodes, r.NodeList = len(names), hostlist.Format(names)
	}
	if s.Exclude != "" {
		if s.NodeList != "" {
			return r, flagErr("-x/--exclude", fmt.Errorf("with -w/--nodelist: a job that names its nodes has none to exclude; give one of the two"))
		}
		names, err := hostlist.Parse(s.Exclude)
		if err != nil {
			return r, flagErr("-x/--exclude", fmt.Errorf("%w: give a hostlist such as node[0-3] or n1,n5", err))
		}
		r.Exclude = hostlist.Format(names)
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
	if s.Deadline != "" {
		if r.Deadline, err = parseBegin(s.Deadline, now); err != nil {
			return r, flagErr("--deadline", err)
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
	if s.Dependency != "" {
		d, err := parseDependency(s.Dependency)
		if err != nil {
			return r, flagErr("-d/--dependency", err)
		}
		r.AfterOK = append(r.AfterOK, d.AfterOK...)
		r.AfterAny = append(r.AfterAny, d.AfterAny...)
		r.AfterNotOK = append(r.AfterNotOK, d.AfterNotOK...)
		r.Singleton = d.Singleton
	}
	if s.Array != "" {
		tasks, limit, err := parseArray(s.Array)
		if err != nil {
			return r, flagErr("-a/--array", err)
		}
		r.Array = &api.ArraySpec{Tasks: tasks, Limit: limit}
	}
	if s.Signal != "" {
		if r.Warn, r.WarnBefore, err = parseWarn(s.Signal); err != nil {
			return r, flagErr("--signal", err)
		}
	}
	if s.NTasks < 0 {
		return r, flagErr("-n/--ntasks", fmt.Errorf("%d: give a whole number of tasks from 1", s.NTasks))
	}
	if s.Nice < -api.MaxNice || s.Nice > api.MaxNice {
		return r, flagErr("--nice", fmt.Errorf("%d is out of range: give %d to %d (positive lowers the priority)", s.Nice, -api.MaxNice, api.MaxNice))
	}
	if strings.ContainsRune(s.Chdir, 0) {
		return r, flagErr("-D/--chdir", fmt.Errorf("the directory name contains a NUL byte"))
	}
	if r.QPU, err = parseQPUSlots(s.QPU); err != nil {
		return r, flagErr("--qpu", err)
	}
	for _, f := range []struct{ flag, val string }{{"-o/--output", s.Output}, {"-e/--error", s.Error}} {
		if strings.ContainsRune(f.val, 0) {
			return r, flagErr(f.flag, fmt.Errorf("the file name contains a NUL byte"))
		}
	}
	if r.Env, err = exportEnv(s.Export, environMap(environ)); err != nil {
		return r, flagErr("--export", err)
	}
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
	if c.Command.Name == "submit" { // run, as srun, reads no directives
		if err := applyDirectives(c, cwd); err != nil {
			return api.SubmitRequest{}, err
		}
	}
	s := readJobSpec(c)
	if c.Command.Name == "submit" && len(s.Command) > 0 && !strings.Contains(s.Command[0], "/") && scriptFile(s.Command[0], cwd) != "" {
		// The script whose directives were just read is the one run,
		// not a program of that name in PATH: 'strata submit job.sh'
		// runs ./job.sh, as sbatch and 'strata batch' do.
		s.Command = append([]string(nil), s.Command...)
		s.Command[0] = "./" + s.Command[0]
	}
	if s.Chdir != "" && len(s.Command) > 0 && scriptFile(s.Command[0], cwd) != "" {
		// The script is where it was named, whatever the job's directory.
		s.Command = append([]string(nil), s.Command...)
		s.Command[0] = jobDir(cwd, s.Command[0])
	}
	return s.request(time.Now(), cwd, os.Environ())
}

// jobDir is the job's working directory: dir, made absolute against cwd;
// cwd itself when dir is empty.
func jobDir(cwd, dir string) string {
	if dir == "" {
		return cwd
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(cwd, dir)
	}
	return filepath.Clean(dir)
}

func submitCommand() *cli.Command {
	return &cli.Command{
		Name:      "submit",
		Usage:     "queue a job and print its ID (-W: then wait for it, as sbatch --wait)",
		UsageText: "strata submit [-N NODES | -w HOSTLIST] [-t WALLTIME] [--name NAME] [--resv NAME] [--begin TIME] [--hold] [--afterok IDS] [--afterany IDS] [--afternotok IDS] [--requeue] [--qpu NAME:SLOTS]... [-o FILE] [-e FILE] -- COMMAND [ARGS...]",
		Description: "Queues COMMAND to run in the current directory with the current environment\n" +
			"(all of it) and prints the new job's ID alone on stdout. Output goes to\n" +
			"strata-ID.out and strata-ID.err in the current directory unless -o/-e say otherwise;\n" +
			"strata-ID.err is removed at the end if the job wrote nothing to it.",
		Flags:  append(jobFlags(), queueFlags()...),
		Action: runSubmit,
	}
}

func runSubmit(c *cli.Context) error {
	req, err := submitRequest(c)
	if err != nil {
		return err
	}
	return dialSubmit(c, req)
}
