// Package unix is the one place in spindle that imports golang.org/x/sys/unix.
//
// It wraps the few Linux system calls the runtime, the load generator and the
// observers need (epoll, eventfd, CPU affinity, thread identity, non-blocking
// sockets) and turns their errors into *os.SyscallError values so callers can
// report them with context and test them with errors.Is.
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

// Close closes a raw file descriptor.
func Close(fd int) error { return wrap("close", xunix.Close(fd)) }

// Read reads from a raw file descriptor. EAGAIN is returned as is (wrapped).
func Read(fd int, p []byte) (int, error) {
	n, err := xunix.Read(fd, p)
	return n, wrap("read", err)
}

// Write writes to a raw file descriptor. EAGAIN is returned as is (wrapped).
func Write(fd int, p []byte) (int, error) {
	n, err := xunix.Write(fd, p)
	return n, wrap("write", err)
}
