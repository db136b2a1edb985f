package carrier

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
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
//   - With the readiness engine (epoll, io_uring_poll) its operations are
//     those of a Go net.Conn on a duplicate of the conn's fd (goConnPath;
//     goConn, made at the first foreign use): Go's own netpoller waits for
//     it, so a goroutine's round trip costs what a net.Conn's does, and the
//     home carrier is not involved at all. Both descriptors name one
//     socket, which stays open until both are closed: the conn's close
//     closes the duplicate too.
//   - With the ring engine (io_uring), whose conns the kernel reads and
//     writes through the carrier's single-issuer ring, and whose writes are
//     write-behind (ringPath): a read is the Go conn's, as above (a RECV of
//     a home task at the same moment is a second reader, as on any
//     net.Conn read from two goroutines); a write is the Go conn's too
//     while the conn's write-behind buffer is empty and no home task is in
//     Write, and otherwise, so as not to overtake the bytes buffered, it is
//     handed to the home carrier as a task (onCarrier; SubmitLocal),
//     which appends it to the buffer. Close and CloseWrite, which send what
//     the buffer holds first, are always handed to the carrier.
//
// The engine chooses the path (engine.foreign); Conn's methods do not ask
// which engine they have.
//
// Deadlines are atomics that any goroutine sets; a foreign setter also
// sets the Go conn's and, when a task of the home carrier may be parked on
// the conn, asks the carrier to move that task's timer (rearmRequest).
// Close from a foreign caller is CloseAsync plus the Go conn's close
// (readiness: every operation fails with net.ErrClosed from the call on,
// and the carrier closes the fd at its next turn) or a Close run on the
// carrier (ring: what Write accepted is sent first). The conn's own fd is
// reference-counted (fref) against the foreign uses of it (the duplicate's
// making, SyscallConn's Control), so that none meets a new file that reuses
// the number.
//
// A task of another carrier is a foreign caller too: it waits the Go way,
// which blocks its own carrier's thread until the carrier hands off
// (handoff.go). Per-carrier pools (PerCarrier) keep drivers' conns with the
// tasks of their carrier.

// fdClosedBit is fref's low bit: the conn closed its fd, or will when the
// foreign uses in flight (fref>>1) have ended.
const fdClosedBit = 1

// refFD takes a reference on pd's fd for a foreign use; false when the
// fd is closed or closing.
func (pd *pollDesc) refFD() bool {
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

// unrefFD ends a foreign use: the last one after the close closes the fd.
func (pd *pollDesc) unrefFD() {
	if pd.fref.Add(^uint64(1)) == fdClosedBit { // minus 2: closed, and no use left
		unix.Close(pd.fd)
	}
}

// closeFD closes pd's fd, now or, while foreign uses hold it, when the
// last one ends, and the foreign callers' Go conn on its duplicate. Only
// the carrier calls it, once.
func (pd *pollDesc) closeFD() {
	if pd.fref.Or(fdClosedBit)>>1 == 0 {
		unix.Close(pd.fd)
	}
	pd.closeGoConn()
}

// closeGoConn closes the foreign callers' Go conn, if there is one: its
// waiters wake with net.ErrClosed. Closing it twice is harmless.
func (pd *pollDesc) closeGoConn() {
	if c := pd.gc.Load(); c != nil {
		(*c).Close()
	}
}

// foreignClosed reports, for a foreign caller, whether the conn is closed
// or asked to close.
func (pd *pollDesc) foreignClosed() bool {
	return pd.fref.Load()&fdClosedBit != 0 || pd.closeReq.Load()
}

// foreignPath is how a foreign caller's operations reach a conn, as the
// conn engine chooses (engine.foreign): goConnPath, the fd's own system
// calls through a Go net.Conn on a duplicate of it, or ringPath, which
// runs what must follow the carrier's buffered writes as a task of the
// home carrier. The caller has marked the conn used (foreignUse) before
// read, write, close and closeWrite.
type foreignPath interface {
	read(cn *Conn, p []byte) (int, error)
	write(cn *Conn, p []byte) (int, error)
	close(cn *Conn) error
	closeWrite(cn *Conn) error
	// rawPoll is SyscallConn's Read or Write (rawConn.poll) for a foreign
	// caller.
	rawPoll(cn *Conn, write bool, f func(fd uintptr) bool) error
}

// foreign is the path of pd's foreign callers: its group's conn engine's
// (fixed for the group's life, unlike pd.eng, which its carrier writes).
func (pd *pollDesc) foreign() foreignPath { return pd.g.connEng.foreign() }

// errNoHome is the error of a foreign operation on a conn that was never
// registered on a carrier.
var errNoHome = errors.New("carrier: conn has no home carrier")

// foreignUse marks cn used by a foreign caller and reports whether it is
// the first such use (see setDeadline), or an error for a conn without a
// group.
func (cn *Conn) foreignUse() (first bool, err error) {
	if cn.pd.g == nil {
		return false, errNoHome
	}
	return !cn.pd.foreignUsed.Swap(true), nil
}

// unpollRequest asks the home carrier to take cn off its poller while no
// task waits on it: foreign callers wait in Go's netpoller, and the
// carrier's own poll would only wake the carrier at every arrival for
// nothing (a goroutine's round trip cost 1.24x a net.Conn's with it). A
// task that then parks on cn puts it back first (awaitConn).
func (cn *Conn) unpollRequest() {
	pd := &cn.pd
	if c := pd.home.Load(); c != nil {
		c.SubmitLocal(func(t *Task) { pd.unpoll(t.home) })
	}
}

// unpoll is unpollRequest's step on carrier c: it takes pd off c's poller
// if c is still its carrier, it is open and polled, and no task waits on it.
func (pd *pollDesc) unpoll(c *Carrier) {
	if pd.c == c && pd.state == descOpen && !pd.unpolled && pd.rwait == nil && pd.wwait == nil {
		c.poll.remove(pd.fd, pd.token(), false)
		pd.unpolled = true
	}
}

// repoll puts pd, taken off its carrier's poller (unpoll), back on it
// under a new token (fdTable.renew): io_uring posts the removed poll's
// cancellation after the fact, and under the same token the poller would
// take it for the new poll's end and arm a second poll, which the conn's
// close would not cancel. An edge-triggered add reports the fd at once if
// it is ready.
func (pd *pollDesc) repoll() error {
	pd.c.fdt.renew(pd)
	if err := pd.c.poll.add(pd.fd, pd.token()); err != nil {
		return err
	}
	pd.unpolled = false
	return nil
}

// goConn returns the Go net.Conn on a duplicate of cn's fd that foreign
// callers use, made at the first call (or the first since the carrier
// dropped it: goParked) with cn's current deadlines; with the readiness
// engine the making takes the conn off the home carrier's poller until a
// task parks on it (unpollRequest). Only an operation on the Go conn
// calls it (goConnBegin).
func (cn *Conn) goConn() (net.Conn, error) {
	pd := &cn.pd
	if c := pd.gc.Load(); c != nil {
		return *c, nil
	}
	if !pd.refFD() {
		return nil, net.ErrClosed
	}
	dfd, err := unix.DupCloexec(pd.fd)
	pd.unrefFD()
	if err != nil {
		return nil, fmt.Errorf("carrier: a conn for a foreign caller: %w", err)
	}
	f := os.NewFile(uintptr(dfd), "carrier-conn")
	nc, err := net.FileConn(f) // its own duplicate, in Go's netpoller
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("carrier: a conn for a foreign caller: %w", err)
	}
	if !pd.gc.CompareAndSwap(nil, &nc) {
		nc.Close()
		return *pd.gc.Load(), nil
	}
	nc.SetReadDeadline(wallDeadline(cn.rdl.Load()))
	nc.SetWriteDeadline(wallDeadline(cn.wdl.Load()))
	// The close stores its bit, then looks for the Go conn; this stored the
	// Go conn and now looks for the bit: one of the two closes it.
	if pd.foreignClosed() {
		nc.Close()
		return nc, nil
	}
	if pd.g.connEng.polled() {
		cn.unpollRequest()
	}
	return nc, nil
}

// The Go conn lives while foreign callers use it. Its duplicate fd is in
// Go's netpoller, which every arrival on the socket wakes, edge-triggered,
// whoever reads it: where a task of the home carrier is the only reader
// (a pgx conn that the pool's goroutine dialled and greeted, then only
// its carrier's requests query), each arrival woke a thread of the
// runtime that found no goroutine to run: about one epoll_pwait and two
// context switches per query, on the carrier's CPU (docs/PERFORMANCE.md,
// "Thirteenth session"). So a task that parks on the conn for the
// goConnQuietParks-th time in a row with no foreign operation begun in
// between, and none in flight, has the carrier close the Go conn
// (goParked); the next foreign operation makes a new one (a dup and
// Go's registration: a few system calls, once per switch).
//
// goUse counts the operations on the Go conn: in its high 32 bits those
// begun, from bit 1 those in flight; bit 0 (goDropping) is set while the
// carrier drops it. An operation begins only while bit 0 is clear, and
// the carrier sets it only while none is in flight, so no operation meets
// a Go conn closed under it.
const (
	goDropping     = 1
	goInFlight     = 2
	goBegun        = 1 << 32
	goInFlightMask = goBegun - goInFlight
	// goConnQuietParks is how many parks of the home carrier's tasks in a
	// row, with no foreign operation begun, drop the Go conn: a conn that
	// goroutines and tasks take turns on keeps it (a websocket's write
	// pump beside its reading task), and one that goroutines leave alone
	// loses it after a few round trips. A drop and the next making cost
	// about ten system calls, so a conn that keeps switching at the worst
	// rhythm pays about one per park, as it paid one wake-up per arrival.
	goConnQuietParks = 8
)

// goConnBegin begins a foreign operation on cn's Go conn and returns the
// Go conn (goConn); goConnEnd ends the operation, whatever the result.
func (cn *Conn) goConnBegin() (net.Conn, error) {
	pd := &cn.pd
	for {
		v := pd.goUse.Load()
		if v&goDropping == 0 && pd.goUse.CompareAndSwap(v, v+goBegun+goInFlight) {
			return cn.goConn()
		}
		runtime.Gosched() // the carrier is dropping it: a swap and a store
	}
}

// goConnEnd ends an operation goConnBegin began.
func (pd *pollDesc) goConnEnd() { pd.goUse.Add(^uint64(goInFlight - 1)) } // minus goInFlight

// goParked runs on the home carrier as a task parks on pd (awaitConn):
// the goConnQuietParks-th park in a row with no foreign operation begun
// since the first, and none in flight, closes the Go conn.
func (pd *pollDesc) goParked() {
	gc := pd.gc.Load()
	if gc == nil {
		return
	}
	v := pd.goUse.Load()
	if begun := uint32(v >> 32); begun != pd.goSeen {
		pd.goSeen, pd.goQuiet = begun, 0
		return
	}
	if pd.goQuiet++; pd.goQuiet < goConnQuietParks || v&goInFlightMask != 0 ||
		!pd.goUse.CompareAndSwap(v, v|goDropping) {
		return
	}
	// gc is still the Go conn: only goConn stores one, in an operation,
	// and only where there is none.
	pd.gc.Store(nil)
	pd.goUse.Store(v)
	pd.goQuiet = 0
	(*gc).Close()
	add(&pd.c.stats.goConnsDropped, 1)
}

// wallDeadline converts a stored deadline (wait.Now ns; 0: none) back to
// a time for the Go conn.
func wallDeadline(d int64) time.Time {
	switch {
	case d == 0:
		return time.Time{}
	case d == deadlinePassed:
		return time.Unix(1, 0)
	}
	return time.Now().Add(time.Duration(d - wait.Now()))
}

// plainErr turns the Go conn's errors into the conn's own: the deadline's
// and the close's sentinels bare, as a task's operations return them.
func plainErr(err error) error {
	switch {
	case err == nil, err == io.EOF:
		return err
	case errors.Is(err, os.ErrDeadlineExceeded):
		return os.ErrDeadlineExceeded
	case errors.Is(err, net.ErrClosed):
		return net.ErrClosed
	}
	return err
}

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
	ran := false
	if err := c.SubmitLocal(func(t *Task) {
		defer close(done)
		op(t)
		ran = true // not when the carrier's stop unwound the task
	}); err != nil {
		return net.ErrClosed
	}
	if err := c.await(done); err != nil || !ran {
		return net.ErrClosed
	}
	return nil
}

// await waits for done, closed by a task submitted to c, or for c to
// finish: a carrier that stops drops the tasks still queued unrun, whose
// submitters would otherwise wait for ever (a goroutine's operation on an
// io_uring conn while its group closes).
func (c *Carrier) await(done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-c.done:
		select {
		case <-done: // it ran before the carrier finished
			return nil
		default:
			return net.ErrClosed
		}
	}
}

// foreignRead is Read for a foreign caller.
func (cn *Conn) foreignRead(p []byte) (int, error) {
	if _, err := cn.foreignUse(); err != nil {
		return 0, err
	}
	return cn.pd.foreign().read(cn, p)
}

// foreignWrite is Write for a foreign caller.
func (cn *Conn) foreignWrite(p []byte) (int, error) {
	if _, err := cn.foreignUse(); err != nil {
		return 0, err
	}
	return cn.pd.foreign().write(cn, p)
}

// foreignClose is Close for a foreign caller.
func (cn *Conn) foreignClose() error {
	if _, err := cn.foreignUse(); err != nil {
		return err
	}
	return cn.pd.foreign().close(cn)
}

// foreignCloseWrite is CloseWrite for a foreign caller.
func (cn *Conn) foreignCloseWrite() error {
	if _, err := cn.foreignUse(); err != nil {
		return err
	}
	return cn.pd.foreign().closeWrite(cn)
}

// goConnPath is the foreign path of the readiness engine: a foreign
// caller's operations are those of the Go conn on a duplicate of the fd
// (goConn), which Go's netpoller waits for.
type goConnPath struct{}

func (goConnPath) read(cn *Conn, p []byte) (int, error) { return goConnIO(cn, p, net.Conn.Read) }

// write waits for a home task's Write under way (awaitDirectWrite).
func (goConnPath) write(cn *Conn, p []byte) (int, error) {
	if err := cn.awaitDirectWrite(); err != nil {
		return 0, err
	}
	defer cn.pd.wForeign.Add(-1)
	return goConnIO(cn, p, net.Conn.Write)
}

// goConnIO runs op (the Go conn's Read or Write) of p on cn's Go conn.
func goConnIO(cn *Conn, p []byte, op func(net.Conn, []byte) (int, error)) (int, error) {
	if cn.pd.foreignClosed() {
		return 0, net.ErrClosed
	}
	nc, err := cn.goConnBegin()
	defer cn.pd.goConnEnd()
	if err != nil {
		return 0, err
	}
	n, err := op(nc, p)
	return n, plainErr(err)
}

// close is CloseAsync's request (the carrier closes the fd at its next
// turn), which closes the Go conn at once.
func (goConnPath) close(cn *Conn) error {
	if !cn.requestClose() {
		return net.ErrClosed
	}
	return nil
}

func (goConnPath) closeWrite(cn *Conn) error {
	if cn.pd.foreignClosed() {
		return net.ErrClosed
	}
	nc, err := cn.goConnBegin()
	defer cn.pd.goConnEnd()
	if err != nil {
		return err
	}
	return plainErr(nc.(*net.TCPConn).CloseWrite()) // a shutdown of the socket both descriptors name
}

// rawPoll waits in Go's netpoller, through the Go conn's raw conn; a
// write waits for a home task's Write under way (awaitDirectWrite) first.
func (goConnPath) rawPoll(cn *Conn, write bool, f func(fd uintptr) bool) error {
	if write {
		if err := cn.awaitDirectWrite(); err != nil {
			return err
		}
		defer cn.pd.wForeign.Add(-1)
	}
	return goRawPoll(cn, write, f)
}

// goRawPoll is rawPoll on the Go conn's raw conn.
func goRawPoll(cn *Conn, write bool, f func(fd uintptr) bool) error {
	if _, err := cn.foreignUse(); err != nil {
		return err
	}
	nc, err := cn.goConnBegin()
	defer cn.pd.goConnEnd()
	if err != nil {
		return err
	}
	raw, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		return err
	}
	if write {
		return plainErr(raw.Write(f))
	}
	return plainErr(raw.Read(f))
}

// Writers. A home task's Write and a foreign caller's on the Go conn, at
// the same moment, must not interleave their bytes (net.Conn's Writes
// do not), and a foreign caller's must not overtake the bytes that the
// ring engine's write-behind holds. So each counts itself in before it
// looks at the other (wHome, wForeign: of two at once, at least one sees
// the other), and:
//   - a home task that sees a foreign writer waits for it to end
//     (beginHomeWrite), yielding, then sleeping in steps;
//   - a foreign writer that sees a home task's Write, or buffered bytes,
//     counts itself out again and waits the Go way for the home writer to
//     end (readiness: awaitDirectWrite), or has the carrier append its
//     bytes to the buffer (ring: ringPath.write).
//
// Such waits are rare: a conn that a task and a goroutine write at the
// same moment, with a full socket buffer (a websocket's write pump beside
// its task's pong), or a goroutine's write just after a task's.

// A writer that meets the other kind's write under way gives way
// writerYields times (a task yields, a goroutine calls runtime.Gosched),
// then sleeps, a home task homeWriteNap at a time and a goroutine
// foreignWriteNap (the other write waits for room in a full socket
// buffer): backOff's i-th turn.
const (
	writerYields    = 16
	homeWriteNap    = 50 * time.Microsecond
	foreignWriteNap = 20 * time.Microsecond
)

// backOff is a waiting writer's i-th turn: giveWay for the first
// writerYields, nap after.
func backOff(i int, giveWay, nap func()) {
	if i < writerYields {
		giveWay()
	} else {
		nap()
	}
}

// beginHomeWrite counts home task t's Write in (wHome), then waits for a
// foreign caller's write under way to end. The caller counts it out
// (wHome.Add(-1)) after the Write, unless this failed.
func (pd *pollDesc) beginHomeWrite(t *Task) error {
	pd.wHome.Add(1)
	for i := 0; pd.wForeign.Load() != 0; i++ {
		if pd.ended() {
			pd.wHome.Add(-1)
			return net.ErrClosed
		}
		backOff(i, t.Yield, func() { t.Sleep(homeWriteNap) })
	}
	return nil
}

// directWrite counts a foreign caller's write in (wForeign) and reports
// true if it may go now: no home task in Write, nothing buffered. On
// false it has counted it out again.
func (cn *Conn) directWrite() bool {
	pd := &cn.pd
	pd.wForeign.Add(1)
	if pd.wHome.Load() == 0 && pd.wb.held.Load() == 0 {
		return true
	}
	pd.wForeign.Add(-1)
	return false
}

// awaitDirectWrite waits the Go way until a foreign caller's write may go
// (directWrite), counted in; it ends with the conn's close or its write
// deadline. The caller counts it out (wForeign.Add(-1)) after the write.
func (cn *Conn) awaitDirectWrite() error {
	for i := 0; !cn.directWrite(); i++ {
		if cn.pd.foreignClosed() {
			return net.ErrClosed
		}
		if d := cn.wdl.Load(); d != 0 && wait.Now() >= d {
			return os.ErrDeadlineExceeded
		}
		backOff(i, runtime.Gosched, func() { time.Sleep(foreignWriteNap) })
	}
	return nil
}

// ringPath is the foreign path of the ring engine: reads on the Go conn
// (goConnPath's), writes on it while nothing of the home carrier's is to
// be sent before them, and the rest as tasks of the home carrier
// (onCarrier), where the conn's own operations park them as usual.
type ringPath struct{}

func (ringPath) read(cn *Conn, p []byte) (int, error) { return goConnIO(cn, p, net.Conn.Read) }

// write is the Go conn's Write while the write-behind buffer is empty and
// no home task is in Write (directWrite), else a task's Write on the
// carrier, which appends p to the buffer after the bytes there.
func (ringPath) write(cn *Conn, p []byte) (int, error) {
	if !cn.directWrite() {
		return cn.writeOnCarrier(p)
	}
	defer cn.pd.wForeign.Add(-1)
	return goConnIO(cn, p, net.Conn.Write)
}

// writeOnCarrier runs Write of p on the home carrier (onCarrier). It is a
// function of its own so that the results its task sets escape to the
// heap only on this path, not on the direct one.
func (cn *Conn) writeOnCarrier(p []byte) (n int, err error) {
	if e := cn.onCarrier(func(*Task) { n, err = cn.Write(p) }); e != nil {
		return 0, e
	}
	return n, err
}

// rawPoll waits in Go's netpoller for a read, and for a write that may go
// directly (directWrite); a write behind buffered bytes gets f's one call
// on the carrier once they are sent (the conn has no readiness poll to
// wait for: rawConn.wait).
func (ringPath) rawPoll(cn *Conn, write bool, f func(fd uintptr) bool) error {
	if write {
		if !cn.directWrite() {
			return cn.rawWriteOnCarrier(f)
		}
		defer cn.pd.wForeign.Add(-1)
	}
	return goRawPoll(cn, write, f)
}

// rawWriteOnCarrier gives f its one call on the home carrier as a task's
// raw write: after the writes of the carrier's tasks under way and the
// bytes Write accepted (rawConn.wait; the conn has no readiness poll to
// wait for).
func (cn *Conn) rawWriteOnCarrier(f func(fd uintptr) bool) (err error) {
	if e := cn.onCarrier(func(t *Task) { err = rawConn{cn}.wait(t, true, f) }); e != nil {
		return e
	}
	return err
}

// close runs Close on the carrier, which sends what Write accepted first.
func (ringPath) close(cn *Conn) (err error) {
	if cn.pd.closeReq.Load() {
		return net.ErrClosed
	}
	if e := cn.onCarrier(func(*Task) { err = cn.Close() }); e != nil {
		return e
	}
	return err
}

// closeWrite runs CloseWrite on the carrier, after what Write accepted.
func (ringPath) closeWrite(cn *Conn) (err error) {
	if e := cn.onCarrier(func(*Task) { err = cn.CloseWrite() }); e != nil {
		return e
	}
	return err
}

// setDeadline stores a deadline (dl: rdl or wdl; slot the tasks parked in
// that direction) from any caller, and the Go conn's, if foreign callers
// made one. The home carrier's task moves a parked task's timer itself; a
// foreign caller asks the carrier to do it when a task may be parked on
// the conn (rearmRequest).
func (cn *Conn) setDeadline(dl *atomic.Int64, slot **Task, t time.Time) {
	pd := &cn.pd
	d := monoDeadline(t)
	setGo := func() {
		if c := pd.gc.Load(); c != nil {
			if dl == &cn.rdl {
				(*c).SetReadDeadline(t)
			} else {
				(*c).SetWriteDeadline(t)
			}
		}
	}
	if task := pd.current(); task != nil {
		defer task.leave(task.enter())
		dl.Store(d)
		pd.rearm(*slot, d)
		setGo()
		return
	}
	first, err := cn.foreignUse()
	if err != nil {
		dl.Store(d)
		return
	}
	dl.Store(d)
	setGo()
	// A task reads the deadline after it counts itself in taskParks, once
	// foreign callers exist (awaitConn): either it sees the new deadline,
	// or this sees it parked. Before the first foreign use it did not
	// count, so that one always asks.
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
// which any goroutine may move: once the conn has foreign callers, the
// task counts itself parked (taskParks) before it reads the deadline, so
// that a foreign setter knows to ask the carrier to move its timer.
func (pd *pollDesc) awaitConn(t *Task, slot **Task, dl *atomic.Int64) error {
	if !pd.foreignUsed.Load() {
		return pd.await(t, slot, dl.Load())
	}
	if pd.unpolled { // taken off the poller for its foreign callers (unpollRequest): back on
		if err := pd.repoll(); err != nil {
			return err
		}
	}
	pd.goParked()
	pd.taskParks.Add(1)
	defer pd.taskParks.Add(-1)
	return pd.await(t, slot, dl.Load())
}

// SyscallConn returns a raw view of the conn's socket, for code that
// must make a system call of its own on it (go-redis's health check peeks
// with a non-blocking recv). Control and the functions given to Read and
// Write run with the fd held open. Read and Write call f again after the
// next readiness edge each time it returns false (a foreign caller's wait
// is Go's netpoller's, on the conn's duplicate; with the io_uring poller,
// whose conns have no readiness poll, a task's wait, and a foreign
// caller's Write's while the conn has buffered bytes to send, which runs
// on the carrier once they are sent, is a one-shot poll of the conn); a
// Write's f runs after the bytes Write accepted are sent (write-behind),
// and its bytes do not interleave with another Write's.
func (cn *Conn) SyscallConn() (syscall.RawConn, error) { return rawConn{cn}, nil }

// rawConn is the syscall.RawConn of a Conn.
type rawConn struct{ cn *Conn }

func (rc rawConn) Control(f func(fd uintptr)) error {
	pd := &rc.cn.pd
	if !pd.refFD() {
		return net.ErrClosed
	}
	defer pd.unrefFD()
	f(uintptr(pd.fd))
	return nil
}

func (rc rawConn) Read(f func(fd uintptr) bool) error  { return rc.poll(false, f) }
func (rc rawConn) Write(f func(fd uintptr) bool) error { return rc.poll(true, f) }

// poll calls f until it returns true, waiting for the next readiness edge
// in its direction between calls: a task of the home carrier parks; any
// other caller takes its conn's foreign path (foreignPath.rawPoll).
func (rc rawConn) poll(write bool, f func(fd uintptr) bool) error {
	pd := &rc.cn.pd
	t := pd.current()
	if t == nil && pd.g != nil {
		return pd.foreign().rawPoll(rc.cn, write, f)
	}
	return rc.wait(t, write, f)
}

// wait is poll for task t of the home carrier (a foreign caller's raw
// write behind buffered bytes runs as one: rawWriteOnCarrier), or for the
// caller of a conn without a group (t nil), which f gets one call. A
// task handed off whose carrier stopped gets ErrCarrierStopped, as from
// Write.
func (rc rawConn) wait(t *Task, write bool, f func(fd uintptr) bool) error {
	cn := rc.cn
	pd := &cn.pd
	dl, lock := &cn.rdl, &pd.rl
	if write {
		dl, lock = &cn.wdl, &pd.wl
	}
	if t != nil { // a task takes its turn with the conn's other readers (writers)
		outer, err := t.enterIO()
		if err != nil {
			return err
		}
		defer t.leave(outer)
		lock.lock(t)
		defer lock.unlock(t)
		if write { // after what Write accepted (write-behind), as a Write would be, and no foreign write beside it
			if err := pd.beginHomeWrite(t); err != nil {
				return err
			}
			defer pd.wHome.Add(-1)
			if err := cn.flushWrites("write"); err != nil {
				return err
			}
		}
	}
	for {
		if pd.foreignClosed() || (t != nil && pd.ended()) {
			return net.ErrClosed
		}
		if d := dl.Load(); d != 0 && wait.Now() >= d {
			return os.ErrDeadlineExceeded
		}
		if !pd.refFD() {
			return net.ErrClosed
		}
		done := f(uintptr(pd.fd))
		pd.unrefFD()
		switch {
		case done:
			return nil
		case t == nil:
			return fmt.Errorf("carrier: waiting for readiness of a conn without a home carrier: %w", errors.ErrUnsupported)
		}
		if err := pd.eng.awaitReady(cn, t, write); err != nil {
			return err
		}
	}
}

var _ syscall.Conn = (*Conn)(nil)
