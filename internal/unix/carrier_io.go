package unix

import (
	xunix "golang.org/x/sys/unix"
)

// The carrier's I/O fast path: these variants report EAGAIN (and EINTR) as
// the bare Errno, which allocates nothing, so that a read or write that
// would block costs no allocation; other errors are wrapped as usual.

// ReadNB reads from a non-blocking fd. It returns EAGAIN or EINTR unwrapped.
func ReadNB(fd int, p []byte) (int, error) {
	n, err := xunix.Read(fd, p)
	return n, wrapNB("read", err)
}

// WriteNB writes to a non-blocking fd. It returns EAGAIN or EINTR unwrapped.
func WriteNB(fd int, p []byte) (int, error) {
	n, err := xunix.Write(fd, p)
	return n, wrapNB("write", err)
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
