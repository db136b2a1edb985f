package unix

import (
	"errors"

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

// Slice bounds: the kernel clamps a requested slice into [MinSlice, MaxSlice].
const (
	MinSlice = 100_000     // ns
	MaxSlice = 100_000_000 // ns
)

// SetSlice asks the kernel's fair scheduler (EEVDF) for a time slice of ns
// nanoseconds for thread tid (0: the caller), 0 for its default, keeping
// the thread's policy and nice; it needs no privilege. From Linux 6.12 a
// thread that wakes with a shorter slice than the one running on its CPU
// preempts it at once (PREEMPT_SHORT), where with equal slices the running
// one may finish its slice first (0.7-3 ms). Kernels before 6.12 keep
// no slice per thread and ignore the request (Slice reads what the
// kernel keeps). A thread under a real-time policy is left as it is
// (slices are the fair class's). A slice above 0 comes with
// SCHED_FLAG_RESET_ON_FORK, so that the threads the thread clones (the Go
// runtime's new threads, a child process) start with the kernel's default
// slice rather than inherit it.
func SetSlice(tid int, ns uint64) error {
	_, err := setFair(tid, func(attr *xunix.SchedAttr) { withSlice(attr, ns) })
	return err
}

// withSlice sets attr's slice to ns (0: the kernel's default), with
// SCHED_FLAG_RESET_ON_FORK for a slice above 0 (SetSlice).
func withSlice(attr *xunix.SchedAttr, ns uint64) {
	if ns > 0 {
		attr.Flags |= xunix.SCHED_FLAG_RESET_ON_FORK
	}
	attr.Runtime = ns
}

// Slice returns the time slice of thread tid (0: the caller) under the
// fair scheduler, from sched_getattr: 0 before Linux 6.12 (no slice per
// thread) or under a real-time policy.
func Slice(tid int) (uint64, error) {
	attr, err := xunix.SchedGetAttr(tid, 0)
	if err != nil {
		return 0, wrap("sched_getattr", err)
	}
	if !fair(attr) {
		return 0, nil
	}
	return attr.Runtime, nil
}

// fair reports whether attr's policy is the fair class's, which has slices.
func fair(attr *xunix.SchedAttr) bool {
	return attr.Policy == xunix.SCHED_NORMAL || attr.Policy == xunix.SCHED_BATCH
}

// Fair is what SetFair changes of a thread's fair-class attributes: its
// time slice where SetSlice (Slice ns; 0: the kernel's default, see
// SetSlice), its policy where SetBatch (SCHED_BATCH where Batch, else
// SCHED_NORMAL, see SetBatch).
type Fair struct {
	SetSlice bool
	Slice    uint64
	SetBatch bool
	Batch    bool
}

// SetFair makes the changes f asks of thread tid (0: the caller) in one
// sched_getattr and at most one sched_setattr, keeping its nice and its
// reset-on-fork flag (set with a slice, as SetSlice does); a thread under
// another class (real-time, SCHED_IDLE) is left as it is. It reports
// whether anything changed. A thread that has exited is not an error
// (ESRCH: gone between a listing and the call).
func SetFair(tid int, f Fair) (bool, error) {
	if !f.SetSlice && !f.SetBatch {
		return false, nil
	}
	changed, err := setFair(tid, func(attr *xunix.SchedAttr) {
		if f.SetSlice {
			withSlice(attr, f.Slice)
		}
		if f.SetBatch {
			attr.Policy = xunix.SCHED_NORMAL
			if f.Batch {
				attr.Policy = xunix.SCHED_BATCH
			}
		}
	})
	if errors.Is(err, xunix.ESRCH) {
		return false, nil
	}
	return changed, err
}

// SetBatch puts thread tid (0: the caller) under SCHED_BATCH (on) or back
// under SCHED_NORMAL (off), keeping its nice, its slice and its
// reset-on-fork flag; it needs no privilege. The fair scheduler weighs a
// SCHED_BATCH thread as a SCHED_NORMAL one, but one that wakes does not
// preempt the thread running on its CPU: it runs when that one sleeps, on
// another CPU that is idle, or after the running one's slice at a tick. A
// thread under any other policy (real-time, SCHED_IDLE) is left as it is.
// It reports whether the policy changed. A thread that has exited is not
// an error (SetFair).
func SetBatch(tid int, on bool) (bool, error) {
	return SetFair(tid, Fair{SetBatch: true, Batch: on})
}

// setFair changes the scheduling attributes of thread tid (0: the caller)
// with change, where its policy is the fair class's (a real-time or
// SCHED_IDLE thread is left as it is): it reads them, keeps the
// reset-on-fork flag (not the utilisation clamps, which would be set
// anew), and sets them again if change made a difference, which it
// reports.
func setFair(tid int, change func(attr *xunix.SchedAttr)) (bool, error) {
	attr, err := xunix.SchedGetAttr(tid, 0)
	if err != nil {
		return false, wrap("sched_getattr", err)
	}
	if !fair(attr) {
		return false, nil
	}
	attr.Size = xunix.SizeofSchedAttr
	attr.Flags &= xunix.SCHED_FLAG_RESET_ON_FORK
	was := *attr
	change(attr)
	if *attr == was {
		return false, nil
	}
	if err := xunix.SchedSetAttr(tid, attr, 0); err != nil {
		return false, wrap("sched_setattr", err)
	}
	return true, nil
}

// Batch reports whether thread tid (0: the caller) is under SCHED_BATCH.
func Batch(tid int) (bool, error) {
	attr, err := xunix.SchedGetAttr(tid, 0)
	if err != nil {
		return false, wrap("sched_getattr", err)
	}
	return attr.Policy == xunix.SCHED_BATCH, nil
}
