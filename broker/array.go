package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/strata-hpc/strata/instance"
)

// Job arrays are persisted as one record per task, published together in
// the submitting input's batch; the submitter's reply waits until every one
// is acknowledged. The records are separate KV writes, so a broker killed
// while publishing them can leave part of an array in the store, an array
// nobody was told about. tornArrays finds such arrays at restore so that
// they are dropped whole: a submission is all its tasks or none.

// tornArrays returns the IDs of the tasks of arrays that were stored only
// in part, which restore drops. An array is torn when fewer of its tasks
// are stored than it has, and every stored one is pending and was never
// anything else (its history is one "submitted" event): no task of it can
// have run or been acted on, so its submission was never acknowledged.
// (The broker never forgets jobs, so a stored array loses no task later.)
// The result is in increasing order.
func tornArrays(jobs []instance.Job) []instance.JobID {
	type arr struct {
		count, stored int
		untouched     bool
		ids           []instance.JobID
	}
	arrays := map[instance.JobID]*arr{}
	var order []instance.JobID
	for _, j := range jobs {
		a := j.Spec.Array
		if a.Job == 0 {
			continue
		}
		x := arrays[a.Job]
		if x == nil {
			x = &arr{count: a.Count, untouched: true}
			arrays[a.Job] = x
			order = append(order, a.Job)
		}
		x.stored++
		x.ids = append(x.ids, j.ID)
		if j.State != instance.Pending || len(j.Events) != 1 || j.Requeues > 0 {
			x.untouched = false
		}
	}
	var torn []instance.JobID
	for _, id := range order {
		if x := arrays[id]; x.stored < x.count && x.untouched {
			torn = append(torn, x.ids...)
		}
	}
	slices.Sort(torn)
	return torn
}

// dropTorn removes the records of the torn arrays' tasks from jobs (as
// loaded), from the runtime's metadata and from the store.
func (r *Runtime) dropTorn(ctx context.Context, jobs []instance.Job) ([]instance.Job, error) {
	torn := tornArrays(jobs)
	if len(torn) == 0 {
		return jobs, nil
	}
	drop := make(map[instance.JobID]bool, len(torn))
	for _, id := range torn {
		drop[id] = true
	}
	kv, err := r.b.js.KeyValue(ctx, JobsBucket)
	if err != nil {
		return nil, fmt.Errorf("broker: dropping a torn job array: %w", err)
	}
	kept := jobs[:0]
	for _, j := range jobs {
		if !drop[j.ID] {
			kept = append(kept, j)
			continue
		}
		if m := r.meta[j.ID]; m != nil && m.Key != "" {
			delete(r.keys, j.Spec.User+"\x00"+m.Key)
		}
		delete(r.meta, j.ID)
		if err := kv.Delete(ctx, strconv.FormatInt(int64(j.ID), 10)); err != nil {
			return nil, fmt.Errorf("broker: dropping task %d of a torn job array: %w", j.ID, err)
		}
	}
	r.b.log.Warn("dropped job arrays stored only in part (the broker stopped while persisting them; their submitters got no reply)", "tasks", len(torn), "first", torn[0])
	return kept, nil
}
