package unix

import (
	"unsafe"

	xunix "golang.org/x/sys/unix"
)

// Close closes a raw file descriptor.
func Close(fd int) error { return wrap("close", xunix.Close(fd)) }

// DupCloexec returns a new descriptor of fd's open file (fcntl
// F_DUPFD_CLOEXEC): it shares the file's status flags (O_NONBLOCK) and,
// for a socket, the socket itself, which stays open until every
// descriptor of it is closed.
func DupCloexec(fd int) (int, error) {
	nfd, err := xunix.FcntlInt(uintptr(fd), xunix.F_DUPFD_CLOEXEC, 0)
	return nfd, wrap("fcntl F_DUPFD_CLOEXEC", err)
}

// SetNonblock sets O_NONBLOCK on fd's open file (shared by its duplicates).
func SetNonblock(fd int) error { return wrap("fcntl O_NONBLOCK", xunix.SetNonblock(fd, true)) }

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
