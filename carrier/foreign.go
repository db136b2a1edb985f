package carrier

import (
	"errors"
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

// Conns for any goroutine. A conn's operations from a task of its home
// carrier park the task, as everywhere in this package. Any other caller
// (a plain goroutine: a driver's background reader or pool, a context
// watcher, a websocket's write pump; or a task of another carrier) is a
// foreign caller, and never touches carrier state:
//
//   - With the readiness engine (epoll, io_uring_poll) it makes the fd's
//     non-blocking system calls itself and, when one would block, waits
//     the Go way (on a channel) for the next edge that the home carrier's
//     poller reports in that direction (foreignWaits: a sequence number per
//     direction, bumped by the carrier at each edge and by every deadline
//     change or close, so that no edge between a failed call and the wait
//     is lost).
//   - With the ring engine (io_uring), whose conns the kernel reads and
//     writes through the carrier's single-issuer ring, it hands the
//     operation to the home carrier as a task (SubmitLocal) and waits for
//     its result.
//
// Deadlines are atomics that any goroutine sets; a foreign setter wakes the
// foreign waiters and, when a task of the home carrier may be parked on the
// conn, asks the carrier to move that task's timer (rearmRequest). Close
// from a foreign caller is CloseAsync (readiness; the carrier closes the fd
// at its next turn, and every operation fails with net.ErrClosed from the
// call on) or a Close run on the carrier (ring: what Write accepted is sent
// first). The fd itself is reference-counted against foreign system calls
// (fref): the one of the carrier's close and the foreign callers' last
// release that comes last closes it, so that no foreign call meets a new
// file that reuses the number.
//
// A task of another carrier is a foreign caller too: it waits the Go way,
// which blocks its own carrier's thread until the carrier hands off
// (handoff.go). Per-carrier pools (PerCarrier) keep drivers' conns with the
// tasks of their carrier.

// Directions of foreignWaits.
const (
	dirRead  = 0
	dirWrite = 1
)

// foreignWaits is what foreign callers of one conn wait on, per direction.
// It is made at the conn's first foreign use (pollDesc.foreign) and lives
// as long as the conn.
type foreignWaits struct {
	// seq counts the carrier's edges and the kicks (deadline changes,
	// close): a waiter that read it before its failed call waits only
	// while it has not moved.
	seq [2]atomic.Uint64
	// wake is the channel the waiters of a direction wait on, closed (and
	// dropped) at the next kick; the first waiter makes it.
	wake [2]atomic.Pointer[chan struct{}]
}

// kick bumps dir's sequence and wakes its waiters. Any goroutine may call
// it, the carrier included.
func (f *foreignWaits) kick(dir int) {
	f.seq[dir].Add(1)
	if ch := f.wake[dir].Swap(nil); ch != nil {
		close(*ch)
	}
}

// wait waits until dir's sequence moves from s, or until deadline
// (wait.Now ns; 0: none) passes; the caller then looks again at
// everything (closed, deadline) and retries its call.
func (f *foreignWaits) wait(dir int, s uint64, deadline int64) {
	var ch *chan struct{}
	for ch == nil {
		if ch = f.wake[dir].Load(); ch == nil {
			c := make(chan struct{})
			if f.wake[dir].CompareAndSwap(nil, &c) {
				ch = &c
			}
		}
	}
	if f.seq[dir].Load() != s { // moved before the channel was there to close
		return
	}
	if deadline == 0 {
		<-*ch
		return
	}
	d := time.Duration(deadline - wait.Now())
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	select {
	case <-*ch:
	case <-tm.C:
	}
	tm.Stop()
}

// foreign returns pd's foreignWaits, making it at the first foreign use.
func (pd *pollDesc) foreign() *foreignWaits {
	if f := pd.fw.Load(); f != nil {
		return f
	}
	pd.fw.CompareAndSwap(nil, new(foreignWaits))
	return pd.fw.Load()
}

// kickForeign wakes pd's foreign waiters in both directions, if it has any.
func (pd *pollDesc) kickForeign() {
	if f := pd.fw.Load(); f != nil {
		f.kick(dirRead)
		f.kick(dirWrite)
	}
}

// fdClosedBit is fref's low bit: the conn closed its fd, or will when the
// foreign calls in flight (fref>>1) have ended.
const fdClosedBit = 1

// acquire takes a reference on pd's fd for a foreign system call; false
// when the fd is closed or closing.
func (pd *pollDesc) acquire() bool {
	for {
		v := pd.fref.Load()
		if v&fdClosedBit != 0 {
			return false
		}
		if pd.fref.CompareAndSwap(v, v+2) {
			return true
		}
	}
}

// release ends a foreign system call: the last one after the close closes
// the fd.
func (pd *pollDesc) release() {
	if pd.fref.Add(^uint64(1)) == fdClosedBit { // minus 2: closed, and no call left
		unix.Close(pd.fd)
	}
}

// closeFD closes pd's fd, now or, while foreign calls hold it, when the
// last one ends. Only the carrier calls it, once.
func (pd *pollDesc) closeFD() {
	if pd.fref.Or(fdClosedBit)>>1 == 0 {
		unix.Close(pd.fd)
	}
}

// foreignClosed reports, for a foreign caller, whether the conn is closed
// or asked to close.
func (pd *pollDesc) foreignClosed() bool {
	return pd.fref.Load()&fdClosedBit != 0 || pd.closeReq.Load()
}

// direct reports whether foreign callers make the fd's system calls
// themselves (the readiness engine) rather than hand them to the carrier.
func (pd *pollDesc) direct() bool { return pd.g.connEng.direct() }

// errNoHome is the error of a foreign operation on a conn that was never
// registered on a carrier.
var errNoHome = errors.New("carrier: conn has no home carrier")

// onCarrier runs op as a task of cn's home carrier, where cn's own
// operations park it as usual, and waits for it: the foreign form of an
// operation of the ring engine. op runs on the carrier the conn is on when
// it starts: a task that finds the conn moved (Float) is a foreign caller
// there, which hands it on.
func (cn *Conn) onCarrier(op func(t *Task)) error {
	c := cn.pd.home.Load()
	if c == nil {
		return errNoHome
	}
	done := make(chan struct{})
	if err := c.SubmitLocal(func(t *Task) {
		defer close(done)
		op(t)
	}); err != nil {
		return net.ErrClosed
	}
	<-done
	return nil
}

// foreignRead is Read for a foreign caller.
func (cn *Conn) foreignRead(p []byte) (n int, err error) {
	pd := &cn.pd
	if pd.g == nil {
		return 0, errNoHome
	}
	if !pd.direct() {
		if e := cn.onCarrier(func(*Task) { n, err = cn.Read(p) }); e != nil {
			return 0, e
		}
		return n, err
	}
	f := pd.foreign()
	for {
		if pd.foreignClosed() {
			return 0, net.ErrClosed
		}
		dl := cn.rdl.Load()
		if dl != 0 && wait.Now() >= dl {
			return 0, os.ErrDeadlineExceeded
		}
		s := f.seq[dirRead].Load()
		if !pd.acquire() {
			return 0, net.ErrClosed
		}
		n, err := unix.ReadNB(pd.fd, p)
		pd.release()
		switch {
		case err == nil:
			if n == 0 && len(p) > 0 {
				return 0, io.EOF
			}
			return n, nil
		case err == unix.EAGAIN:
			f.wait(dirRead, s, dl)
		case err == unix.EINTR:
		default:
			return 0, err
		}
	}
}

// foreignWrite is Write for a foreign caller.
func (cn *Conn) foreignWrite(p []byte) (n int, err error) {
	pd := &cn.pd
	if pd.g == nil {
		return 0, errNoHome
	}
	if !pd.direct() {
		if e := cn.onCarrier(func(*Task) { n, err = cn.Write(p) }); e != nil {
			return 0, e
		}
		return n, err
	}
	f := pd.foreign()
	written := 0
	for written < len(p) {
		if pd.foreignClosed() {
			return written, net.ErrClosed
		}
		dl := cn.wdl.Load()
		if dl != 0 && wait.Now() >= dl {
			return written, os.ErrDeadlineExceeded
		}
		s := f.seq[dirWrite].Load()
		if !pd.acquire() {
			return written, net.ErrClosed
		}
		n, err := unix.WriteNB(pd.fd, p[written:])
		pd.release()
		switch {
		case err == nil:
			written += n
		case err == unix.EAGAIN:
			f.wait(dirWrite, s, dl)
		case err == unix.EINTR:
		default:
			return written, err
		}
	}
	return written, nil
}

// foreignClose is Close for a foreign caller.
func (cn *Conn) foreignClose() (err error) {
	pd := &cn.pd
	if pd.g == nil {
		return errNoHome
	}
	if !pd.direct() { // the ring engine sends what Write accepted first
		if pd.closeReq.Load() {
			return net.ErrClosed
		}
		if e := cn.onCarrier(func(*Task) { err = cn.Close() }); e != nil {
			return e
		}
		return err
	}
	if !cn.requestClose() {
		return net.ErrClosed
	}
	return nil
}

// foreignCloseWrite is CloseWrite for a foreign caller.
func (cn *Conn) foreignCloseWrite() (err error) {
	pd := &cn.pd
	if pd.g == nil {
		return errNoHome
	}
	if !pd.direct() {
		if e := cn.onCarrier(func(*Task) { err = cn.CloseWrite() }); e != nil {
			return e
		}
		return err
	}
	if pd.foreignClosed() || !pd.acquire() {
		return net.ErrClosed
	}
	defer pd.release()
	return unix.Shutdown(pd.fd, unix.SHUT_WR)
}

// setDeadline stores a deadline (dir's: rdl or wdl) from any caller. The
// home carrier's task moves a parked task's timer itself; a foreign
// caller wakes the foreign waiters and asks the carrier to do it when a
// task may be parked on the conn (rearmRequest).
func (cn *Conn) setDeadline(dl *atomic.Int64, slot **Task, t time.Time) {
	pd := &cn.pd
	d := monoDeadline(t)
	if task := pd.current(); task != nil {
		defer task.leave(task.enter())
		dl.Store(d)
		pd.rearm(*slot, d)
		pd.kickForeign()
		return
	}
	first := pd.fw.Load() == nil
	f := pd.foreign()
	dl.Store(d)
	f.kick(dirRead)
	f.kick(dirWrite)
	// A task reads the deadline after it counts itself in taskParks, where
	// foreignWaits exist (awaitConn): either it sees the new deadline, or
	// this sees it parked. Before the first foreign use it did not count,
	// so that one always asks.
	if first || pd.taskParks.Load() > 0 {
		cn.rearmRequest()
	}
}

// rearmRequest asks the home carrier to move the timers of tasks parked on
// cn to its current deadlines, once per pending request.
func (cn *Conn) rearmRequest() {
	pd := &cn.pd
	c := pd.home.Load()
	if c == nil || pd.rearmReq.Swap(true) {
		return
	}
	c.SubmitLocal(func(t *Task) {
		pd.rearmReq.Store(false)
		if pd.c == t.home && !pd.closed() { // not moved meanwhile (Float)
			pd.rearm(pd.rwait, cn.rdl.Load())
			pd.rearm(pd.wwait, cn.wdl.Load())
		}
	})
}

// awaitConn is await for a conn operation with the conn's deadline dl,
// which any goroutine may move: where the conn has foreign callers, the
// task counts itself parked (taskParks) before it reads the deadline, so
// that a foreign setter knows to ask the carrier to move its timer.
func (pd *pollDesc) awaitConn(t *Task, slot **Task, dl *atomic.Int64) error {
	if pd.fw.Load() == nil {
		return pd.await(t, slot, dl.Load())
	}
	pd.taskParks.Add(1)
	defer pd.taskParks.Add(-1)
	return pd.await(t, slot, dl.Load())
}

// SyscallConn returns a raw view of the conn's socket, for code that
// must make a system call of its own on it (go-redis's health check peeks
// with a non-blocking recv). Control and the functions given to Read and
// Write run with the fd held open. Read and Write call f again after the
// next readiness edge each time it returns false; with the io_uring
// poller, whose conns have no readiness poll, they call it once and fail
// with errors.ErrUnsupported if it returns false.
func (cn *Conn) SyscallConn() (syscall.RawConn, error) { return rawConn{cn}, nil }

// rawConn is the syscall.RawConn of a Conn.
type rawConn struct{ cn *Conn }

func (rc rawConn) Control(f func(fd uintptr)) error {
	pd := &rc.cn.pd
	if !pd.acquire() {
		return net.ErrClosed
	}
	defer pd.release()
	f(uintptr(pd.fd))
	return nil
}

func (rc rawConn) Read(f func(fd uintptr) bool) error  { return rc.poll(dirRead, f) }
func (rc rawConn) Write(f func(fd uintptr) bool) error { return rc.poll(dirWrite, f) }

// poll calls f until it returns true, waiting for dir's next edge between
// calls: a task of the home carrier parks, any other caller waits on the
// conn's foreignWaits.
func (rc rawConn) poll(dir int, f func(fd uintptr) bool) error {
	cn := rc.cn
	pd := &cn.pd
	dl, slot := &cn.rdl, &pd.rwait
	if dir == dirWrite {
		dl, slot = &cn.wdl, &pd.wwait
	}
	t := pd.current()
	if t != nil {
		defer t.leave(t.enter())
	}
	for {
		if pd.foreignClosed() {
			return net.ErrClosed
		}
		if d := dl.Load(); d != 0 && wait.Now() >= d {
			return os.ErrDeadlineExceeded
		}
		var fw *foreignWaits
		var s uint64
		if t == nil {
			fw = pd.foreign()
			s = fw.seq[dir].Load()
		}
		if !pd.acquire() {
			return net.ErrClosed
		}
		done := f(uintptr(pd.fd))
		pd.release()
		switch {
		case done:
			return nil
		case pd.g == nil || !pd.g.connEng.polled():
			return fmt.Errorf("carrier: waiting for readiness of a conn without a readiness poll (io_uring): %w", errors.ErrUnsupported)
		case t != nil:
			if dir == dirRead {
				pd.unread = false
			}
			if err := pd.awaitConn(t, slot, dl); err != nil {
				return err
			}
		default:
			fw.wait(dir, s, dl.Load())
		}
	}
}

var _ syscall.Conn = (*Conn)(nil)
