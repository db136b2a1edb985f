// Package observe measures what the processes of a benchmark do while it
// runs, without changing them:
//
//   - per-thread figures from /proc (SampleThreads): CPU time split into
//     user and system, run-queue wait from schedstat (pidstat's %wait),
//     voluntary and involuntary context switches (from task/TID/status),
//     migrations (from task/TID/sched where the kernel has it, see
//     SchedStats and ErrNoSched) and the share of each thread's CPU time
//     spent on each CPU (sampled from the CPU of last run);
//   - perf stat (RunPerfStat, ParsePerfStat): CPUs utilized, context
//     switches per second, IPC where the machine has hardware counters,
//     system calls per second where perf can count the raw_syscalls
//     tracepoint (CanCount);
//   - perf sched (RunPerfSched, ParseSchedScript): per-thread share of runs
//     per CPU and migrations from the kernel's scheduler tracepoints;
//   - power, frequency and steal sources (power*.go, freq*.go, steal*.go).
//
// A figure that cannot be had is reported as "n/a (reason)", never as 0:
// perf missing from the machine is ErrPerfNotInstalled, a counter the
// machine lacks is "n/a (not supported)".
package observe
