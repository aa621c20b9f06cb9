// Package executor runs jobs' processes and reports how they end. It
// carries out two of the scheduling core's effects, "start job" and
// "signal job", and turns process exits back into events; it decides
// nothing (not when to start, not when to escalate a signal).
//
// # Model
//
// An Executor is the interface the broker programs against. Local is the
// implementation that runs jobs on this machine; package agent's Remote
// runs each job on the node agent of its first node, over NATS, and the
// agent runs it there with a Local.
//
//   - Start launches a job and returns a Record, which the broker persists.
//   - Signal sends a signal to the job's whole process group.
//   - Exits delivers one Exit per job: exit code, or signal name, or Lost.
//   - Adopt takes a persisted Record back after a broker restart and
//     delivers the job's Exit when it ends, or at once if it already has.
//   - Release discards the executor's own trace of a finished job once the
//     broker has durably recorded the Exit.
//   - Close detaches: jobs keep running, to be adopted later.
//
// Every job runs in its own process group (its PID is the group ID), so a
// signal reaches the job's children and grandchildren too. When a job's
// main process exits, anything left in its group is killed with SIGKILL:
// a job ends when its main process does, as under Slurm. A process that
// leaves the group on purpose (setsid, setpgid) escapes both, unless the
// job has a cgroup (see Cgroups).
//
// Exit codes follow the shell: a job killed by signal N has ExitCode
// 128+N and Signal set to the signal's name ("SIGKILL"), which is what
// tells it apart from a job that called exit(128+N). A Lost job has
// ExitCode -1.
//
// # The keeper, and why
//
// A job's exit status goes to its parent, and only while the parent is
// alive to wait(2) for it. If the broker were the parent, a broker killed
// with SIGKILL would take its jobs' exit statuses with it. So jobs are not
// the broker's children: each Local starts one keeper process, a second
// copy of the broker's own binary (/proc/self/exe, turned into a keeper by
// this package's init function before main runs), and the keeper forks
// and execs every job, reaps it, and reports its exit over a pipe. It
// keeps each exit status in memory until the broker Releases it (having
// persisted the Exit). The keeper runs in its own session, has no
// parent-death signal, and outlives its broker: when the broker goes
// (crash, or Close), it writes the status file (Record.StatusFile, in
// LocalOptions.StateDir) of every unreleased exit, keeps reaping the jobs
// it started and writing theirs, and exits after the last one. A restarted
// broker Adopts each running job from its Record: it watches the process
// through a pidfd and, when it is gone, reads its status file, waiting for
// the old keeper if that is still alive. Only a job whose keeper died too
// (or whose machine rebooted) is Lost.
//
// Why one keeper per executor and not a shim per job: on the reference VM
// (2 shared vCPUs) a process is the dominant cost of a trivial job, so
// every design is measured in CPU time per job, all processes included
// (executor_bench_test.go; measured with other work loading the machine,
// load average 10-20, so read them as ratios):
//
//	design                                        CPU/job       jobs/s
//	direct fork+exec of /bin/true by the broker    5.2-6.3 ms   135-215  (no exit status survives the broker)
//	Local: the keeper, output to /dev/null         5.9-6.2 ms   160-217
//	Local: the keeper, output to two files         6.4-7.6 ms    90-166
//	sh -c '"$@"; echo $? >STATUS' sh true         12.0-13.1 ms   47-52
//	per-job Go shim (re-exec of a Go binary)      22.8-24.1 ms   20-26
//
// Where that CPU goes (perf record of BenchmarkLocal/par=4/out=files,
// all processes, load average 5-7; 8.7 ms per job in all): the job's own
// process about 61% (execve, the dynamic loader, and glibc's CPU feature
// probing, whose CPUID instructions trap to the hypervisor), creating its
// two output files about 19% (ext4 inode allocation, which scans past
// recently deleted inodes on a file system that benchmarks churn), the
// rest of the keeper about 15% (the vfork child until execve, reaping,
// /proc/PID/stat, the JSON messages), the Local in the broker about 5%. A
// trivial job thus costs milliseconds of CPU whatever the broker does:
// two cores run a few hundred such jobs per second at most. The fork is
// already clone(CLONE_VM|CLONE_VFORK), as posix_spawn does (Go's
// syscall.ForkExec), with one fork per job.
//
// The shell wrapper also dies with its job when the job's group is
// signalled, and cannot tell "exit 137" from SIGKILL. A per-job Go shim
// pays a Go runtime start for every job. The keeper adds no process per
// job, only four short JSON messages over pipes (start and its reply, exit,
// release), and costs about as much as the broker forking the job itself.
// Keeping exit statuses in memory rather than writing a file per job saves
// four file system operations per job (create, write, rename, unlink),
// about 0.5 ms of CPU on the reference VM.
//
// The price is shared fate: if the keeper itself is killed, the exit
// statuses of its jobs are lost (the jobs run on, are watched through
// their pidfds and end up Lost, with an Err that says why; exits reported
// before it died are not affected), and the next Start starts a new
// keeper.
//
// # Deployment
//
// The keeper stays in the broker's cgroup, and so do the jobs' own
// cgroups, below it. Under systemd, the
// default KillMode=control-group kills them all when the broker's unit
// stops or restarts; use KillMode=process for jobs to outlive a broker
// restart. A keeper runs the binary it was started from (/proc/self/exe),
// so replacing the broker binary does not disturb running keepers; the
// pipe protocol is private to one binary, and a restarted broker only ever
// reads an old keeper's status files.
//
// # Identity
//
// A Record identifies a process by PID, the start time the kernel records
// for it (/proc/PID/stat field 22), and the boot ID, so that a PID recycled
// by an unrelated process is never taken for the job, never watched, never
// signalled. The keeper signals the jobs it runs itself, and only before
// reaping them, when their PIDs cannot have been reused; an adopted job is
// signalled after checking its start time.
//
// # Concurrency
//
// Local is safe for concurrent use. Start blocks until the job's command
// has been exec'd; a broker that starts many jobs at once calls it from
// several goroutines. Exits is fed from an unbounded internal queue, so a
// slow reader never stalls reaping.
//
// # Accounts
//
// Spec.User names the Unix account a job runs as, resolved at Start on
// this machine (os/user: uid, primary gid, supplementary groups, home;
// the shell from /etc/passwd). An executor running as root runs each job
// with its account's credentials (the keeper forks it with
// SysProcAttr.Credential) and refuses uid 0, by name or by default,
// unless LocalOptions.AllowRoot; one not running as root runs jobs only
// as its own account and refuses others (ErrOtherAccount). NewLocal logs
// which of the two it is.
//
// What the job's account could not do, the job cannot make the keeper do
// for it: the keeper checks the working directory and the command, and
// creates or truncates the output files, on a thread of its own whose
// file system identity (setfsuid, setfsgid, setgroups, which act on one
// thread) is the account's (asUser). So "-o /etc/passwd" or an output
// file in the broker's state directory fails with "permission denied",
// and output files belong to the job's user.
//
// The job's environment is Spec.Env and nothing else: none of the
// executor's own environment (say the broker's STRATA_CREDS) reaches it.
// A job with a named account gets HOME, USER, LOGNAME and SHELL from the
// account, replacing those of Env. Under a root executor jobs start with
// umask 0022 (Slurm's default; output files are created 0644 either way),
// so files a job creates are readable by others unless the job sets a
// stricter umask, as under Slurm.
//
// Errors about the working directory and the command of such a job are
// found by the keeper as the account too: checked with the executor's
// privileges, "no such file" against "permission denied" would tell
// anyone whether a path under /root exists.
//
// # Cgroups
//
// Where cgroup v2 is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on
// a hybrid system) and the executor may create cgroups below its own (or
// below LocalOptions.CgroupRoot), every job runs in a cgroup of its own,
// BASE/ID, BASE being strata-HASH (HASH of the state directory, so that
// two brokers' executors never share one). The keeper creates it and
// forks the job straight into it (clone3 with CLONE_INTO_CGROUP), so no
// fork of the job can happen outside. Signals go to the job's process
// group and to every process of its cgroup outside that group; when the
// main process exits, the cgroup is killed (cgroup.kill), its CPU time
// (cpu.stat) and peak memory (memory.peak, where the memory controller is
// enabled) go into the Exit, and it is removed. A process that double-
// forks or calls setsid is thus still the job's. Without cgroups (cgroup
// v1 only, no delegation, or CgroupRoot "none"), NewLocal logs a warning
// once, jobs are contained by their process groups only, and Exit's usage
// comes from wait4's rusage of the main process.
//
// On the reference VM (hybrid cgroups, /sys/fs/cgroup/unified writable by
// root, no controllers enabled there) jobs get cgroups, CPU time is
// accounted and memory is not.
package executor
