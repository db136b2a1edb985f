package carrier

import (
	"io"
	"net"
	"os"

	"github.com/spindle-lab/spindle/internal/unix"
)

// engine is how a registered fd's reads and writes reach the kernel: the
// one I/O seam of a carrier. It is chosen once, when the fd is registered
// (Carrier.register: the carrier's conn engine for a conn, readiness for a
// listener), and from then on the poller's events for the fd are delivered
// to its engine's methods, and Conn's operations are its engine's; neither
// the loop nor Conn asks which engine it has.
//
// Two engines exist:
//   - readiness (epoll, io_uring_poll, and every listener): the poller
//     reports the fd readable or writable, edge-triggered, and the task
//     makes its own non-blocking system calls;
//   - ring (PollerURing conns, ringconn.go): the poller does the reads and
//     writes itself, as RECV and SEND requests, and reports their
//     completion; writes are write-behind (writebehind.go). Such a conn has
//     no readiness poll, except while Dial connects it.
//
// A third engine is one file with a type that implements engine, plus its
// line in connEngineFor (which newCarrier calls once per carrier). Every
// method but foreign runs on the fd's carrier's thread (or its owner's,
// where it hands off), by the task that calls a Conn method or by the
// loop; foreign runs on any goroutine (an engine is immutable).
type engine interface {
	// polled reports whether the fd has a readiness poll while it is
	// registered (register arms it).
	polled() bool
	// foreign is how a foreign caller's operations reach a conn
	// (foreign.go): its own system calls (goConnPath), or those and tasks
	// of the carrier (ringPath).
	foreign() foreignPath
	// read reads into p for task t, which may park until data arrives.
	read(cn *Conn, t *Task, p []byte) (int, error)
	// write writes all of p for task t, which may park while it cannot.
	write(cn *Conn, t *Task, p []byte) (int, error)
	// flush runs before Close (closing) or CloseWrite: it sends what
	// write accepted and has not sent yet, parking the calling task.
	flush(cn *Conn, closing bool) error
	// connecting arms what Dial's task waits on while a non-blocking
	// connect completes (on: before, off: after).
	connecting(pd *pollDesc, on bool) error
	// awaitReady parks task t until cn is readable (or writable: write),
	// as the poller reports it, or its deadline in that direction passes
	// (os.ErrDeadlineExceeded) or it closes (the caller looks): the wait
	// of a system call t makes itself (rawConn.wait; a ReadFrom's
	// sendfile), which found the socket not ready.
	awaitReady(cn *Conn, t *Task, write bool) error
	// watchHangup arms (on) or stops the poll the hang-up watch needs
	// beyond the conn's own (Conn.WatchHangup); on reports true, and arms
	// nothing, when it finds the peer gone already.
	watchHangup(pd *pollDesc, on bool) (gone bool)
	// ready delivers a readiness event (unix.EPOLL* bits) for pd.
	ready(pd *pollDesc, ev uint32)
	// completed delivers the completion of a read or write the poller
	// did for a conn (op.res holds its result).
	completed(op *ioOp)
	// busy reports whether the kernel has a read or write of pd, or will
	// have one (unsent write-behind bytes): a floating carrier does not
	// hand such a conn to another carrier.
	busy(pd *pollDesc) bool
}

// connEngineFor is the engine of a carrier's conns with poller p: ring
// where p does reads and writes itself (an ioPoller that says so), else
// readiness.
func connEngineFor(p poller) engine {
	if io, ok := p.(ioPoller); ok && io.doesIO() {
		return ringConn{io}
	}
	return readinessEngine
}

// readiness is the engine of fds whose reads and writes are the task's
// own non-blocking system calls, made when the poller reports readiness.
type readiness struct{}

// readinessEngine is the readiness engine: it has no state of its own (a
// conn's edge state is pd.unread and pd.hup).
var readinessEngine engine = readiness{}

func (readiness) polled() bool { return true }

func (readiness) foreign() foreignPath { return goConnPath{} }

func (readiness) read(cn *Conn, t *Task, p []byte) (int, error) {
	pd := &cn.pd
	for {
		if pd.ended() {
			return 0, net.ErrClosed
		}
		if pd.passed(cn.rdl.Load()) {
			return 0, os.ErrDeadlineExceeded
		}
		if !pd.unread && len(p) > 0 {
			if err := pd.awaitConn(t, &pd.rwait, &cn.rdl); err != nil {
				return 0, err
			}
			continue
		}
		n, err := unix.ReadNB(pd.fd, p)
		switch {
		case err == nil:
			if n == 0 && len(p) > 0 {
				return 0, io.EOF
			}
			if n < len(p) && !pd.hup {
				pd.unread = false
			}
			t.opDone()
			return n, nil
		case err == unix.EAGAIN:
			pd.unread = false
			if err := pd.awaitConn(t, &pd.rwait, &cn.rdl); err != nil {
				return 0, err
			}
		case err == unix.EINTR:
		default:
			return 0, err
		}
	}
}

func (readiness) write(cn *Conn, t *Task, p []byte) (int, error) {
	pd := &cn.pd
	written := 0
	for written < len(p) {
		if pd.ended() {
			return written, net.ErrClosed
		}
		if pd.passed(cn.wdl.Load()) {
			return written, os.ErrDeadlineExceeded
		}
		n, err := unix.WriteNB(pd.fd, p[written:])
		switch {
		case err == nil:
			written += n
		case err == unix.EAGAIN:
			if err := pd.awaitConn(t, &pd.wwait, &cn.wdl); err != nil {
				return written, err
			}
		case err == unix.EINTR:
		default:
			return written, err
		}
	}
	t.opDone()
	return written, nil
}

// flush has nothing to send: a readiness write returns once the kernel
// took every byte.
func (readiness) flush(*Conn, bool) error { return nil }

// connecting needs nothing: the fd's readiness poll reports the connect.
func (readiness) connecting(*pollDesc, bool) error { return nil }

// awaitReady waits for the fd's readiness poll to report the edge; a
// reader first notes that the socket is drained (the call that found it
// so was its own).
func (readiness) awaitReady(cn *Conn, t *Task, write bool) error {
	pd := &cn.pd
	if write {
		return pd.awaitConn(t, &pd.wwait, &cn.wdl)
	}
	pd.unread = false
	return pd.awaitConn(t, &pd.rwait, &cn.rdl)
}

// watchHangup needs nothing: the fd's readiness poll reports the peer's
// end (readyEvent runs the watch).
func (readiness) watchHangup(*pollDesc, bool) bool { return false }

func (readiness) ready(pd *pollDesc, e uint32) { pd.readyEvent(e) }

// completed cannot happen: the poller does no read or write of a
// readiness fd.
func (readiness) completed(*ioOp) {}

func (readiness) busy(*pollDesc) bool { return false }

// hangup runs pd's hang-up watch if the peer is gone with nothing left to
// read (Conn.WatchHangup).
func (pd *pollDesc) hangup() {
	if !unix.PeerGone(pd.fd) {
		return
	}
	f := pd.onHup
	pd.onHup = nil
	f()
}

// readyEvent records a readiness event's edges on pd (unread, hup) and
// wakes the tasks parked on pd in the ready directions, except one that
// waits for a read or write the poller does (it waits for the completion,
// not for readiness: a ring conn's connect poll).
func (pd *pollDesc) readyEvent(e uint32) {
	c := pd.c
	if e&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		pd.unread = true
		pd.hup = pd.hup || e&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
		if pd.rwait != nil && !pd.rop.pending {
			c.wakeTask(pd.rwait, true)
		} else if pd.hup && pd.onHup != nil {
			pd.hangup()
		}
	}
	if e&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 && pd.wwait != nil && !pd.wop.pending {
		c.wakeTask(pd.wwait, true)
	}
}
