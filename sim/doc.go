// Package sim replays a workload trace through the scheduling core
// (package instance) with a virtual clock, exactly as the live broker would
// schedule it: the same instance code, the same policies, the same
// reservations, with simulated processes that run for their trace run time
// and die at their walltime.
//
// One SWF processor is one node of the simulated machine. Wait, makespan,
// utilization and bounded slowdown follow the literature's definitions (see
// Result). The replay is deterministic: the same trace and options always
// give the same schedule.
package sim
