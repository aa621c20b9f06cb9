package store

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/strata-hpc/strata/instance"
)

// The archive is an append-only JetStream stream of the work that left the
// live buckets after the broker's retention: each message is the record
// the live bucket held last (a Job, in the format of its Version), on a
// subject that says its kind. A job's subject also holds a shard of its ID
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
