package carrier

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/spindle-lab/spindle/internal/unix"
)

// ringConn is the engine of conns whose reads and writes the io_uring
// poller does (PollerURing): a Read is one RECV that the task parks on
// until it completes; a Write copies into the conn's write-behind buffer,
// which the poller sends on its next pass (writebehind.go); Close and
// CloseWrite first send what Write accepted. The conn has no readiness
// poll, except while Dial connects it.
type ringConn struct{ cio ioPoller }

// polled is false: a RECV or SEND waits for the socket itself, so a
// readiness poll would only add a completion (and sometimes a wake-up) per
// arrival (docs/carrier.md, "Pollers").
func (ringConn) polled() bool { return false }

// foreign is ringPath: reads on the Go conn, writes too while the
// write-behind buffer is empty, the rest handed to the carrier.
func (ringConn) foreign() foreignPath { return ringPath{} }

func (e ringConn) read(cn *Conn, t *Task, p []byte) (int, error) {
	pd := &cn.pd
	if len(p) == 0 { // nothing for the kernel to do: the checks of a readiness read
		return readinessEngine.read(cn, t, p)
	}
	if err := pd.wb.err; err != nil && !pd.closed() { // a SEND of an earlier Write failed
		return 0, err
	}
	n, err := cn.ringIO(t, e.cio, &pd.rop, p, 0, &cn.rdl)
	if err == nil && n == 0 {
		return 0, io.EOF
	}
	return n, err
}

func (e ringConn) write(cn *Conn, t *Task, p []byte) (int, error) {
	return cn.writeBehind(t, e.cio, p)
}

func (ringConn) flush(cn *Conn, closing bool) error {
	if closing {
		return cn.flushOnClose()
	}
	return cn.flushWrites("close write")
}

// connecting arms a readiness poll for the connect (writable means
// connected or failed) and removes it once Dial has seen the outcome,
// unless a close removed it already.
func (ringConn) connecting(pd *pollDesc, on bool) error {
	switch {
	case on:
		return pd.c.poll.add(pd.fd, pd.token())
	case !pd.gone():
		pd.c.poll.remove(pd.fd, pd.token(), false)
	}
	return nil
}

// awaitReady polls the conn once for readiness in the direction (a
// one-shot POLL_ADD, parked on as on a RECV or SEND: ringIO), since it has
// no readiness poll. A writer's poll runs after the write-behind buffer
// was sent (rawConn.wait flushes it first), so it uses the write's op.
func (e ringConn) awaitReady(cn *Conn, t *Task, write bool) error {
	pd := &cn.pd
	op, events, dl := &pd.rop, uint32(unix.POLLIN|unix.POLLRDHUP), &cn.rdl
	if write {
		op, events, dl = &pd.wop, unix.POLLOUT, &cn.wdl
	}
	_, err := cn.ringIO(t, e.cio, op, nil, events, dl)
	return err
}

// watchHangup arms the hang-up watch's poll (pd.hop), a one-shot poll for
// the peer's end of stream (POLLRDHUP; errors and hang-ups are always
// reported), unless one is in the kernel already (an earlier request's:
// a disarmed watch leaves its poll there, and the next arming reuses it),
// or the end was seen already with data unread before it, when epoll's
// edge-triggered poll would report nothing more either. Before the first
// poll it looks whether the peer is gone already (a one-byte MSG_PEEK),
// as epoll's carrier knows from its last edge. Stopped, the poll stays,
// except on floating carriers, which hand a conn over only while the
// kernel holds no request of it (busy): there it is cancelled.
func (e ringConn) watchHangup(pd *pollDesc, on bool) (gone bool) {
	op := &pd.hop
	switch {
	case !on:
		if op.pending && pd.c.g.opts.Float {
			e.cio.cancelIO(op)
		}
		return false
	case op.pending || pd.hup:
		return false
	case unix.PeerGone(pd.fd):
		return true
	}
	e.armHangup(pd)
	return false
}

// armHangup submits pd's hang-up poll; without a free SQE the watch is
// not armed (only a kernel that takes no submissions leaves none).
func (e ringConn) armHangup(pd *pollDesc) {
	op := &pd.hop
	op.pd, op.write, op.poll, op.fromBuffer, op.done = pd, false, unix.POLLRDHUP, false, false
	op.pending = e.cio.startIO(op, nil)
}

// hangupPolled handles the end of pd's hang-up poll. Polled (the peer
// ended its stream, or the connection failed), it records the end as an
// epoll edge would (pd.hup: PeerClosed, and the next WatchHangup's look)
// and runs the watch, if one is armed and no task reads the conn (a
// RECV's reader sees the end itself), when nothing is left unread
// (pollDesc.hangup). Cancelled by a stopped watch (floating carriers) that
// was armed again since, it polls again; cancelled by the close, it does
// nothing: the watch went with the conn.
func (e ringConn) hangupPolled(pd *pollDesc) {
	op := &pd.hop
	op.pending = false
	switch res := op.res; {
	case pd.closed():
	case res >= 0:
		pd.hup = true
		if pd.onHup != nil && !pd.rop.pending {
			pd.hangup()
		}
	case res == -int32(unix.ECANCELED) && pd.onHup != nil:
		e.armHangup(pd)
	}
}

func (ringConn) ready(pd *pollDesc, e uint32) { pd.readyEvent(e) }

// completed wakes the task waiting for op: a read's reader; a write's
// writer, and a Close waiting for the write-behind buffer to be sent; or
// it ends the hang-up watch's poll.
func (e ringConn) completed(op *ioOp) {
	pd := op.pd
	if op == &pd.hop {
		e.hangupPolled(pd)
		return
	}
	if !op.write {
		if w := pd.rwait; w != nil {
			pd.c.wakeTask(w, true)
		}
		return
	}
	if w := pd.wwait; w != nil {
		pd.c.wakeTask(w, true)
	}
	if w := pd.cwait; w != nil {
		pd.c.wakeTask(w, true)
	}
}

func (ringConn) busy(pd *pollDesc) bool {
	return pd.rop.pending || pd.busyWriting() || pd.hop.pending
}

// ringIO has the poller read into p or write p (op says which; one
// operation), or, with events, poll the conn once for them in op's
// direction (the result is then the events), and parks the task until it
// completes. A deadline (*dl, read again after each wake-up, so that a
// setter can move it) or a close cancels the operation, and the task then
// waits for its completion without a deadline: the kernel uses p until
// then. An operation that completed before its cancellation took effect
// returns its bytes.
func (cn *Conn) ringIO(t *Task, cio ioPoller, op *ioOp, p []byte, events uint32, dl *atomic.Int64) (int, error) {
	pd := &cn.pd
	if pd.ended() {
		return 0, net.ErrClosed
	}
	if pd.passed(dl.Load()) {
		return 0, os.ErrDeadlineExceeded
	}
	op.write, op.poll = op == &pd.wop, events
	slot := &pd.rwait
	if op.write {
		slot = &pd.wwait
	}
	op.pd, op.fromBuffer, op.done, op.pending = pd, false, false, true
	if !cio.startIO(op, p) {
		op.pending = false
		return 0, errRingFull
	}
	cancelled := false
	for !op.done {
		if cancelled {
			if pd.await(t, slot, 0) == ErrCarrierStopped {
				// The kernel holds p until the carrier's shutdown quiesces
				// the ring: the task must not have it back, so it unwinds.
				panic(errStopped)
			}
			continue
		}
		// await reads the clock once and, when the deadline has passed,
		// returns its error instead of parking: then cancel.
		if pd.closed() || pd.awaitConn(t, slot, dl) != nil {
			cio.cancelIO(op)
			cancelled = true
		}
	}
	op.pending = false
	switch res := op.res; {
	case res >= 0:
		if !op.write && events == 0 { // a short read drained the socket: the next RECV polls first
			pd.unread = int(res) == len(p)
		}
		t.opDone()
		return int(res), nil
	case pd.closed(): // cancelled by the close, or failed on the closed fd
		return 0, net.ErrClosed
	case res == -int32(unix.ECANCELED):
		return 0, os.ErrDeadlineExceeded
	default:
		call := "recv"
		switch {
		case events != 0:
			call = "poll"
		case op.write:
			call = "send"
		}
		return 0, os.NewSyscallError(call, syscall.Errno(-res))
	}
}

// errRingFull is returned when the poller had no free SQE for a read or
// write (it hands the full queue to the kernel first, so only a kernel
// that takes no submissions causes it).
var errRingFull = errors.New("carrier: io_uring submission queue full")
