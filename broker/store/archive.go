package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/qpu"
)

// The archive is an append-only JetStream stream of the work that left the
// live buckets after the broker's retention: each message is the record
// the live bucket held last (a Job, a Resv or a QPUJob, in the format of
// its version), on a subject that says its kind. A job's subject also holds a shard of its ID
// (ID / ArchiveShard), so that one job is found by reading one shard, not
// the whole archive, while the server keeps state for a few subjects per
// thousand jobs rather than one per job. The message's time is when the
// job was archived, never earlier than its end.
const (
	ArchiveStream  = "strata_archive"
	ArchiveSubject = "strata.archive" // ArchiveSubject.job.SHARD
	ArchiveShard   = 1000
)

// ArchiveJobSubject is the subject job id is archived on.
func ArchiveJobSubject(id instance.JobID) string {
	return ArchiveSubject + ".job." + strconv.FormatInt(int64(id)/ArchiveShard, 10)
}

// ArchiveJobsSubject is the subject of every archived job.
const ArchiveJobsSubject = ArchiveSubject + ".job.>"

// DecodeArchivedJob reads an archived job record (from a message on
// subject, for errors).
func DecodeArchivedJob(subject string, data []byte) (instance.Job, Meta, error) {
	var p struct {
		ID int64 `json:"id"`
		V  int   `json:"v"`
		J  struct {
			ID int64 `json:"ID"`
		} `json:"job"` // version 1
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return instance.Job{}, Meta{}, recordError(ArchiveStream, subject, fmt.Errorf("not a valid record (%v)", err))
	}
	id := p.ID
	if p.V < 2 {
		id = p.J.ID
	}
	j, m, err := decodeJob(JobKey(instance.JobID(id)), data)
	return j, m, recordError(ArchiveStream, subject, err)
}

// ArchiveResvSubject is the subject of every archived reservation: there
// are few (one a day is a busy centre), so one subject holds them all.
const ArchiveResvSubject = ArchiveSubject + ".resv"

// ArchiveQPUJobSubject is the subject QPU job id is archived on (sharded as
// jobs are).
func ArchiveQPUJobSubject(id qpu.JobID) string {
	return ArchiveSubject + ".qpu." + strconv.FormatUint(uint64(id)/ArchiveShard, 10)
}

// ArchiveQPUJobsSubject is the subject of every archived QPU job.
const ArchiveQPUJobsSubject = ArchiveSubject + ".qpu.>"

// DecodeArchivedResv reads an archived reservation record (from a message
// on subject, for errors).
func DecodeArchivedResv(subject string, data []byte) (instance.Resv, error) {
	var p struct {
		Name string `json:"name"` // version 1's "Name" too: field names match without case
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return instance.Resv{}, recordError(ArchiveStream, subject, fmt.Errorf("not a valid record (%v)", err))
	}
	if p.Name == "" {
		return instance.Resv{}, recordError(ArchiveStream, subject, errors.New("the reservation has no name: the record is corrupt"))
	}
	rv, err := decodeResv(p.Name, data)
	return rv, recordError(ArchiveStream, subject, err)
}

// DecodeArchivedQPUJob reads an archived QPU job record (from a message on
// subject, for errors).
func DecodeArchivedQPUJob(subject string, data []byte) (qpu.Job, error) {
	var p struct {
		ID uint64 `json:"id"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return qpu.Job{}, recordError(ArchiveStream, subject, fmt.Errorf("not a valid record (%v)", err))
	}
	var recs QPURecords
	if err := recs.decode(QPUJobKey(qpu.JobID(p.ID)), data); err != nil {
		return qpu.Job{}, recordError(ArchiveStream, subject, err)
	}
	return recs.Jobs[0], nil
}
