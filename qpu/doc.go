// Package qpu schedules jobs on quantum processors shared by slots.
//
// A backend (one QPU device, or a pool of identical ones) has a fixed
// number of slots. Slots are timeline resources: the scheduling core
// (package instance) admits jobs, child instances and reservations that
// hold them, so that held plus reserved slots never exceed the total at any
// moment. This package takes over from there. Every instance (a job's child
// instance, an active reservation) or plain job that holds slots on a
// backend may open a session on it; the session's members submit QPU jobs
// (opaque payloads: circuits, pulse sequences) into it, and executors pull
// them, one at a time per device.
//
// Across sessions the device is shared by weighted fair share on measured
// QPU time, as Linux's CFS shares a CPU: each session has a virtual
// runtime, the session with the smallest goes next, and a finished job
// advances its session's virtual runtime by its measured execution seconds
// divided by the session's slots. A session that becomes busy starts at the
// backend's current minimum, so that idling earns no credit. Within a
// session jobs run in submission order, and a running job is never
// preempted. Counting jobs instead of seconds would be unfair whenever job
// lengths differ, which on real devices they always do.
//
// SimDevice is the simulated device that executors run with --sim: a
// state-vector simulator (up to MaxQubits qubits) of an OpenQASM 2.0
// subset and of a compact form ("h q0; cx q0 q1"), which ParseCircuit
// reads, refusing anything else with the line and the reason. Its device
// time is a model (a base plus a time per shot), not the host's, and its
// samples come from a PRNG seeded by the executor's seed and the QPU job,
// so a job's counts are the same wherever it runs.
//
// Like package instance, a Scheduler is a deterministic state machine: the
// caller passes the time (Unix milliseconds) with every input, and takes
// what changed (records to persist, backends with work to hand out) from
// Ready. It reads no clock, starts no goroutine and does no I/O; the broker
// does those, and the executor protocol's messages are in package api.
package qpu
