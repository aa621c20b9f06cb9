package broker

import (
	"slices"
	"strconv"

	"github.com/strata-hpc/strata/instance"
)

// Job arrays are persisted as one record (arrayRecord in ArraysBucket),
// written in the submitting input's batch: one KV write makes the whole
// array durable, so that a submission is all its tasks or none, and a
// large array costs about what one job costs. Tasks that change later get
// records of their own in JobsBucket, as any job does.

// arrayRecord is a job array as submitted: the record of one task, the
// template, and the IDs and indexes of the tasks it stands for. The tasks
// that change later (they start, are cancelled) get records of their own
// in JobsBucket, which supersede the array's at restore.
type arrayRecord struct {
	V     int              `json:"v"`
	Job   jobRecord        `json:"job"`
	IDs   []instance.JobID `json:"ids"`
	Tasks []int            `json:"tasks"`
}

// tasks returns the records of the array's tasks, made from the template.
func (a arrayRecord) tasks() []jobRecord {
	out := make([]jobRecord, 0, len(a.IDs))
	for i, id := range a.IDs {
		if i >= len(a.Tasks) {
			break
		}
		t := a.Job
		t.Job.ID = id
		t.Job.Spec.Array.Task = a.Tasks[i]
		t.Job.Events = slices.Clone(a.Job.Job.Events)
		if id != a.Job.Job.Spec.Array.Job {
			t.Meta.Key = "" // the key finds the array by its first task
		}
		out = append(out, t)
	}
	return out
}

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
		var rec arrayRecord
		for i := 0; i < head.Spec.Array.Count; i++ {
			j, ok := r.in.Job(a + instance.JobID(i))
			if !ok || j.Spec.Array.Job != a || !untouched(j) {
				continue
			}
			if rec.IDs == nil {
				rec = arrayRecord{V: 1, Job: jobRecord{V: 1, Job: j}}
				if m := r.meta[j.ID]; m != nil {
					rec.Job.Meta = *m
				}
				if m := r.meta[a]; m != nil {
					rec.Job.Meta.Key = m.Key
				}
			}
			rec.IDs = append(rec.IDs, j.ID)
			rec.Tasks = append(rec.Tasks, j.Spec.Array.Task)
			in[j.ID] = true
		}
		if rec.IDs != nil {
			b.recs = append(b.recs, record{bucket: ArraysBucket, key: strconv.FormatInt(int64(a), 10), v: rec})
		}
	}
	r.newArrays = r.newArrays[:0]
	return in
}
