package store

import (
	"fmt"
	"slices"

	"github.com/strata-hpc/strata/instance"
)

// ArraysBucket holds job arrays as submitted, one record each: key, the
// array's job ID; value, an Array.
const ArraysBucket = "strata_arrays"

// Array is a job array as submitted, one record for all its tasks so that
// an array is stored whole or not at all, in one write: the record of one
// task as submitted (the template), and the IDs and indexes of the tasks
// it stands for. A task that changes later gets a Job record of its own,
// which supersedes the array's.
type Array struct {
	V     int     `json:"v"`
	Job   Job     `json:"job"`
	IDs   []int64 `json:"ids"`
	Tasks []int   `json:"tasks"`
}

// FromArray is the record of the tasks ids (with task indexes tasks) of an
// array, of which template is one, as submitted, with its metadata m.
func FromArray(template instance.Job, m Meta, ids []instance.JobID, tasks []int) Array {
	a := Array{V: Version, Job: FromJob(template, m), Tasks: slices.Clone(tasks)}
	for _, id := range ids {
		a.IDs = append(a.IDs, int64(id))
	}
	return a
}

// DecodeArray reads an Array record stored under key, returning its tasks
// as core jobs and their metadata. Only the array's first task keeps the
// submission's idempotency key.
func DecodeArray(key string, data []byte) ([]instance.Job, []Meta, error) {
	jobs, metas, err := decodeArray(key, data)
	if err != nil {
		return nil, nil, recordError(ArraysBucket, key, err)
	}
	return jobs, metas, nil
}

func decodeArray(key string, data []byte) ([]instance.Job, []Meta, error) {
	v, err := peekVersion(data)
	if err != nil {
		return nil, nil, err
	}
	if err := checkVersion(v); err != nil {
		return nil, nil, err
	}
	var a Array
	if err := strictUnmarshal(data, &a); err != nil {
		return nil, nil, err
	}
	t, m, err := a.Job.Core()
	if err != nil {
		return nil, nil, fmt.Errorf("template: %w", err)
	}
	switch {
	case len(a.IDs) != len(a.Tasks) || len(a.IDs) == 0:
		return nil, nil, fmt.Errorf("%d task IDs for %d task indexes", len(a.IDs), len(a.Tasks))
	case JobKey(t.Spec.Array.Job) != key:
		return nil, nil, fmt.Errorf("holds array %d, not array %s", t.Spec.Array.Job, key)
	}
	jobs := make([]instance.Job, len(a.IDs))
	metas := make([]Meta, len(a.IDs))
	for i, id := range a.IDs {
		if id <= 0 {
			return nil, nil, fmt.Errorf("task ID %d is not positive", id)
		}
		j := t
		j.ID = instance.JobID(id)
		j.Spec.Array.Task = a.Tasks[i]
		j.Events = slices.Clone(t.Events)
		jobs[i] = j
		metas[i] = m
		if j.ID != t.Spec.Array.Job {
			metas[i].Key = ""
		}
	}
	return jobs, metas, nil
}
