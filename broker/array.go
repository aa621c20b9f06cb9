package broker

import (
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
)

// Job arrays are persisted as one record (store.Array in ArraysBucket),
// written in the submitting input's batch: one KV write makes the whole
// array durable, so that a submission is all its tasks or none, and a
// large array costs about what one job costs. Tasks that change later get
// records of their own in JobsBucket, as any job does.

// untouched reports whether j is as it was submitted: pending, with a
// history of one event.
func untouched(j instance.Job) bool {
	return j.State == instance.Pending && len(j.Events) == 1 && j.Requeues == 0
}

// arrayRecords adds to b one record for each job array submitted in the
// current input, standing for every task of it that is still as
// submitted, and returns those tasks, whose own records are left out:
// one KV write makes the whole array durable, atomically, where a record
// per task took a write each. r.mu must be held.
func (r *Runtime) arrayRecords(b *batch) map[instance.JobID]bool {
	if len(r.newArrays) == 0 {
		return nil
	}
	in := map[instance.JobID]bool{}
	for _, a := range r.newArrays {
		head, ok := r.in.Job(a)
		if !ok {
			continue
		}
		var template instance.Job
		var meta jobMeta
		var ids []instance.JobID
		var tasks []int
		all := make([]instance.JobID, head.Spec.Array.Count)
		for i := range all {
			all[i] = a + instance.JobID(i)
		}
		for _, j := range r.in.JobRecords(all) { // no walk of the queue per task
			if j.Spec.Array.Job != a || !untouched(j) {
				continue
			}
			if ids == nil {
				template = j
				if m := r.meta[j.ID]; m != nil {
					meta = *m
				}
				if m := r.meta[a]; m != nil {
					meta.Key = m.Key
				}
			}
			ids = append(ids, j.ID)
			tasks = append(tasks, j.Spec.Array.Task)
			in[j.ID] = true
		}
		if ids != nil {
			b.recs = append(b.recs, record{bucket: ArraysBucket, key: store.JobKey(a), v: store.FromArray(template, meta, ids, tasks)})
		}
	}
	r.newArrays = r.newArrays[:0]
	return in
}
