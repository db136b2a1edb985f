package unix

import (
	"math"
	"sync/atomic"
	"unsafe"

	xunix "golang.org/x/sys/unix"
)

// The system calls of the waiting-spectrum suite and its power and frequency
// sources: futex waits on a shared word, precise sleeps, real-time priority,
// per-thread resource usage and perf counting events.

// Futex operations (linux/futex.h); x/sys/unix does not export them.
const (
	futexWait        = 0
	futexWake        = 1
	futexPrivateFlag = 128 // the word is private to this process
)

// FutexWait sleeps while *addr == val, up to timeoutNs nanoseconds (< 0:
// forever). A wake-up, a changed value (EAGAIN), a timeout or a signal all
// return nil: callers re-check their condition.
func FutexWait(addr *atomic.Uint32, val uint32, timeoutNs int64) error {
	var ts *xunix.Timespec
	if timeoutNs >= 0 {
		t := xunix.NsecToTimespec(timeoutNs)
		ts = &t
	}
	_, _, errno := xunix.Syscall6(xunix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)),
		uintptr(futexWait|futexPrivateFlag), uintptr(val), uintptr(unsafe.Pointer(ts)), 0, 0)
	switch errno {
	case 0, xunix.EAGAIN, xunix.ETIMEDOUT, xunix.EINTR:
		return nil
	}
	return wrap("futex", errno)
}

// FutexWake wakes up to n threads sleeping in FutexWait on addr and reports
// how many it woke. It is a raw system call (see Nanosleep): it does not
// block, and a burst driver calls it on every flip to busy.
func FutexWake(addr *atomic.Uint32, n int) (int, error) {
	if n > math.MaxInt32 {
		n = math.MaxInt32
	}
	r, _, errno := xunix.RawSyscall6(xunix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)),
		uintptr(futexWake|futexPrivateFlag), uintptr(n), 0, 0, 0)
	if errno != 0 {
		return 0, wrap("futex", errno)
	}
	return int(r), nil
}

// MaxRawSleep bounds one Nanosleep.
const MaxRawSleep = 50_000_000 // 50ms

// Nanosleep blocks the calling thread for ns nanoseconds on CLOCK_MONOTONIC,
// at most MaxRawSleep (a signal ends it early; callers re-check the clock).
//
// It is a raw system call: the goroutine keeps its P while it sleeps, so it
// returns to running code the moment the kernel wakes its thread. Through
// Go's ordinary system-call path a sleeper may lose its P, and on waking
// wait for the scheduler to give it one: on dev-2vcpu a burst driver that
// slept so went unflipped for up to 615ms. The price is that a
// stop-the-world waits for the sleep to end, hence the bound; the spectrum
// turns the collector off while it measures.
func Nanosleep(ns int64) error {
	if ns <= 0 {
		return nil
	}
	ts := xunix.NsecToTimespec(min(ns, MaxRawSleep))
	_, _, errno := xunix.RawSyscall6(xunix.SYS_CLOCK_NANOSLEEP, uintptr(xunix.CLOCK_MONOTONIC), 0,
		uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if errno == 0 || errno == xunix.EINTR {
		return nil
	}
	return wrap("clock_nanosleep", errno)
}

// SetFIFO gives the calling thread SCHED_FIFO real-time priority prio (1-99),
// so that it preempts ordinary threads as soon as it wakes and sleeps with
// no timer slack. It needs CAP_SYS_NICE (EPERM otherwise).
func SetFIFO(prio int) error {
	attr := xunix.SchedAttr{Size: xunix.SizeofSchedAttr, Policy: xunix.SCHED_FIFO, Priority: uint32(prio)}
	return wrap("sched_setattr", xunix.SchedSetAttr(0, &attr, 0))
}

// ThreadUsage is the calling thread's resource usage (getrusage RUSAGE_THREAD).
type ThreadUsage struct {
	UserNs, SysNs          int64 // CPU time in user and kernel mode, nanoseconds
	Voluntary, Involuntary int64 // context switches: gave up the CPU / was preempted
}

// GetThreadUsage returns the calling thread's CPU time and context switches.
func GetThreadUsage() (ThreadUsage, error) {
	var ru xunix.Rusage
	if err := xunix.Getrusage(xunix.RUSAGE_THREAD, &ru); err != nil {
		return ThreadUsage{}, wrap("getrusage", err)
	}
	return ThreadUsage{
		UserNs: ru.Utime.Nano(), SysNs: ru.Stime.Nano(),
		Voluntary: ru.Nvcsw, Involuntary: ru.Nivcsw,
	}, nil
}

// PerfOpenCounter opens a system-wide counting perf event of the given PMU
// type and config on one CPU (pid -1), as the energy counters of the "power"
// PMU require. Read it with ReadCounter.
func PerfOpenCounter(pmuType uint32, config uint64, cpu int) (int, error) {
	attr := xunix.PerfEventAttr{Type: pmuType, Size: uint32(unsafe.Sizeof(xunix.PerfEventAttr{})), Config: config}
	fd, err := xunix.PerfEventOpen(&attr, -1, cpu, -1, xunix.PERF_FLAG_FD_CLOEXEC)
	return fd, wrap("perf_event_open", err)
}

// ReadCounter reads the 8-byte value of a counting perf event.
func ReadCounter(fd int) (uint64, error) {
	var b [8]byte
	n, err := xunix.Read(fd, b[:])
	if err != nil {
		return 0, wrap("read", err)
	}
	if n != 8 {
		return 0, wrap("read", xunix.EIO)
	}
	return *(*uint64)(unsafe.Pointer(&b[0])), nil
}

// ThreadCPUTime returns the calling thread's CPU time in nanoseconds
// (CLOCK_THREAD_CPUTIME_ID): cheaper than getrusage for timing a stretch of
// work on one thread.
func ThreadCPUTime() int64 {
	var ts xunix.Timespec
	if xunix.ClockGettime(xunix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0 // cannot fail for the calling thread on Linux 2.6.12+
	}
	return ts.Nano()
}
