// Package instance is Strata's scheduling core: one resource-manager
// instance (the root, or a child granted part of its parent's resources) as
// a deterministic, single-threaded state machine in the shape of etcd's raft.
//
// # Inputs and outputs
//
// Every input is a value of the closed set Input (Submit, Cancel,
// UpdateJob, Exited, Tick, AddResv, RemoveResv, ..., and the QPU inputs:
// QPUSubmit, QPUCancel, QPURevoke, QPUMaint, and the executors' QPUPull,
// QPUHeartbeat, QPUReport, and, on the root, the node states NodesDown,
// NodesUp, Drain and Undrain), applied with the current time by Step, the one
// entry point that the broker, the simulator and the scenario tests all
// drive; so a driver can log its inputs and replay them into a fresh tree
// to get the same state (TestStepReplay). Each input is also a method of
// the same name, which Step calls. An input either fails,
// changing nothing, or is applied in full and followed by a scheduling pass.
// What the runtime must do as a result accumulates as Effects (start job J
// on nodes N, signal J, start or stop a child instance) together with the
// IDs of jobs and reservations whose records changed; the driver drains them
// with Ready and carries them out; Ready also names the nodes whose state
// records changed. NextWake says when the instance next needs
// a Tick even if nothing else happens (a walltime, a kill grace period, a
// begin time, a reservation boundary).
//
// The package reads no clock, starts no goroutines and does no I/O; job IDs
// come from an injected generator. The live broker and the trace simulator
// drive the same code, one with the wall clock, one with a virtual clock.
//
// # Scheduling
//
// Running jobs, reservations, child grants and the planned starts of
// protected pending jobs are all spans in one timeline (package timeline).
// A running job holds its nodes over [start, start+walltime+grace): the
// scheduler plans with the walltime and the kill grace period, because a
// job's processes may live that long. Pending jobs are ordered by urgency
// (higher first), then by submission. A Policy says how many of the first
// pending jobs that cannot start now get a planned start (a span in the
// timeline that later jobs must respect) and whether later jobs may
// backfill: fcfs (one, no backfill), easy (one), conservative (all) and
// hybrid:N (N). Planned starts only ever move earlier: when resources free
// up early, planned jobs are compressed one at a time in priority order.
//
// No job starves by construction. A job that waits for a reason of its own
// (a hold, a dependency, a begin time still ahead) holds back no one and
// takes no protected place; and a job that becomes free to run ahead of a
// planned one (released, its dependency met, its begin time come, or more
// urgent) takes a protected place only when one is free, never the plan of
// a job behind it. So the head's planned start moves later only when a
// running job's walltime is extended or a reservation takes its nodes
// (TestHeadPlanNeverLater checks it on random workloads).
//
// A pending job also waits for its dependencies (afterok, afterany,
// afternotok on other jobs of the tree), for every earlier job of its user
// and name when it is a singleton, and, when it is a task of a job array
// with a limit (SubmitArray), until fewer than that many tasks of the
// array run. Requeue puts a running or ended job back in the queue.
//
// Every pending job carries a Wait (why it is not running, as data: the
// kind, the jobs, nodes, reservation or QPU backend in its way, until when,
// its place in the queue), the same as a sentence in Reason, and, when it is
// planned, a PlannedStart; every transition is recorded as an Event with its
// time and cause, so that a job's whole story can be read back.
//
// # Node states
//
// A node of the root is down (its health failed; the runtime says so) or
// drained (staff took it out), or both, or up. No instance of the tree
// starts or plans anything on a node down or drained. A node going down
// ends the jobs running on it, anywhere in the tree, as lost (requeued if
// they asked to be), and a child job's instance ends with its job; a
// drained node's jobs run to their end. With no node out the schedules are
// exactly those of a machine without node states (see nodes.go).
//
// # Instances
//
// The root instance owns the machine. A reservation is a child instance
// that exists from the reservation's creation (so listed users can queue
// into it), whose timeline begins at the reservation's start and ends at its
// end. All instances of one tree share the job ID space, so a job ID names
// one job broker-wide.
//
// # QPU sessions
//
// The tree owns one qpu.Scheduler, on the same clock. A running job that
// holds QPU slots (at its JobPath) or an active reservation (at its
// instance path) opens a session on a backend with its first QPU job; the
// session weighs the slots its holder holds less those its running child
// jobs hold (sessions of their own), and its users are the holder's. After
// every input the core draws the consequences of what changed: a session
// whose holder ended, was requeued, lost its slots or its reservation
// closes (its queued QPU jobs cancelled, its running ones aborted); the
// others are re-weighed. Ready carries the QPU records to persist, the
// backends with work for an idle executor and the executors to tell to let
// go of a job, with the rest. The QPU scheduler counts milliseconds (Unix
// ms = core seconds × 1000); executors report measured device time.
package instance
