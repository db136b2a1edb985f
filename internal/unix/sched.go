package unix

import (
	xunix "golang.org/x/sys/unix"
)

// SetTimerSlack sets the calling thread's timer slack in nanoseconds
// (PR_SET_TIMERSLACK): how late the kernel may fire its timeouts to batch
// wake-ups. The default, 50 µs, would blur sub-millisecond pacing.
func SetTimerSlack(ns uint64) error {
	return wrap("prctl", xunix.Prctl(xunix.PR_SET_TIMERSLACK, uintptr(ns), 0, 0, 0))
}

// SchedGetaffinity returns the CPUs the thread tid (0: the caller) may run on.
func SchedGetaffinity(tid int) ([]int, error) {
	var set xunix.CPUSet
	if err := xunix.SchedGetaffinity(tid, &set); err != nil {
		return nil, wrap("sched_getaffinity", err)
	}
	var cpus []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// SchedSetaffinity restricts the thread tid (0: the caller) to cpus.
func SchedSetaffinity(tid int, cpus []int) error {
	var set xunix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return wrap("sched_setaffinity", xunix.SchedSetaffinity(tid, &set))
}

// SetFIFO gives the calling thread SCHED_FIFO real-time priority prio (1-99),
// so that it preempts ordinary threads as soon as it wakes and sleeps with
// no timer slack. It needs CAP_SYS_NICE (EPERM otherwise).
func SetFIFO(prio int) error {
	attr := xunix.SchedAttr{Size: xunix.SizeofSchedAttr, Policy: xunix.SCHED_FIFO, Priority: uint32(prio)}
	return wrap("sched_setattr", xunix.SchedSetAttr(0, &attr, 0))
}
