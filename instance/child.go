package instance

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/strata-hpc/strata/timeline"
)

// childPath is the path of the child instance of job j (JobPath).
func childPath(j *Job) string { return JobPath(j.inst.path, j.ID) }

// JobPath is the path of job id of the instance at parent: the parent's
// path and "j" with the job ID (root.j17, root.physics.j42). A child job's
// instance lives there; a plain job holding QPU slots is a session there.
func JobPath(parent string, id JobID) string {
	return parent + ".j" + strconv.FormatInt(int64(id), 10)
}

// JobOfPath is the inverse of JobPath: the job whose path this is.
func JobOfPath(path string) (JobID, bool) {
	i := strings.LastIndexByte(path, '.')
	if i < 0 || !strings.HasPrefix(path[i+1:], "j") {
		return 0, false
	}
	n, err := strconv.ParseInt(path[i+2:], 10, 64)
	return JobID(n), err == nil && n > 0 && JobPath(path[:i], JobID(n)) == path
}

// startChild creates the child instance of child job j on j's nodes and
// slots, lasting until j's walltime ends. Its default walltime is all of
// it, which defaultWalltime cuts to what is left when a job asks.
func (in *Instance) startChild(now Time, j *Job) {
	var pools []timeline.Pool
	for _, name := range sortedKeys(j.Spec.Slots) {
		pools = append(pools, timeline.Pool{Name: name, Size: j.Spec.Slots[name]})
	}
	path := childPath(j)
	if old, ok := in.sh.insts[path]; ok && old.ended {
		delete(in.sh.insts, path) // a requeued child job starts afresh
	}
	c, err := newInstance(Config{
		Path: path, Nodes: j.Nodes, Pools: pools, Policy: in.cfg.Policy,
		DefaultWalltime: j.Spec.Walltime, MaxWalltime: j.Spec.Walltime,
		KillGrace: in.cfg.KillGrace, Origin: j.Start, Horizon: j.Start + Time(j.Spec.Walltime),
	}, in, in.sh)
	if err != nil {
		panic(fmt.Sprintf("instance: child of job %d: %v", j.ID, err))
	}
	c.owner = j.Spec.User
}

// endChild ends the child instance at path after its job ended.
func (in *Instance) endChild(now Time, path string) {
	if c, ok := in.sh.insts[path]; ok && !c.ended {
		c.end(now, "its instance "+path+" ended")
	}
}

// end stops an instance: pending jobs are cancelled, running ones are
// terminated (SIGTERM, SIGKILL after the grace period), and child jobs'
// instances end with them.
func (in *Instance) end(now Time, why string) {
	if in.ended {
		return
	}
	var pend []*Job
	in.queue.Ascend(func(j *Job) bool {
		pend = append(pend, j)
		return true
	})
	for _, j := range pend {
		in.finishPending(now, j, Cancelled, why)
	}
	for _, j := range in.runningByID() {
		if j.Term.EndState == 0 || j.Term.EndState == Timeout {
			j.Term.EndState, j.Term.EndReason = Cancelled, why
		}
		in.terminate(now, j)
	}
	in.ended = true
}

// Children returns the paths of the live child instances of this tree.
func (in *Instance) Children() []string {
	var out []string
	for p, c := range in.sh.insts {
		if c != in && !c.ended {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func fmtTime(t Time) string { return time.Unix(int64(t), 0).UTC().Format(time.RFC3339) }
