package carrier

import (
	"io"
	"math"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/spindle-lab/spindle/internal/iocopy"
	"github.com/spindle-lab/spindle/internal/unix"
)

// ReadFrom copies r to the conn until r's end (io.ReaderFrom, as
// *net.TCPConn has it, so io.Copy and net/http's file serving find it).
// When r is a file (an *os.File, or os's wrapper of one that io.Copy
// passes on, alone or in an *io.LimitedReader, as http.ServeContent gives
// it) the kernel sends it with sendfile(2), from the file's offset, which
// it moves on, without the bytes passing through user space; any other
// reader, or a file sendfile refuses before sending anything (a pipe), is
// copied through Write. Either way it behaves as Write: it waits for room
// in the socket buffer (a task of the conn's carrier parks; any other
// caller waits as its other operations do), ends with the write deadline
// (os.ErrDeadlineExceeded) or the conn's close (net.ErrClosed), its bytes
// follow those that Write accepted and have not been sent yet (the
// io_uring poller's write-behind), and no other Write interleaves. It
// returns the bytes sent and the first error other than io.EOF.
//
// With the io_uring poller, whose conns have no readiness poll, a task
// that finds the socket buffer full waits for room with a one-shot poll of
// the conn (IORING_OP_POLL_ADD for POLLOUT) and calls sendfile again: the
// same system call as with epoll, after the write-behind buffer is sent.
func (cn *Conn) ReadFrom(r io.Reader) (int64, error) {
	if s, ok := newFileSend(r); ok {
		if n, err, handled := cn.sendFile(s); handled {
			return n, err
		}
	}
	return iocopy.ThroughWrite(cn, r)
}

// fileSource is what ReadFrom sends with sendfile(2): an *os.File, or
// os's wrapper of one that hides its WriteTo (io.Copy(conn, file) passes
// that). Asking for Stat besides SyscallConn leaves out sockets (a
// net.Conn, a carrier Conn), which sendfile cannot read.
type fileSource interface {
	syscall.Conn
	Stat() (os.FileInfo, error)
}

// fileSend is one ReadFrom by sendfile(2).
type fileSend struct {
	f    fileSource
	lr   *io.LimitedReader // the limit r came in, if any (its N is updated)
	left int64             // bytes still to send; -1: up to the end of the file
	sent int64
	err  error
	// handled is false when sendfile refused the pair of descriptors
	// before it sent anything: ReadFrom copies instead.
	handled bool
	stat    *atomic.Uint64 // the conn's carrier's count of bytes sent (Telemetry.SendfileBytes)
}

// newFileSend reports whether r is a file, or a file under a limit, and
// prepares its sendfile.
func newFileSend(r io.Reader) (*fileSend, bool) {
	s := &fileSend{left: -1, handled: true}
	if lr, ok := r.(*io.LimitedReader); ok {
		s.lr, s.left, r = lr, lr.N, lr.R
	}
	f, ok := r.(fileSource)
	s.f = f
	return s, ok
}

// sendFile sends s's file on cn with sendfile(2): on the conn's raw view
// (rawConn.poll), whose Write waits for room as Write does and runs after
// the write-behind bytes; handled is false when nothing was sent because
// sendfile refused the descriptors.
func (cn *Conn) sendFile(s *fileSend) (n int64, err error, handled bool) {
	if s.left == 0 {
		return 0, nil, true
	}
	sc, err := s.f.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	if c := cn.pd.home.Load(); c != nil {
		s.stat = &c.stats.sendfileBytes
	}
	var werr error
	err = sc.Read(func(src uintptr) bool { // the file's fd, held open
		werr = rawConn{cn}.poll(true, func(dst uintptr) bool { return s.step(int(dst), int(src)) })
		return true
	})
	if s.lr != nil {
		s.lr.N -= s.sent
	}
	switch {
	case err != nil && s.sent == 0:
		return 0, nil, false
	case werr != nil:
		err = werr
	case s.err != nil:
		err = s.err
	}
	return s.sent, err, s.handled
}

// maxSendfile is the most one sendfile(2) call is asked to send (the
// kernel's own bound is a little under 2 GiB).
const maxSendfile = math.MaxInt32 &^ 4095

// step sends what the socket dst takes now from the file src. It reports
// false when the socket buffer is full (wait for room and step again),
// true when the file, or the limit, is sent, or sendfile failed (s.err;
// s.handled false when it failed at once, refusing the descriptors).
func (s *fileSend) step(dst, src int) bool {
	for s.left != 0 {
		chunk := maxSendfile
		if s.left > 0 {
			chunk = int(min(s.left, maxSendfile))
		}
		n, err := unix.Sendfile(dst, src, chunk)
		if n > 0 {
			s.sent += int64(n)
			if s.left > 0 {
				s.left -= int64(n)
			}
			if s.stat != nil {
				s.stat.Add(uint64(n))
			}
		}
		switch {
		case err == nil && n == 0: // the end of the file
			return true
		case err == nil, err == unix.EINTR:
		case err == unix.EAGAIN:
			return false
		default:
			s.err = err
			s.handled = s.sent > 0 || !unix.SendfileUnsupported(err)
			return true
		}
	}
	return true
}
