package unix

import (
	"unsafe"

	xunix "golang.org/x/sys/unix"
)

// The carrier's I/O fast path. These calls never block (the fds are
// non-blocking, the poll has a zero timeout), so they are made as raw
// system calls: without the runtime's entersyscall/exitsyscall bookkeeping,
// which a carrier that owns its thread does not need and which invites
// sysmon to hand its P away. They report EAGAIN (and EINTR) as the bare
// Errno, which allocates nothing; other errors are wrapped as usual.

// ReadNB reads from a non-blocking fd. It returns EAGAIN or EINTR unwrapped.
func ReadNB(fd int, p []byte) (int, error) { return rawIO(xunix.SYS_READ, "read", fd, p) }

// WriteNB writes to a non-blocking fd. It returns EAGAIN or EINTR unwrapped.
func WriteNB(fd int, p []byte) (int, error) { return rawIO(xunix.SYS_WRITE, "write", fd, p) }

// rawIO makes a read or write system call without the scheduler's hooks.
func rawIO(trap uintptr, call string, fd int, p []byte) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, e := xunix.RawSyscall(trap, uintptr(fd), uintptr(ptr), uintptr(len(p)))
	if e != 0 {
		return 0, wrapNB(call, e)
	}
	return int(n), nil
}

// EpollPoll collects ready events without blocking (epoll_pwait with a zero
// timeout). EINTR is reported as zero events and no error.
func EpollPoll(epfd int, events []EpollEvent) (int, error) {
	var ptr unsafe.Pointer
	if len(events) > 0 {
		ptr = unsafe.Pointer(&events[0])
	}
	n, _, e := xunix.RawSyscall6(xunix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(ptr), uintptr(len(events)), 0, 0, 0)
	switch e {
	case 0:
		return int(n), nil
	case xunix.EINTR:
		return 0, nil
	}
	return 0, wrap("epoll_pwait", e)
}

// AcceptNB accepts one connection from a non-blocking listener as a
// non-blocking, close-on-exec socket. It returns EAGAIN, EINTR and
// ECONNABORTED unwrapped; EMFILE and ENFILE come back wrapped (test them
// with errors.Is).
func AcceptNB(fd int) (int, Sockaddr, error) {
	nfd, sa, err := xunix.Accept4(fd, xunix.SOCK_NONBLOCK|xunix.SOCK_CLOEXEC)
	if err == xunix.ECONNABORTED {
		return -1, nil, err
	}
	return nfd, sa, wrapNB("accept4", err)
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

// Rlimit is a resource limit: the soft (current) and hard (maximum) values.
type Rlimit = xunix.Rlimit

// GetNofile returns the process's open-file limit (RLIMIT_NOFILE).
func GetNofile() (Rlimit, error) {
	var r xunix.Rlimit
	err := xunix.Getrlimit(xunix.RLIMIT_NOFILE, &r)
	return r, wrap("getrlimit", err)
}

// SetNofile sets the process's open-file limit (RLIMIT_NOFILE).
func SetNofile(r Rlimit) error {
	return wrap("setrlimit", xunix.Setrlimit(xunix.RLIMIT_NOFILE, &r))
}

// ENOSYS is reported by system calls the running kernel lacks.
const ENOSYS = xunix.ENOSYS

// PeerAddr returns the address of a connected socket's peer; it fails with
// ENOTCONN while a connect is still in progress.
func PeerAddr(fd int) (Sockaddr, error) {
	sa, err := xunix.Getpeername(fd)
	return sa, wrap("getpeername", err)
}
