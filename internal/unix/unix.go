// Package unix is the one place in spindle that imports golang.org/x/sys/unix.
//
// It wraps the few Linux system calls the runtime, the load generator and the
// observers need (epoll, eventfd, CPU affinity, thread identity, non-blocking
// sockets) and turns their errors into *os.SyscallError values so callers can
// report them with context and test them with errors.Is.
//
// Its files are named by kind of system call, not by caller: epoll.go
// (epoll, including the carrier's raw zero-timeout poll), eventfd.go, fd.go
// (read, write, close, the raw non-blocking fast path, RLIMIT_NOFILE),
// socket.go (TCP sockets, non-blocking accept, sendfile), sched.go (affinity,
// real-time priority, timer slack), thread.go (thread identity, name, CPU
// time and usage), futex.go, sleep.go (raw clock_nanosleep), perf.go (perf
// counting events), term.go (terminals), uring.go and memring.go (io_uring
// and its in-memory test ring), and unix.go (errno values, error wrapping).
package unix

import (
	"os"

	xunix "golang.org/x/sys/unix"
)

// Errno values callers test with errors.Is.
const (
	EAGAIN      = xunix.EAGAIN
	EINTR       = xunix.EINTR
	EINPROGRESS = xunix.EINPROGRESS
	EMFILE      = xunix.EMFILE
	ENFILE      = xunix.ENFILE
	ECONNRESET  = xunix.ECONNRESET
	EPIPE       = xunix.EPIPE
	EINVAL      = xunix.EINVAL
)

// wrap turns a raw errno into an *os.SyscallError naming the call; nil stays nil.
func wrap(call string, err error) error {
	if err == nil {
		return nil
	}
	return os.NewSyscallError(call, err)
}

// ECONNABORTED is reported by accept when a queued connection was reset
// before it was accepted; the caller simply tries the next one.
const ECONNABORTED = xunix.ECONNABORTED

func wrapNB(call string, err error) error {
	if err == nil {
		return nil
	}
	if err == xunix.EAGAIN || err == xunix.EINTR {
		return err
	}
	return wrap(call, err)
}

// ENOSYS is reported by system calls the running kernel lacks.
const ENOSYS = xunix.ENOSYS

// ESRCH: no such process or thread (a thread that exited while being pinned).
const ESRCH = xunix.ESRCH

// ECONNREFUSED is the errno of a connection the peer refused.
const ECONNREFUSED = xunix.ECONNREFUSED
