// Package store is the broker's durable schema: the records it writes to
// JetStream, as types of their own, and their conversion to and from the
// scheduling core's types in one place.
//
// The core's types (instance.Job, instance.Resv, qpu.Job, ...) stay free to
// change; what is on disk changes only with a new Version, a migration of
// the older versions in Decode*, and a new set of golden files in
// testdata/vN that the tests restore forever after.
//
// # Buckets and keys
//
//	strata_jobs   "ID"                  a Job (decimal job ID)
//	strata_resvs  "NAME"                a Resv
//	strata_qpu    "job.ID"              a QPUJob
//	              "session.PATH.BACKEND" a QPUSession
//	              "backend.NAME"         a QPUBackend
//	strata_meta   "ids"                 the IDs handed out so far (IDs)
//	              "lease"               the active broker's lease (Lease)
//	              "config"              the active broker's configuration (Config)
//	              "reply.HASH"          the answer to a change with an idempotency key (Reply)
//	strata_arrays "ID"                  a job array as submitted (Array)
//	every bucket the runtime writes, and the archive stream (its
//	subject strata.archive._fence):
//	              "_fence"              the active broker's fence (Fence)
//	strata_users  "NAME"                a User
//	strata_revoked "PUBKEY"             a Revocation
//	strata_nodes  "NAME"                a Node (a node down or drained, or once so)
//	strata_archive (a stream)           on strata.archive.job.SHARD a Job, on
//	                                    strata.archive.resv a Resv, on
//	                                    strata.archive.qpu.SHARD a QPUJob
//
// testdata/v2 holds a golden file of each kind of record, under
// BUCKET/KEY.json (the archive's under strata_archive/SUBJECT.json), and
// TestGoldenRecords fails for a bucket or kind without one.
//
// The kind of a record follows from its bucket and key, never from its
// contents.
//
// # Versions
//
// Version 1 is what brokers wrote before this package existed: jobs as
// {"v":1,"job":<instance.Job without JSON tags>,"meta":{...}}, reservations
// as an instance.Resv without tags or version, and QPU records as the qpu
// package's types. DecodeJob and DecodeResv still read them (the golden
// files in testdata/v1 came from a broker of that version). Version 2
// records carry "v":2 and snake_case fields with explicit units: times
// are Unix seconds (QPU times Unix milliseconds), durations seconds, node
// sets hostlists, and enumerations their names.
//
// A record of a version newer than Version, one that does not parse, or
// one whose fields are out of range is refused with an *Error that names
// the bucket, the key and what to do.
package store
