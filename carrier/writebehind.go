package carrier

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/internal/unix"
)

// Write-behind (PollerURing). Conn.Write copies the bytes into the conn's
// buffer and returns; the carrier's next wait submits them as one SEND with
// the other requests of the pass, in the io_uring_enter that also sleeps.
// The SEND is made so that it completes inside that enter (MSG_DONTWAIT,
// MSG_WAITALL) and posts a completion only when it failed
// (IOSQE_CQE_SKIP_SUCCESS): a response sent whole costs no completion and
// so does not end the sleep, and a request/response exchange costs one
// enter instead of two (unix.PrepSendInline). A SEND that found the socket
// buffer full sends what it could, and the rest goes as an ordinary SEND
// (which waits for room and always completes), continued until the buffer
// is empty. The rules:
//
//   - The buffer holds at most Options.WriteBuffer bytes: a Write that
//     would exceed it copies what fits and parks until SENDs drain it; the
//     write deadline bounds the park (Write then returns the bytes it
//     accepted, which are still sent, and os.ErrDeadlineExceeded).
//   - A Write of at least WriteBuffer bytes on an empty buffer is sent
//     from the caller's slice, without the copy, and waits for its SEND
//     (ringIO), as every Write did before write-behind.
//   - Bytes go out in the order Write accepted them: one SEND at a time per
//     conn, each from the front of the buffer.
//   - A SEND that fails (the peer reset the connection, say) drops the
//     unsent bytes; the error is returned by the conn's next Write, Read
//     and Close.
//   - Close sends what was accepted before it closes, parking the task
//     for at most Options.CloseFlush (or until the write deadline, when
//     that is earlier); bytes still unsent then are dropped, their SEND
//     cancelled, and Close returns an error that says how many. A Close
//     that cannot park (outside a task, or while the carrier stops) drops
//     them at once.
//   - The fd is closed only once the kernel has given back every read and
//     write of it (pollDesc.kops), so a request never meets a new file
//     that reused the number.
//   - In floating mode a task whose conn has bytes buffered or a SEND in
//     flight is not handed over (movable): the SEND belongs to the ring of
//     the carrier that queued it.

// keepWriteBuffer is the largest buffer a conn keeps once it is empty; a
// larger one (left by a burst) is given back to the garbage collector.
// 4 KiB holds the responses of the servers in this project.
const keepWriteBuffer = 4 << 10

// writeBehind is a conn's write-behind state.
type writeBehind struct {
	buf    []byte // bytes accepted and not yet sent, oldest first
	inline bool   // an inline SEND of buf's front is submitted and not yet settled
	queued bool   // on the poller's list of conns to send for
	err    error  // a SEND failed: returned by the next Write, Read and Close
	// held is len(buf), for foreign callers, which write directly only
	// while it is 0 (ringPath.write); the carrier alone changes it.
	held atomic.Int64
}

// drop forgets the unsent bytes (the SEND in flight, if any, keeps its
// own reference to the ones it sends).
func (w *writeBehind) drop() {
	w.buf = nil
	w.held.Store(0)
}

// sent removes the n bytes a SEND took from the front of the buffer. The
// kernel has no SEND of the buffer at this point, so moving the rest to
// the front is safe.
func (w *writeBehind) sent(n int) {
	rest := copy(w.buf, w.buf[min(n, len(w.buf)):])
	w.buf = w.buf[:rest]
	w.held.Store(int64(rest))
	if rest == 0 && cap(w.buf) > keepWriteBuffer {
		w.buf = nil
	}
}

// add appends p to the buffer, growing it at most to limit bytes. Growing
// allocates a new array: a SEND in flight keeps the old one reachable and
// reads bytes that the new one holds the same.
func (w *writeBehind) add(p []byte, limit int) {
	if need := len(w.buf) + len(p); need > cap(w.buf) {
		nb := make([]byte, len(w.buf), min(max(2*cap(w.buf), need, 512), max(limit, need)))
		copy(nb, w.buf)
		w.buf = nb
	}
	w.buf = append(w.buf, p...)
	w.held.Store(int64(len(w.buf)))
}

// busyWriting reports whether the conn has bytes to send or a SEND the
// kernel has not given back (a Write's own SEND that completed and that
// its task has not seen yet is given back).
func (pd *pollDesc) busyWriting() bool {
	return len(pd.wb.buf) > 0 || pd.wb.inline || (pd.wop.pending && !pd.wop.done)
}

// writeBehind is Write with the io_uring poller.
func (cn *Conn) writeBehind(t *Task, cio ioPoller, p []byte) (int, error) {
	pd := &cn.pd
	limit := pd.c.g.opts.WriteBuffer
	written := 0
	for {
		switch {
		case pd.ended():
			return written, net.ErrClosed
		case pd.wb.err != nil:
			return written, pd.wb.err
		case written == len(p):
			t.opDone()
			return written, nil
		case pd.passed(cn.wdl.Load()):
			return written, os.ErrDeadlineExceeded
		}
		rest := p[written:]
		if len(rest) >= limit && !pd.busyWriting() {
			n, err := cn.ringIO(t, cio, &pd.wop, rest, 0, &cn.wdl)
			written += n
			if err == nil && n == 0 { // a SEND that took nothing would loop for ever
				err = io.ErrShortWrite
			}
			if err != nil {
				return written, err
			}
			continue
		}
		if room := limit - len(pd.wb.buf); room > 0 {
			k := min(room, len(rest))
			pd.wb.add(rest[:k], limit)
			written += k
			cio.queueWrite(pd)
			continue
		}
		if err := pd.awaitConn(t, &pd.wwait, &cn.wdl); err != nil {
			return written, err
		}
	}
}

// flushOnClose runs in Close before the conn is shut, with the io_uring
// poller: it marks the conn closed (other tasks' operations end with
// net.ErrClosed: a parked reader cancels its RECV, a writer parked on the
// full buffer returns what it accepted) and sends what was accepted
// (flushWrites).
func (cn *Conn) flushOnClose() error {
	pd := &cn.pd
	pd.setState(descClosing)
	if pd.rwait != nil {
		pd.c.wakeTask(pd.rwait, false)
	}
	if pd.wwait != nil {
		pd.c.wakeTask(pd.wwait, false)
	}
	return cn.flushWrites("close")
}

// flushWrites parks the task until the accepted bytes are sent, within
// Options.CloseFlush or the write deadline if that is earlier. It returns
// a write error not yet reported, or one for the bytes still unsent (op
// names the caller in it); it cannot wait outside a task or while the
// carrier stops.
func (cn *Conn) flushWrites(op string) error {
	pd := &cn.pd
	c := pd.c
	if !pd.busyWriting() || pd.wb.err != nil {
		return pd.wb.err
	}
	t := pd.current()
	if t == nil {
		return fmt.Errorf("%s: %d bytes not sent: %w", op, len(pd.wb.buf), ErrNotInTask)
	}
	if c.stopping.Load() {
		return fmt.Errorf("%s: %d bytes not sent: %w", op, len(pd.wb.buf), errStopped)
	}
	now := wait.Now()
	deadline := now + int64(c.g.opts.CloseFlush)
	if wdl := cn.wdl.Load(); wdl != 0 && wdl < deadline {
		deadline = max(wdl, now)
	}
	for pd.busyWriting() && pd.wb.err == nil {
		if err := pd.await(t, &pd.cwait, deadline); err != nil {
			return fmt.Errorf("%s: %d bytes not sent within %v: %w", op, len(pd.wb.buf), time.Duration(deadline-now), err)
		}
	}
	return pd.wb.err
}

// sendFailed turns a failed SEND of the buffer (res < 0, or 0 bytes)
// into the error the conn reports next, and drops the unsent bytes.
func (pd *pollDesc) sendFailed(res int32) {
	switch {
	case pd.closed() && res == -int32(unix.ECANCELED): // cancelled by the close
		pd.wb.err = net.ErrClosed
	case res == 0:
		pd.wb.err = io.ErrShortWrite
	default:
		pd.wb.err = os.NewSyscallError("send", syscall.Errno(-res))
	}
	pd.wb.drop()
}
