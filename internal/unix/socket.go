package unix

import (
	"errors"
	"fmt"
	"net/netip"

	xunix "golang.org/x/sys/unix"
)

// Socket option and shutdown constants callers need.
const (
	SHUT_RD   = xunix.SHUT_RD
	SHUT_WR   = xunix.SHUT_WR
	SHUT_RDWR = xunix.SHUT_RDWR
)

// Sockaddr is a socket address as the kernel takes it.
type Sockaddr = xunix.Sockaddr

// SockaddrOf converts an IP address and port to a kernel socket address and
// reports its address family.
func SockaddrOf(ap netip.AddrPort) (Sockaddr, int) {
	a := ap.Addr().Unmap()
	if a.Is4() {
		return &xunix.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}, xunix.AF_INET
	}
	return &xunix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}, xunix.AF_INET6
}

// AddrPortOf converts a kernel socket address back to an IP address and port.
func AddrPortOf(sa Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *xunix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *xunix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
	}
	return netip.AddrPort{}
}

// TCPSocket creates a non-blocking, close-on-exec TCP socket for family.
func TCPSocket(family int) (int, error) {
	fd, err := xunix.Socket(family, xunix.SOCK_STREAM|xunix.SOCK_NONBLOCK|xunix.SOCK_CLOEXEC, xunix.IPPROTO_TCP)
	return fd, wrap("socket", err)
}

// Connect starts a connection; on a non-blocking socket it usually returns an
// error wrapping EINPROGRESS, after which the caller waits for EPOLLOUT and
// reads the outcome with SocketError.
func Connect(fd int, sa Sockaddr) error { return wrap("connect", xunix.Connect(fd, sa)) }

// SocketError returns and clears the socket's pending error (SO_ERROR): nil
// when a non-blocking connect succeeded.
func SocketError(fd int) error {
	v, err := xunix.GetsockoptInt(fd, xunix.SOL_SOCKET, xunix.SO_ERROR)
	if err != nil {
		return wrap("getsockopt", err)
	}
	if v != 0 {
		return wrap("connect", xunix.Errno(v))
	}
	return nil
}

// SetNoDelay turns Nagle's algorithm off (TCP_NODELAY).
func SetNoDelay(fd int) error {
	return wrap("setsockopt", xunix.SetsockoptInt(fd, xunix.IPPROTO_TCP, xunix.TCP_NODELAY, 1))
}

// SetLinger sets SO_LINGER; with on and 0 seconds, Close sends a reset.
func SetLinger(fd int, on bool, sec int) error {
	l := xunix.Linger{Linger: int32(sec)}
	if on {
		l.Onoff = 1
	}
	return wrap("setsockopt", xunix.SetsockoptLinger(fd, xunix.SOL_SOCKET, xunix.SO_LINGER, &l))
}

// ListenTCP creates a non-blocking listening socket bound to ap with
// SO_REUSEADDR, and SO_REUSEPORT when reusePort is set (one listener per
// carrier, the kernel balancing new connections between them).
func ListenTCP(ap netip.AddrPort, reusePort bool, backlog int) (int, error) {
	sa, family := SockaddrOf(ap)
	fd, err := TCPSocket(family)
	if err != nil {
		return -1, err
	}
	if err := xunix.SetsockoptInt(fd, xunix.SOL_SOCKET, xunix.SO_REUSEADDR, 1); err != nil {
		xunix.Close(fd)
		return -1, wrap("setsockopt", err)
	}
	if reusePort {
		if err := xunix.SetsockoptInt(fd, xunix.SOL_SOCKET, xunix.SO_REUSEPORT, 1); err != nil {
			xunix.Close(fd)
			return -1, wrap("setsockopt", err)
		}
	}
	if err := xunix.Bind(fd, sa); err != nil {
		xunix.Close(fd)
		return -1, fmt.Errorf("listen on %s: %w", ap, wrap("bind", err))
	}
	if err := xunix.Listen(fd, backlog); err != nil {
		xunix.Close(fd)
		return -1, fmt.Errorf("listen on %s: %w", ap, wrap("listen", err))
	}
	return fd, nil
}

// Accept accepts one connection as a non-blocking, close-on-exec socket.
func Accept(fd int) (int, Sockaddr, error) {
	nfd, sa, err := xunix.Accept4(fd, xunix.SOCK_NONBLOCK|xunix.SOCK_CLOEXEC)
	return nfd, sa, wrap("accept4", err)
}

// LocalAddr returns the address a socket is bound to.
func LocalAddr(fd int) (netip.AddrPort, error) {
	sa, err := xunix.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}, wrap("getsockname", err)
	}
	return AddrPortOf(sa), nil
}

// Shutdown shuts down part of a full-duplex connection.
func Shutdown(fd, how int) error { return wrap("shutdown", xunix.Shutdown(fd, how)) }

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

// PeerAddr returns the address of a connected socket's peer; it fails with
// ENOTCONN while a connect is still in progress.
func PeerAddr(fd int) (Sockaddr, error) {
	sa, err := xunix.Getpeername(fd)
	return sa, wrap("getpeername", err)
}

// PeerGone reports whether a connected non-blocking socket's peer has
// ended its stream with nothing left to read, or the connection failed: a
// one-byte MSG_PEEK read that sees the end of stream or an error other than
// EAGAIN. Data still to be read, or none yet, is not gone.
func PeerGone(fd int) bool {
	var b [1]byte
	for {
		n, _, err := xunix.Recvfrom(fd, b[:], xunix.MSG_PEEK|xunix.MSG_DONTWAIT)
		switch {
		case err == xunix.EINTR:
			continue
		case err != nil:
			return err != xunix.EAGAIN
		}
		return n == 0
	}
}

// Sendfile sends up to n bytes from the file src, from its current offset
// (which it moves on), to the socket dst (sendfile(2)), without the bytes
// passing through user space. On a non-blocking socket whose buffer is
// full it returns EAGAIN, bare as WriteNB does, and EINTR bare too. Like
// the carrier's other I/O it is a raw system call: the socket never
// blocks, and reading the file is copying from the page cache (a read
// that must wait for the disk holds the thread as a long computation
// would, and a carrier hands such a run off after ten thresholds); marked
// as a system call, a run that sends a few MiB into a roomy socket buffer
// would look blocked to the carrier's hand-off monitor after one.
func Sendfile(dst, src, n int) (int, error) {
	w, _, e := xunix.RawSyscall6(xunix.SYS_SENDFILE, uintptr(dst), uintptr(src), 0, uintptr(n), 0, 0)
	if e != 0 {
		return 0, wrapNB("sendfile", e)
	}
	return int(w), nil
}

// SendfileUnsupported reports whether a failed Sendfile says that the pair
// of descriptors cannot use it at all (no kernel support, a source that
// is not a file it can read pages of): the caller copies through user
// space instead, as Go's own sendfile does for ENOSYS, EINVAL and
// EOPNOTSUPP.
func SendfileUnsupported(err error) bool {
	return errors.Is(err, xunix.ENOSYS) || errors.Is(err, xunix.EINVAL) || errors.Is(err, xunix.EOPNOTSUPP)
}
