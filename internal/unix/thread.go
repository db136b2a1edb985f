package unix

import (
	"fmt"
	"os"

	xunix "golang.org/x/sys/unix"
)

// Gettid returns the calling OS thread's id.
func Gettid() int { return xunix.Gettid() }

// Getpid returns the process id.
func Getpid() int { return xunix.Getpid() }

// SetThreadName names the calling OS thread (at most 15 bytes are kept by the
// kernel), so that perf, top and /proc/PID/task/TID/comm attribute it.
func SetThreadName(name string) error {
	b := make([]byte, 16)
	copy(b[:15], name)
	return wrap("prctl", xunix.Prctl(xunix.PR_SET_NAME, uintptr(bytesPtr(b)), 0, 0, 0))
}

// SetThreadNameOf names thread tid of this process (its
// /proc/self/task/TID/comm; at most 15 bytes are kept).
func SetThreadNameOf(tid int, name string) error {
	if len(name) > 15 {
		name = name[:15]
	}
	return os.WriteFile(fmt.Sprintf("/proc/self/task/%d/comm", tid), []byte(name), 0)
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
		Voluntary: int64(ru.Nvcsw), Involuntary: int64(ru.Nivcsw), // int32 on 32-bit Linux
	}, nil
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
