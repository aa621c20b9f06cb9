package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/strata-hpc/strata/broker/executor"
)

// Tasks of the built-in executor across a restart. Steps are not
// persisted (see steps.go), so a restarted broker knows none, and their
// tasks must not run on unowned: an agent lists its tasks when it comes
// back and is told to kill them; the built-in executor's tasks leave a
// record in the state directory (tasks/ID.json) from their start until
// their exit is released, and a restarted broker adopts and kills each
// one it finds, so that its exit is taken and released as any task's.

// taskDir holds the records of the built-in executor's running tasks;
// "" when the broker has no state directory.
func (r *Runtime) taskDir() string {
	if r.b.opts.StateDir == "" {
		return ""
	}
	return filepath.Join(r.b.opts.StateDir, "tasks")
}

// recordTask writes the record of a task just started. An agent's task
// (rec.Node set) is its agent's to record.
func (r *Runtime) recordTask(rec executor.Record) error {
	dir := r.taskDir()
	if rec.Node != "" || dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return executor.SaveRecord(filepath.Join(dir, rec.ID+".json"), rec)
}

// forgetTask removes the record of task id, once its exit is released.
func (r *Runtime) forgetTask(id string) {
	dir := r.taskDir()
	if dir == "" {
		return
	}
	if err := os.Remove(filepath.Join(dir, id+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.b.log.Warn("cannot remove a task's record", "task", id, "err", err)
	}
}

// killLeftTasks adopts and kills the tasks an earlier broker's built-in
// executor left running: their steps died with it. Their exits come in as
// any task's and are released there. r.mu must be held.
func (r *Runtime) killLeftTasks() error {
	dir := r.taskDir()
	if dir == "" {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("broker: the records of running tasks: %w", err)
	}
	killed := 0
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		rec, err := executor.LoadRecord(filepath.Join(dir, e.Name()), id)
		if err == nil {
			err = r.exec.Adopt(rec)
		}
		if err != nil {
			r.b.log.Warn("cannot take back a task of the last broker; its record is dropped", "task", id, "err", err)
			r.forgetTask(id)
			continue
		}
		if err := r.exec.Signal(id, syscall.SIGKILL); err != nil && !errors.Is(err, executor.ErrNotRunning) {
			r.b.log.Warn("cannot kill a task of the last broker", "task", id, "err", err)
			continue
		}
		killed++
	}
	if killed > 0 {
		r.b.log.Warn("killed the tasks of steps the last broker ran: a restarted broker knows no step", "tasks", killed)
	}
	return nil
}
