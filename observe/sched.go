package observe

// SchedStats holds what SampleThreads reads from /proc/PID/task/TID/sched:
// the one counter that neither stat, status nor schedstat expose.
//
// The file also has nr_voluntary_switches and nr_involuntary_switches, but
// SampleThreads takes context switches from status (ParseStatusSwitches)
// only, so that one source serves. Status exists on every kernel, while
// sched exists only where the kernel was built with CONFIG_SCHED_DEBUG (not
// every older or minimal kernel is): without sched, SampleThreads still has
// every figure but migrations (ErrNoSched). Status is also what pidstat
// reads for cswch/s and nvcswch/s, so the figures match its. Cost: read and
// parsed by ParseStatusSwitches, status takes about 1.2 times what sched
// does (a longer file; BenchmarkReadStatus against BenchmarkReadSched, both
// about 10-15 µs) and two thirds of what procfs's status parser took
// (BenchmarkReadStatusProcfs); taking switches from sched instead would
// save that read only on kernels that have sched, and lose the switches
// (or need status again) on the others. Figures in docs/PERFORMANCE.md,
// section observe.
type SchedStats struct {
	// Migrations is se.nr_migrations: how many times the kernel moved the
	// thread to another CPU since it started.
	Migrations uint64 `json:"migrations"`
}

// ParseSched parses the text of /proc/PID/task/TID/sched ("key : value"
// lines under a "comm (pid, #threads: n)" header); the se.nr_migrations
// line is required.
func ParseSched(data []byte) (SchedStats, error) {
	v, err := parseKeyed("sched", data, "se.nr_migrations")
	if err != nil {
		return SchedStats{}, err
	}
	return SchedStats{Migrations: v[0]}, nil
}

// ContextSwitches are a thread's context switches since it started, from
// /proc/PID/task/TID/status.
type ContextSwitches struct {
	// Voluntary is voluntary_ctxt_switches: the thread gave up the CPU
	// (it blocked or yielded).
	Voluntary uint64 `json:"voluntary"`
	// Involuntary is nonvoluntary_ctxt_switches: the kernel preempted it.
	Involuntary uint64 `json:"involuntary"`
}

// ParseStatusSwitches parses the context switches out of the text of
// /proc/PID/task/TID/status ("Key:\tvalue" lines); both lines are
// required.
func ParseStatusSwitches(data []byte) (ContextSwitches, error) {
	v, err := parseKeyed("status", data, "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
	if err != nil {
		return ContextSwitches{}, err
	}
	return ContextSwitches{Voluntary: v[0], Involuntary: v[1]}, nil
}
