package unix

import xunix "golang.org/x/sys/unix"

// ECONNREFUSED is the errno of a connection the peer refused.
const ECONNREFUSED = xunix.ECONNREFUSED

// SetTimerSlack sets the calling thread's timer slack in nanoseconds
// (PR_SET_TIMERSLACK): how late the kernel may fire its timeouts to batch
// wake-ups. The default, 50 µs, would blur sub-millisecond pacing.
func SetTimerSlack(ns uint64) error {
	return wrap("prctl", xunix.Prctl(xunix.PR_SET_TIMERSLACK, uintptr(ns), 0, 0, 0))
}
