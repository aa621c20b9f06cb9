// Package broker is the running Strata process: the NATS server (embedded,
// or an external cluster), identity and permissions, JetStream state, and the
// request/reply services of the instances it hosts. It carries out what the
// scheduling core decides and decides nothing itself.
//
// # Lifecycle
//
// As in nats-server: New(Options) validates and prepares the state
// directory, Start starts the embedded server (or connects) and returns when
// the broker is ready, Shutdown stops everything, WaitForShutdown waits for
// it. Options' zero values work (an embedded server on 127.0.0.1:4222).
//
// # Identity
//
// The embedded server runs in NATS decentralized-auth mode. On first start
// the broker creates an operator, a system account and the STRATA account
// (seeds under StateDir/keys, mode 0600) and reuses them on every restart,
// so credentials it issued stay valid. Each user connects with a standard
// NATS .creds file whose JWT, signed by the STRATA account, lets them publish
// only on strata.v1.req.USER.> and subscribe only to _INBOX_USER.>;
// administrators may also publish $SRV.> and read _INBOX.> (so that nats
// micro ls, info and stats work). The server enforces this, so the user
// token of a request subject is who sent it: Request.User is trustworthy and
// payloads never name their sender. Executors get credentials of their own
// role (strata.v1.exec.NAME.>, _INBOX_exec_NAME.>) from MintCreds, node
// agents theirs from MintAgentCreds (package agent: strata.v1.agent.NAME.
// NODE.> and strata.v1.node.NODE.> for each of their nodes). On first
// start the broker writes StateDir/admin.creds for the user "admin".
//
// With an external server (Options.NatsURL), the cluster's operator must
// trust the STRATA account; the broker mints credentials when it has the
// account key in StateDir/keys/account.nk.
//
// # Services
//
// ServeInstance registers one NATS micro service per instance path (named
// "strata-root-physics") with one endpoint per operation on
// strata.v1.req.*.PATH.OP, plus the built-in operations (whoami everywhere;
// user-add and users on root, admins only) and a catch-all that answers an
// unknown operation with an invalid_argument error listing the valid ones.
// Each request runs its Handler on a goroutine of its own (at most
// Options.MaxInflight at once); errors travel as api envelopes with their
// code; a panic becomes an internal error and the service keeps serving.
//
// # State
//
// KeyValue and Stream open JetStream buckets and streams with
// Options.Replicas; the broker keeps its users in the bucket strata_users.
// The Runtime (RunInstances) is the core's driver: for every request, exit
// and timer it takes the lock, steps the core with one input value
// (instance.Step), persists what Ready says changed and then carries out
// the effects. It keeps jobs, reservations and QPU records in
// strata_jobs, strata_resvs and strata_qpu, and acknowledges a request only
// once the records it changed are durable. A job array is written as one
// record in strata_arrays (all its tasks or none, in one write); a task
// that changes afterwards gets a record of its own in strata_jobs. Ended
// jobs, reservations and QPU jobs move to the append-only stream
// strata_archive after Resources.KeepFinished (archive.go,
// archive_history.go), which 'strata acct' and 'strata qpu acct' read.
//
// # One active broker
//
// Brokers that share a cluster elect one active broker with a lease, a
// record in strata_meta (key "lease") that its holder renews with a
// revision-checked update every Options.LeaseRenew; RunInstances takes it
// (or, without Options.Standby, refuses to start while another broker
// renews it, naming that broker), and a standby waits in RunInstances
// until it lapses. The holder acts (starts, signals, replies that change
// state) only while less than LeaseDuration-LeaseRenew has passed since
// it sent its last successful renewal, so that it stops before a standby,
// counting LeaseDuration from when it saw that renewal, takes over. Every
// write of the runtime is fenced: the new holder writes a fence record
// ("_fence") into every bucket and the archive stream before it
// restores, and every write carries the expected last sequence of its
// bucket's fence, so that the server refuses the writes of a broker that
// lost the lease without knowing it. A broker whose write or renewal is
// refused that way steps down (Runtime.Deposed). See lease.go and
// fence.go.
//
// # Steps
//
// 'strata exec' inside a running job (op exec on its instance) starts a
// step: tasks spread over the job's nodes, each an executor job
// JOB.STEP.RANK on its one node (the node's agent, or the built-in
// executor), as the job's account. Steps belong to their job: only its
// owner starts one, the job's signals reach every task, its end kills
// them. They are not persisted, and why, is in steps.go.
//
// # QPUs
//
// QPU policy is the core's: the instance owns the QPU scheduler (package
// qpu), and a running job, a child instance or an active reservation that
// holds slots on a backend is a session on it, opened, re-weighed and
// closed by the core as holders come and go; its users submit QPU jobs
// through their instance. The Runtime (qpu.go) keeps the executor
// protocol: it feeds executors' messages to the core as inputs, persists
// what Ready says changed and answers once it is durable. QPU executors (package qpuexec) speak the executor protocol on
// strata.v1.exec.NAME.{register,pull,heartbeat,result}, a micro service
// named strata-qpu-executors: a pull waits until a job is due and is
// answered once the job's record is durable; a cancelled job's executor is
// told on its inbox and in its next heartbeat's reply.
package broker
