package unix

import (
	"math"
	"sync/atomic"
	"unsafe"

	xunix "golang.org/x/sys/unix"
)

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
