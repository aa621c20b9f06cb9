package instance

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/internal/hostlist"
	"github.com/strata-hpc/strata/internal/signame"
	"github.com/strata-hpc/strata/qpu"
	"github.com/strata-hpc/strata/resv"
	"github.com/strata-hpc/strata/timeline"
)

var update = flag.Bool("update", false, "rewrite the golden scenario files in testdata/")

// TestScenarios runs the scripts in testdata/*.txt. Each line is a command;
// the lines starting with "> " after it are what the command printed: the
// core's decisions and the reasons it gives. Run with -update to rewrite
// them after a deliberate change, and read the diff.
//
// Commands:
//
//	machine nodes=HOSTLIST [qpu=NAME:N,...] [policy=P] [grace=S] [default=S] [max=S] [maxjobs=N]
//	at T submit USER [n=N] [nodes=HOSTLIST] [t=S] [resv=R] [begin=T] [afterok=ID,..]
//	         [afterany=..] [afternotok=..] [hold] [requeue] [urgency=N] [qpu=NAME:N] [child] [path=P]
//	         [warn=SIG@S]  (send SIG S seconds before the walltime ends) [deadline=T]
//	         [name=NAME] [singleton]  (start once no earlier job of the name and user is left)
//	at T exit ID [code=C] [signal=SIG] [lost]
//	at T cancel USER ID | at T hold USER ID | at T release USER ID | at T move USER ID RESV
//	at T estimate USER [the options of submit]  (when it would start: sbatch --test-only)
//	at T walltime USER ID [+-]S         (a new walltime, or a change to it; pending or running)
//	at T rename USER ID NAME            (a new name, pending or running)
//	at T signal USER ID SIG             (send a running job a signal: USR1, SIGTERM, 10)
//	at T tick
//	at T resv NAME start=T end=T (n=N|nodes=HOSTLIST) [users=a,b] [overlap=kill] [requeue] [grace=S]
//	at T resv ... maint                 (a maintenance reservation)
//	at T resvupdate NAME [start=T] [end=T] [nodes=HOSTLIST] [adduser=..] [removeuser=..] [dry]
//	at T plan dur=S (n=N|nodes=HOSTLIST) [overlap=kill] [maint] [count=N]
//	at T usage [PATH]                   (nodes by what holds them at T)
//	at T marked NAME                    (running jobs marked to die at its start)
//	at T maintwait NAME                 (the jobs a maintenance window in drain mode waits for)
//	at T rmresv NAME
//	at T down HOSTLIST REASON... | at T up HOSTLIST
//	at T drain USER HOSTLIST REASON... | at T undrain USER HOSTLIST  (HOSTLIST "-": none)
//	nodes                               (the nodes down or drained)
//	show ID | jobs [PATH] | resvs
//	why ID                              (a pending job's Wait, as data)
//
// QPU inputs and views (machine ... qhb=S sets the executor heartbeat
// timeout; resv ... qpu=NAME:N gives a reservation slots):
//
//	at T qsubmit USER PATH BACKEND [shots=N] [name=X] [key=K]
//	at T qcancel USER QID
//	at T qregister EXEC BACKEND | at T qbeat EXEC BACKEND [job=QID]
//	at T qpull EXEC BACKEND             (hand EXEC the next QPU job)
//	at T qrun EXEC BACKEND ms=N         (qpull, then qreport it done)
//	at T qreport EXEC QID ms=N [err=WHY]
//	at T qrevoke PATH [backend=B] [reason=WHY] [as=USER]
//	at T qmaint BACKEND on|off [as=USER]
//	qsessions | qjobs                   (the QPU scheduler's records)
//
// USER "admin" acts as an admin.
func TestScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scenarios in testdata/")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			s := &scenario{t: t, file: f}
			for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
				if strings.HasPrefix(line, "> ") || line == ">" {
					continue
				}
				out.WriteString(line + "\n")
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				for _, o := range s.run(line) {
					out.WriteString(strings.TrimRight("> "+o, " ") + "\n")
				}
				for _, e := range s.checkWaits() {
					t.Errorf("%s: after %q: %s", f, line, e)
				}
			}
			s.checkReplay()
			if *update {
				if err := os.WriteFile(f, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got := out.String(); got != string(data) {
				t.Errorf("scenario %s differs (run with -update and read the diff):\n%s", f, diff(string(data), got))
			}
		})
	}
}

func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, a, b)
		}
	}
	return ""
}

type scenario struct {
	t   *testing.T
	in  *Instance
	now Time // of the latest "at"
	// cfg is the machine's, and log every input stepped since, for
	// TestStepReplay.
	cfg     Config
	log     []logged
	effects []string // every effect printed since the machine was made
	file    string
}

// logged is one input as a driver logs it: the time and the value.
type logged struct {
	now Time
	in  Input
	err string // what it returned
}

// step is how the scenarios drive the core: through Step, logged.
func (s *scenario) step(now Time, x Input) (Output, error) {
	o, err := s.in.Step(now, x)
	l := logged{now: now, in: x}
	if err != nil {
		l.err = err.Error()
	}
	s.log = append(s.log, l)
	return o, err
}

// checkWaits checks that every pending job's Wait, in every instance of
// the tree, is true now: what it names exists and is as it says, and a job
// waiting for resources could not start now.
func (s *scenario) checkWaits() []string {
	if s.in == nil {
		return nil
	}
	var errs []string
	for _, path := range sortedPaths(s.in.sh.insts) {
		in := s.in.sh.insts[path]
		var order []JobID
		in.Pending(func(id JobID, _ Time) bool { order = append(order, id); return true })
		for i, id := range order {
			j, _ := s.in.Job(id)
			if e := checkWait(in, s.now, j, i+1); e != "" {
				errs = append(errs, fmt.Sprintf("job %d (%s): %s", id, j.Reason, e))
			}
		}
	}
	return errs
}

func sortedPaths(m map[string]*Instance) []string {
	var out []string
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func checkWait(in *Instance, now Time, j Job, pos int) string {
	w := j.Wait
	switch {
	case w == nil:
		return "no Wait"
	case w.Position != pos:
		return fmt.Sprintf("position %d, queue says %d", w.Position, pos)
	}
	planned := func(id JobID) bool {
		o, ok := in.Job(id)
		return ok && o.State == Pending && o.PlannedStart != 0
	}
	if j.Spec.Singleton && !j.Spec.Hold && w.Kind != WaitDependency {
		for id := JobID(1); id < j.ID; id++ {
			if o, ok := in.Job(id); ok && !o.State.Final() && sameSingleton(&o, &j) {
				return fmt.Sprintf("a singleton waiting for %s while job %d of its name is %s", w.Kind, id, o.State)
			}
		}
	}
	switch w.Kind {
	case WaitNone:
		return "wait kind none after a pass"
	case WaitHold:
		if !j.Spec.Hold {
			return "kind hold, but not held"
		}
	case WaitDependency:
		if len(w.Jobs) == 0 {
			return "kind dependency, but no job named"
		}
		for _, id := range w.Jobs {
			o, ok := in.Job(id)
			// A singleton waits for an earlier job of its name and user.
			single := ok && j.Spec.Singleton && id < j.ID && sameSingleton(&o, &j)
			if !ok || o.State.Final() || !single && !dependsOn(&j, id) {
				return fmt.Sprintf("waits for job %d, which is not an unmet dependency", id)
			}
		}
	case WaitBegin:
		if w.Until != j.Spec.Begin || w.Until <= now {
			return fmt.Sprintf("waits for its begin time %d, begin %d, now %d", w.Until, j.Spec.Begin, now)
		}
	case WaitOrder, WaitPriority:
		if len(w.Jobs) == 0 {
			return "waits for jobs with priority, but none named"
		}
		for _, id := range w.Jobs {
			if !planned(id) {
				return fmt.Sprintf("names job %d, which holds no planned start", id)
			}
		}
	case WaitNodes, WaitQPU, WaitReservation:
		if w.Until != j.PlannedStart || w.Until <= now {
			return fmt.Sprintf("waits until %d, planned %d, now %d", w.Until, j.PlannedStart, now)
		}
		for _, id := range w.Jobs {
			o, ok := in.Job(id)
			if !ok || o.State != Running && !planned(id) {
				return fmt.Sprintf("names job %d, which is neither running nor planned", id)
			}
		}
		if w.Kind == WaitReservation && (in.resv == nil || in.resv.Name != w.Resv || in.resv.Start != w.Until) {
			return fmt.Sprintf("waits for reservation %q to start at %d, which is not its instance's", w.Resv, w.Until)
		}
		if w.Kind == WaitQPU && j.Spec.Slots[w.Backend] == 0 {
			return fmt.Sprintf("waits for QPU %q, which it does not use", w.Backend)
		}
		if w.Kind == WaitNodes && len(w.Jobs) == 0 && w.Resv == "" {
			return "waits for nodes, but names nothing that holds them"
		}
		// It really cannot start now.
		tl := in.Timeline()
		if err := tl.Remove(spanOf(j.ID)); err != nil {
			return "planned, but has no span"
		}
		if t := max(now, tl.Origin(), j.Spec.Begin); t == now {
			if _, ok := tl.Fits(in.request(&j), now, in.hold(&j)); ok {
				return "waits for resources, but fits now"
			}
		}
	}
	return ""
}

// checkReplay is TestStepReplay for each scenario: the inputs it logged,
// stepped into a fresh tree of the same machine, give the same effects in
// the same order and the same state: every job's record and story, every
// reservation, every QPU job and session, the next wake.
func (s *scenario) checkReplay() {
	if s.in == nil || len(s.log) == 0 {
		return
	}
	re, err := New(s.cfg)
	if err != nil {
		s.t.Fatalf("%s: replay: %v", s.file, err)
	}
	var effects []string
	for i, l := range s.log {
		_, err := re.Step(l.now, l.in)
		if got := fmt.Sprint(err); err == nil && l.err != "" || err != nil && got != l.err {
			s.t.Errorf("%s: replayed input %d (%T at %d) returned %v, first %q", s.file, i, l.in, l.now, err, l.err)
		}
		for _, e := range re.Ready().Effects {
			effects = append(effects, effectLine(e))
		}
	}
	if !slices.Equal(effects, s.effects) {
		s.t.Errorf("%s: replaying %d inputs gave other effects:\n%s", s.file, len(s.log), diff(strings.Join(s.effects, "\n"), strings.Join(effects, "\n")))
	}
	if a, b := stateDump(s.in), stateDump(re); a != b {
		s.t.Errorf("%s: replaying %d inputs gave another state:\n%s", s.file, len(s.log), diff(a, b))
	}
}

// stateDump prints a tree's whole state, in a stable order.
func stateDump(in *Instance) string {
	var b strings.Builder
	jobs, _ := in.TreeJobsAfter(0, in.NumJobs()+1, nil)
	for _, j := range jobs {
		fmt.Fprintf(&b, "%s spec=%+v start=%d end=%d exit=%d/%s term=%+v requeues=%d\n", jobLine(j), j.Spec, j.Start, j.End, j.ExitCode, j.Signal, j.Term, j.Requeues)
		if j.Wait != nil {
			fmt.Fprintf(&b, "  %s\n", waitLine(*j.Wait))
		}
		for _, e := range j.Events {
			fmt.Fprintf(&b, "  %d %s: %s\n", e.Time, e.State, e.Reason)
		}
	}
	for _, r := range in.Resvs() {
		fmt.Fprintf(&b, "resv %+v %s %s [%d,%d) %v %v killed=%v run=%d/%d\n", r.Spec, r.Name, r.State, r.Start, r.End, r.NodeNames, r.Users, r.Killed, r.JobsRun, r.NodeSecs)
	}
	for _, j := range in.QPU().Jobs(nil) {
		fmt.Fprintf(&b, "%+v\n", j)
	}
	for _, ss := range in.QPU().Sessions() {
		fmt.Fprintf(&b, "%+v\n", ss)
	}
	w, ok := in.NextWake()
	fmt.Fprintf(&b, "wake %d %v\n", w, ok)
	return b.String()
}

func actor(u string) Actor { return Actor{User: u, Admin: u == "admin"} }

func kv(args []string) (map[string]string, []string) {
	m := map[string]string{}
	var pos []string
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			m[k] = v
		} else if a == "hold" || a == "requeue" || a == "child" || a == "lost" || a == "maint" || a == "dry" || a == "singleton" {
			m[a] = "true"
		} else {
			pos = append(pos, a)
		}
	}
	return m, pos
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

func (s *scenario) run(line string) (out []string) {
	defer func() {
		if r := recover(); r != nil {
			out = append(out, fmt.Sprintf("PANIC: %v", r))
		}
	}()
	f := strings.Fields(line)
	switch f[0] {
	case "machine":
		m, _ := kv(f[1:])
		nodes, err := hostlist.Parse(m["nodes"])
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		cfg := Config{Nodes: nodes}
		if q := m["qpu"]; q != "" {
			for _, p := range strings.Split(q, ",") {
				n, c, _ := strings.Cut(p, ":")
				cfg.Pools = append(cfg.Pools, timeline.Pool{Name: n, Size: atoi(c)})
			}
		}
		if p := m["policy"]; p != "" {
			pol, err := ParsePolicy(p)
			if err != nil {
				return []string{"error: " + err.Error()}
			}
			cfg.Policy = pol
		}
		if g := m["grace"]; g != "" {
			cfg.KillGrace = Duration(atoi(g))
		}
		if d := m["default"]; d != "" {
			cfg.DefaultWalltime = Duration(atoi(d))
		}
		if v := m["maxjobs"]; v != "" {
			cfg.MaxJobsPerUser = atoi(v)
		}
		if d := m["max"]; d != "" {
			cfg.MaxWalltime = Duration(atoi(d))
		}
		if d := m["qhb"]; d != "" {
			cfg.QPUHeartbeatTimeout = Duration(atoi(d))
		}
		in, err := New(cfg)
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		s.checkReplay()
		s.in, s.cfg, s.log, s.effects = in, cfg, nil, nil
		return nil
	case "show":
		j, ok := s.in.Job(JobID(atoi(f[1])))
		if !ok {
			return []string{"no such job"}
		}
		out = append(out, jobLine(j))
		for _, e := range j.Events {
			out = append(out, fmt.Sprintf("  %d %s: %s", e.Time, e.State, e.Reason))
		}
		return out
	case "why":
		j, ok := s.in.Job(JobID(atoi(f[1])))
		if !ok || j.Wait == nil {
			return []string{"no wait"}
		}
		return []string{waitLine(*j.Wait)}
	case "jobs":
		path := "root"
		if len(f) > 1 {
			path = f[1]
		}
		c, ok := s.in.Child(path)
		if !ok {
			return []string{"no instance " + path}
		}
		for _, j := range c.Jobs(nil) {
			out = append(out, jobLine(j))
		}
		return out
	case "nodes":
		for _, n := range s.in.NodeStates() {
			if !n.Out() {
				continue
			}
			line := n.Name
			if n.Down {
				line += fmt.Sprintf(" down since %d (%s)", n.DownSince, n.DownReason)
			}
			if n.Drained {
				line += fmt.Sprintf(" drained by %s since %d (%s)", n.DrainedBy, n.DrainSince, n.DrainReason)
			}
			out = append(out, line)
		}
		if len(out) == 0 {
			out = []string{"all nodes up"}
		}
		return out
	case "resvs":
		for _, r := range s.in.Resvs() {
			out = append(out, fmt.Sprintf("%s %s [%d,%d) %s users=%s killed=%v", r.Name, r.State, r.Start, r.End,
				hostlist.Format(r.NodeNames), strings.Join(r.Users, ","), r.Killed))
		}
		return out
	case "qsessions":
		for _, ss := range s.in.QPU().Sessions() {
			st := "open"
			if !ss.Open() {
				st = fmt.Sprintf("closed at %d: %s", ss.Closed/1000, ss.Reason)
			}
			out = append(out, fmt.Sprintf("session %s slots=%d vrun=%.3f users=%s %s", ss.Key, ss.Slots, ss.VRun, strings.Join(ss.Users, ","), st))
		}
		return out
	case "qjobs":
		for _, j := range s.in.QPU().Jobs(nil) {
			out = append(out, qjobLine(j))
		}
		return out
	case "at":
		now := Time(atoi(f[1]))
		s.now = now
		out = s.at(now, f[2], f[3:])
		rd := s.in.Ready()
		for _, e := range rd.Effects {
			out = append(out, effectLine(e))
			s.effects = append(s.effects, effectLine(e))
		}
		for _, a := range rd.QPU.Aborts {
			out = append(out, fmt.Sprintf("abort qpu job %d on %s", a.Job, a.Executor))
		}
		for _, b := range rd.QPU.Wake {
			out = append(out, b+" has work for an idle executor")
		}
		if len(rd.Nodes) > 0 {
			out = append(out, "node records changed: "+strings.Join(rd.Nodes, ","))
		}
		return out
	}
	return []string{"unknown command " + f[0]}
}

func (s *scenario) at(now Time, cmd string, args []string) []string {
	in := s.in
	m, pos := kv(args)
	errOut := func(err error) []string {
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		return nil
	}
	errOut2 := func(_ Output, err error) []string { return errOut(err) }
	switch cmd {
	case "tick":
		_, err := s.step(now, Tick{})
		return errOut(err)
	case "submit", "estimate":
		spec := Spec{Name: m["name"], Resv: m["resv"], Hold: m["hold"] == "true", Requeue: m["requeue"] == "true", Child: m["child"] == "true", Singleton: m["singleton"] == "true"}
		if v := m["n"]; v != "" {
			spec.Nodes = atoi(v)
		}
		if v := m["nodes"]; v != "" {
			names, err := hostlist.Parse(v)
			if err != nil {
				return errOut(err)
			}
			spec.NodeList = names
		}
		if v := m["t"]; v != "" {
			spec.Walltime = Duration(atoi(v))
		}
		if v := m["begin"]; v != "" {
			spec.Begin = Time(atoi(v))
		}
		if v := m["urgency"]; v != "" {
			spec.Urgency = atoi(v)
		}
		if v := m["deadline"]; v != "" {
			spec.Deadline = Time(atoi(v))
		}
		if v := m["warn"]; v != "" {
			name, before, _ := strings.Cut(v, "@")
			sig, err := signame.Parse(name)
			if err != nil {
				return errOut(err)
			}
			spec.Warn = Warning{Signal: sig, Before: Duration(atoi(before))}
		}
		for kind, key := range map[DepKind]string{AfterOK: "afterok", AfterAny: "afterany", AfterNotOK: "afternotok"} {
			if v := m[key]; v != "" {
				for _, id := range strings.Split(v, ",") {
					spec.Deps = append(spec.Deps, Dep{Kind: kind, Job: JobID(atoi(id))})
				}
			}
		}
		if q := m["qpu"]; q != "" {
			spec.Slots = map[string]int{}
			for _, p := range strings.Split(q, ",") {
				n, c, _ := strings.Cut(p, ":")
				spec.Slots[n] = atoi(c)
			}
		}
		path := "root"
		if p := m["path"]; p != "" {
			path = p
		}
		if cmd == "estimate" {
			e, err := in.Estimate(now, actor(pos[0]), path, spec)
			if err != nil {
				return errOut(err)
			}
			out := fmt.Sprintf("would start at %d on %s", e.Start, hostlist.Format(e.Nodes))
			if e.Note != "" {
				out += "; " + e.Note
			}
			return []string{out}
		}
		o, err := s.step(now, Submit{Who: actor(pos[0]), Path: path, Spec: spec})
		if err != nil {
			return errOut(err)
		}
		return []string{fmt.Sprintf("job %d submitted", o.Job)}
	case "exit":
		e := Exit{Signal: m["signal"], Lost: m["lost"] == "true"}
		if v := m["code"]; v != "" {
			e.Code = atoi(v)
		}
		return errOut2(s.step(now, Exited{Job: JobID(atoi(pos[0])), Exit: e}))
	case "cancel":
		return errOut2(s.step(now, Cancel{Who: actor(pos[0]), Job: JobID(atoi(pos[1]))}))
	case "signal":
		sig, err := signame.Parse(pos[2])
		if err != nil {
			return errOut(err)
		}
		return errOut2(s.step(now, Signal{Who: actor(pos[0]), Job: JobID(atoi(pos[1])), Signal: sig}))
	case "down", "up":
		var names []string
		if pos[0] != "-" {
			var err error
			if names, err = hostlist.Parse(pos[0]); err != nil {
				return errOut(err)
			}
		}
		if cmd == "up" {
			return errOut2(s.step(now, NodesUp{Nodes: names}))
		}
		return errOut2(s.step(now, NodesDown{Nodes: names, Reason: strings.Join(pos[1:], " ")}))
	case "drain", "undrain":
		var names []string
		if pos[1] != "-" {
			var err error
			if names, err = hostlist.Parse(pos[1]); err != nil {
				return errOut(err)
			}
		}
		if cmd == "undrain" {
			return errOut2(s.step(now, Undrain{Who: actor(pos[0]), Nodes: names}))
		}
		return errOut2(s.step(now, Drain{Who: actor(pos[0]), Nodes: names, Reason: strings.Join(pos[2:], " ")}))
	case "hold", "release":
		h := cmd == "hold"
		return errOut2(s.step(now, UpdateJob{Who: actor(pos[0]), Job: JobID(atoi(pos[1])), Change: Update{Hold: &h}}))
	case "rename":
		name := pos[2]
		return errOut2(s.step(now, UpdateJob{Who: actor(pos[0]), Job: JobID(atoi(pos[1])), Change: Update{Name: &name}}))
	case "walltime":
		u := Update{Walltime: Duration(atoi(pos[2]))}
		if c := pos[2][0]; c == '+' || c == '-' {
			u = Update{AddWalltime: Duration(atoi(pos[2]))}
		}
		return errOut2(s.step(now, UpdateJob{Who: actor(pos[0]), Job: JobID(atoi(pos[1])), Change: u}))
	case "move":
		r := ""
		if len(pos) > 2 {
			r = pos[2]
		}
		return errOut2(s.step(now, UpdateJob{Who: actor(pos[0]), Job: JobID(atoi(pos[1])), Change: Update{Resv: &r}}))
	case "resv":
		spec := resv.Spec{Name: pos[0], Start: Time(atoi(m["start"])), End: Time(atoi(m["end"])), RequeueKilled: m["requeue"] == "true", Maint: m["maint"] == "true"}
		if v := m["n"]; v != "" {
			spec.Nodes = atoi(v)
		}
		if v := m["nodes"]; v != "" {
			names, err := hostlist.Parse(v)
			if err != nil {
				return errOut(err)
			}
			spec.NodeList = names
		}
		if v := m["users"]; v != "" {
			spec.Users = strings.Split(v, ",")
		}
		if v := m["grace"]; v != "" {
			spec.Grace = Duration(atoi(v))
		}
		if m["overlap"] == "kill" {
			spec.Overlap = resv.Kill
		}
		if q := m["qpu"]; q != "" {
			spec.Slots = map[string]int{}
			for _, p := range strings.Split(q, ",") {
				n, c, _ := strings.Cut(p, ":")
				spec.Slots[n] = atoi(c)
			}
		}
		who := "admin"
		if v := m["as"]; v != "" {
			who = v
		}
		if m["dry"] == "true" {
			p, err := in.PlanResv(spec)
			if err != nil {
				return errOut(err)
			}
			return []string{fmt.Sprintf("plan %s on %s kill=%v wait=%v effective=%d", spec.Name, hostlist.Format(in.names(p.Nodes)), p.Kill, p.Wait, p.Effective)}
		}
		o, err := s.step(now, AddResv{Who: actor(who), Spec: spec})
		if err != nil {
			return errOut(err)
		}
		r := o.Resv
		return []string{fmt.Sprintf("resv %s on %s", r.Name, hostlist.Format(r.NodeNames))}
	case "resvupdate":
		var u ResvUpdate
		if v := m["start"]; v != "" {
			t := Time(atoi(v))
			u.Start = &t
		}
		if v := m["end"]; v != "" {
			t := Time(atoi(v))
			u.End = &t
		}
		if v := m["nodes"]; v != "" {
			names, err := hostlist.Parse(v)
			if err != nil {
				return errOut(err)
			}
			u.NodeList = names
		}
		if v := m["adduser"]; v != "" {
			u.AddUsers = strings.Split(v, ",")
		}
		if v := m["removeuser"]; v != "" {
			u.RemoveUsers = strings.Split(v, ",")
		}
		who := "admin"
		if v := m["as"]; v != "" {
			who = v
		}
		o, err := s.step(now, UpdateResv{Who: actor(who), Name: pos[0], Change: u, DryRun: m["dry"] == "true"})
		if err != nil {
			return errOut(err)
		}
		r, plan := o.Resv, o.Plan
		return []string{fmt.Sprintf("resv %s [%d,%d) on %s users=%s kill=%v", r.Name, r.Start, r.End, hostlist.Format(r.NodeNames), strings.Join(r.Users, ","), plan.Kill)}
	case "plan":
		spec := resv.Spec{Name: "plan", Start: now, End: now + Time(atoi(m["dur"])), Maint: m["maint"] == "true"}
		if v := m["n"]; v != "" {
			spec.Nodes = atoi(v)
		}
		if v := m["nodes"]; v != "" {
			names, err := hostlist.Parse(v)
			if err != nil {
				return errOut(err)
			}
			spec.NodeList = names
		}
		if m["overlap"] == "kill" {
			spec.Overlap = resv.Kill
		}
		count := 5
		if v := m["count"]; v != "" {
			count = atoi(v)
		}
		project := 0
		if v := m["project"]; v != "" {
			project = atoi(v)
		}
		ws, err := in.PlanWindows(spec, now, count, project)
		if err != nil {
			return errOut(err)
		}
		var out []string
		for _, w := range ws {
			out = append(out, fmt.Sprintf("window [%d,%d) on %s kill=%v lost=%.2f node-h delayed=%v", w.Start, w.End, hostlist.Format(w.Nodes), w.Kill, w.NodeHoursLost, w.Delayed))
		}
		if len(out) == 0 {
			out = []string{"no window"}
		}
		return out
	case "usage":
		path := "root"
		if len(pos) > 0 {
			path = pos[0]
		}
		c, ok := in.Child(path)
		if !ok {
			return []string{"no instance " + path}
		}
		nodes, _ := c.Usage(now)
		var out []string
		var names []string
		key := func(u NodeUse) string {
			switch {
			case u.Maint && u.Job != 0:
				return fmt.Sprintf("maint %s (job %d still on it)", u.Resv, u.Job)
			case u.Maint:
				return "maint " + u.Resv
			case u.Job != 0:
				return fmt.Sprintf("job %d", u.Job)
			case u.Resv != "":
				return "reserved " + u.Resv
			}
			return "free"
		}
		for i, u := range nodes {
			names = append(names, u.Name)
			if i+1 == len(nodes) || key(nodes[i+1]) != key(u) {
				out = append(out, hostlist.Format(names)+": "+key(u))
				names = nil
			}
		}
		return out
	case "marked":
		return []string{fmt.Sprintf("marked for %s: %v", pos[0], in.MarkedFor(pos[0]))}
	case "maintwait":
		t, ids := in.MaintWait(pos[0])
		return []string{fmt.Sprintf("%s waits for %v until %d", pos[0], ids, t)}
	case "qsubmit":
		shots := 0
		if v := m["shots"]; v != "" {
			shots = atoi(v)
		}
		o, err := s.step(now, QPUSubmit{Who: actor(pos[0]), Path: pos[1], Backend: pos[2], Job: qpu.Job{Name: m["name"], Key: m["key"], Shots: shots}})
		if err != nil {
			return errOut(err)
		}
		return []string{fmt.Sprintf("qpu job %d submitted", o.QPUJob)}
	case "qcancel":
		return errOut2(s.step(now, QPUCancel{Who: actor(pos[0]), Job: qpu.JobID(atoi(pos[1]))}))
	case "qregister":
		return errOut2(s.step(now, QPURegister{Executor: pos[0], Backend: pos[1]}))
	case "qbeat":
		job := 0
		if v := m["job"]; v != "" {
			job = atoi(v)
		}
		o, err := s.step(now, QPUHeartbeat{Executor: pos[0], Backend: pos[1], Job: qpu.JobID(job)})
		if err != nil {
			return errOut(err)
		}
		if o.Abort {
			return []string{"let go of it"}
		}
		return nil
	case "qpull":
		o, err := s.step(now, QPUPull{Executor: pos[0], Backend: pos[1]})
		t, ok := o.Task, o.Pulled
		if err != nil {
			return errOut(err)
		}
		if !ok {
			return []string{"no qpu job"}
		}
		j, _ := in.QPU().Job(t.Job)
		return []string{fmt.Sprintf("qpu job %d (%s, %s) to %s, attempt %d", t.Job, j.User, j.Session, pos[0], t.Attempt)}
	case "qrun":
		o, err := s.step(now, QPUPull{Executor: pos[0], Backend: pos[1]})
		t, ok := o.Task, o.Pulled
		if err != nil || !ok {
			return append(errOut(err), "no qpu job")
		}
		j, _ := in.QPU().Job(t.Job)
		if _, err := s.step(now, QPUReport{Executor: pos[0], Job: t.Job, Outcome: qpu.Outcome{ExecMS: int64(atoi(m["ms"]))}}); err != nil {
			return errOut(err)
		}
		return []string{fmt.Sprintf("qpu job %d (%s, %s) ran %sms on %s", t.Job, j.User, j.Session, m["ms"], pos[0])}
	case "qreport":
		o := qpu.Outcome{ExecMS: int64(atoi(m["ms"])), Err: m["err"]}
		return errOut2(s.step(now, QPUReport{Executor: pos[0], Job: qpu.JobID(atoi(pos[1])), Outcome: o}))
	case "qrevoke":
		who := "admin"
		if v := m["as"]; v != "" {
			who = v
		}
		o, err := s.step(now, QPURevoke{Who: actor(who), Path: pos[0], Backend: m["backend"], Reason: strings.ReplaceAll(m["reason"], "_", " ")})
		if err != nil {
			return errOut(err)
		}
		var out []string
		for _, x := range o.Sessions {
			out = append(out, fmt.Sprintf("session %s revoked: %s", x.Key, x.Reason))
		}
		return out
	case "qmaint":
		who := "admin"
		if v := m["as"]; v != "" {
			who = v
		}
		o, err := s.step(now, QPUMaint{Who: actor(who), Backend: pos[0], On: pos[1] == "on", Reason: strings.ReplaceAll(m["reason"], "_", " ")})
		if err != nil {
			return errOut(err)
		}
		return []string{fmt.Sprintf("%s maint=%v", o.Backend.Name, o.Backend.Maint)}
	case "rmresv":
		who := "admin"
		if v := m["as"]; v != "" {
			who = v
		}
		return errOut2(s.step(now, RemoveResv{Who: actor(who), Name: pos[0]}))
	}
	return []string{"unknown command " + cmd}
}

func qjobLine(j qpu.Job) string {
	s := fmt.Sprintf("qpu job %d %s %s@%s %s", j.ID, j.User, j.Session, j.Backend, j.State)
	if j.Start != 0 {
		s += fmt.Sprintf(" start=%d", j.Start/1000)
	}
	if j.End != 0 {
		s += fmt.Sprintf(" end=%d exec=%dms", j.End/1000, j.ExecMS)
	}
	if j.Reason != "" {
		s += ": " + j.Reason
	}
	return s
}

func jobLine(j Job) string {
	nodes := "-"
	if len(j.Nodes) > 0 {
		nodes = hostlist.Format(j.Nodes)
	}
	s := fmt.Sprintf("job %d %s %s %s %s", j.ID, j.Path, j.Spec.User, j.State, nodes)
	if j.PlannedStart != 0 {
		s += fmt.Sprintf(" planned=%d", j.PlannedStart)
	}
	return s + ": " + j.Reason
}

func effectLine(e Effect) string {
	switch e.Kind {
	case StartJob:
		s := fmt.Sprintf("start job %d on %s", e.Job, hostlist.Format(e.Nodes))
		if e.ChildPath != "" {
			s += " as instance " + e.ChildPath
		}
		return s
	case SignalJob:
		return fmt.Sprintf("signal job %d %s: %s", e.Job, SignalName(e.Signal), e.Reason)
	case StartChild, StopChild:
		return fmt.Sprintf("%s %s: %s", e.Kind, e.ChildPath, e.Reason)
	}
	return fmt.Sprint(e)
}

// waitLine prints a Wait's fields, the empty ones left out.
func waitLine(w Wait) string {
	out := "wait " + w.Kind.String()
	if len(w.Jobs) > 0 {
		ids := make([]string, len(w.Jobs))
		for i, id := range w.Jobs {
			ids[i] = strconv.FormatInt(int64(id), 10)
		}
		out += " jobs=" + strings.Join(ids, ",")
	}
	if len(w.Nodes) > 0 {
		out += " nodes=" + hostlist.Format(w.Nodes)
	}
	if w.Resv != "" {
		out += " resv=" + w.Resv
	}
	if w.Backend != "" {
		out += " backend=" + w.Backend
	}
	if w.Until != 0 {
		out += fmt.Sprintf(" until=%d", w.Until)
	}
	return out + fmt.Sprintf(" position=%d", w.Position)
}
