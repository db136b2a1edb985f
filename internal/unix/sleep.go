package unix

import (
	"unsafe"

	xunix "golang.org/x/sys/unix"
)

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
