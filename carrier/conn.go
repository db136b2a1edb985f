package carrier

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/internal/unix"
)

// pollDesc is an fd registered on its carrier (a conn's or a listener's),
// with its lifecycle state (states.go), its engine (engine.go) and the
// tasks parked on it.
type pollDesc struct {
	fd    int
	c     *Carrier
	state descState
	eng   engine // chosen at registration; nil before
	slot  int32
	gen   uint32
	conn  bool  // counted in OpenConns
	rwait *Task // task parked until readable (or its read done)
	wwait *Task // task parked until writable (or its write done)
	// rl and wl let one task of the home carrier at a time read, and
	// write, as a net.Conn's Reads and Writes take turns: the others wait
	// in their queues.
	rl, wl taskLock
	// unpolled says the poller no longer reports pd: only foreign callers
	// used it since (foreign.go, unpollRequest), until a task parks on it.
	unpolled bool
	// unread is false once a read found the socket drained (a short read
	// or EAGAIN) and true again when the poller reports it readable. With
	// edge-triggered readiness every arrival after the drain queues an
	// event, so a reader that finds unread false parks at once and saves
	// the read that would only say EAGAIN.
	unread bool
	// hup is set once the poller reports the peer's end of stream (or an
	// error): a short read then does not mean drained, since the end of
	// stream still waits to be read and no further edge will announce it
	// (data and FIN arriving together make one event).
	hup bool
	// onHup is the hang-up watch (Conn.WatchHangup): run once, by the
	// carrier, when the poller reports the peer gone with nothing left
	// to read.
	onHup func()
	// The ring engine's (ringconn.go): the conn's read and write when the
	// poller does them (or its polls for readiness in their directions),
	// the hang-up watch's poll, the task parked in Close until the
	// write-behind buffer is sent, that buffer, and the requests of the fd
	// the kernel holds (the fd stays open until none: descDraining).
	rop, wop, hop ioOp
	cwait         *Task
	wb            writeBehind
	kops          int
	// cn is the conn pd belongs to (nil for a listener), g its group, both
	// fixed at creation; closeReq is set by CloseAsync, from anywhere.
	cn       *Conn
	g        *Group
	closeReq atomic.Bool
	// For foreign callers (foreign.go), all read and written atomically:
	// home is the carrier pd is registered on (set at each registration);
	// foreignUsed says a foreign caller used the conn; gc is their Go conn
	// on a duplicate of the fd (readiness engine), made at the first use;
	// fref the fd's references by foreign uses, and its closed bit;
	// taskParks the tasks parked on pd once foreignUsed; rearmReq a request
	// to move their timers, pending; goUse the operations on gc (begun and
	// in flight, goConnBegin), and goSeen and goQuiet, the carrier's, the
	// begun count it last saw and the tasks' parks since (goParked);
	// wHome and wForeign the writers in flight, a home task's Write and a
	// foreign caller's on the Go conn (beginHomeWrite).
	home        atomic.Pointer[Carrier]
	foreignUsed atomic.Bool
	gc          atomic.Pointer[net.Conn]
	fref        atomic.Uint64
	taskParks   atomic.Int32
	rearmReq    atomic.Bool
	goUse       atomic.Uint64
	goSeen      uint32
	goQuiet     int
	wHome       atomic.Int32
	wForeign    atomic.Int32
}

// register adds pd to c's fd table and poller, with c's engine for its
// kind (conn or listener). It runs on c's thread.
func (c *Carrier) register(pd *pollDesc) error {
	c.fdt.add(pd)
	pd.c = c
	pd.unread = true // unknown: try the first read
	pd.hup = false
	pd.eng = readinessEngine
	if pd.conn {
		pd.eng = c.connEng
	}
	if pd.eng.polled() {
		if err := c.poll.add(pd.fd, pd.token()); err != nil {
			c.fdt.drop(pd)
			return err
		}
	}
	pd.setState(descOpen)
	pd.home.Store(c)
	if pd.conn {
		gauge(&c.stats.openConns, 1)
	}
	return nil
}

// token is what the poller reports pd's events with (fdTable).
func (pd *pollDesc) token() uint64 { return uint64(pd.slot+1) | uint64(pd.gen)<<32 }

// forget drops pd from c's fd table; the caller closes the fd or deletes
// it from the poller.
func (c *Carrier) forget(pd *pollDesc) {
	c.fdt.drop(pd)
	if pd.conn {
		gauge(&c.stats.openConns, -1)
	}
}

// shut closes the fd, removes it from the poller, forgets it and wakes the
// tasks parked on it (they see closed).
func (pd *pollDesc) shut() {
	if pd.gone() {
		return
	}
	c := pd.c
	c.poll.remove(pd.fd, pd.token(), true)
	c.forget(pd)
	pd.wb.drop()
	pd.onHup = nil
	if pd.kops > 0 {
		// The kernel still has a read or write of this fd (cancelled by
		// remove): the last completion closes it (opEnded).
		pd.setState(descDraining)
	} else {
		pd.setState(descShut)
		pd.closeFD()
	}
	pd.wakeAll()
}

// wakeAll wakes every task parked on pd (they see closed).
func (pd *pollDesc) wakeAll() {
	for _, t := range [...]*Task{pd.rwait, pd.wwait, pd.cwait} {
		if t != nil {
			pd.c.wakeTask(t, false)
		}
	}
}

// opEnded is called by the poller when the kernel gives back a read or
// write of pd's fd: the last one of a conn already shut closes the fd.
func (pd *pollDesc) opEnded() {
	pd.kops--
	if pd.kops == 0 && pd.state == descDraining {
		pd.setState(descShut)
		pd.closeFD()
	}
}

// await parks the current task until pd is ready in the direction slot
// names (&pd.rwait or &pd.wwait) or the deadline (monotonic ns, 0: none)
// passes. The caller retries its operation and checks the deadline. It is
// where an operation reads the clock: when the deadline has passed it
// returns os.ErrDeadlineExceeded at once instead of parking. When the
// carrier stops while the task waits, it returns ErrCarrierStopped (park).
func (pd *pollDesc) await(t *Task, slot **Task, deadline int64) error {
	if deadline != 0 {
		if wait.Now() >= deadline {
			return os.ErrDeadlineExceeded
		}
		pd.c.timers.add(t, deadline)
	}
	*slot = t
	woken := t.park()
	*slot = nil
	pd.c.timers.remove(t)
	if !woken {
		return ErrCarrierStopped
	}
	return nil
}

// clockSlack is how far beyond the carrier's cached clock reading (c.now)
// a deadline must lie for an operation to trust that reading and skip its
// own. The reading is at most as old as the current task's run since it
// last resumed (the carrier takes one before each task), which is
// microseconds for a task that does I/O (the drain budget is 50µs, and
// OpBudget makes a task that never parks yield); a millisecond covers that
// with a wide margin, while deadlines are usually seconds away.
const clockSlack = int64(time.Millisecond)

// passed reports whether deadline (monotonic ns; 0: none) has passed. It
// decides from the carrier's cached clock reading, which never runs ahead
// of the clock, when that is conclusive: the deadline is at or before it,
// or more than clockSlack after it. Only a deadline within clockSlack of
// the cached reading costs a clock read.
func (pd *pollDesc) passed(deadline int64) bool {
	switch {
	case deadline == 0:
		return false
	case pd.c.now >= deadline:
		return true
	case deadline-pd.c.now > clockSlack:
		return false
	}
	return wait.Now() >= deadline
}

// current returns the task of pd's carrier that calls, or nil when the
// caller is none (a foreign caller, foreign.go). It checks that the caller
// is the running task's coroutine or, where the carrier hands off
// (handoff.go), a detached task of the carrier (which then rejoins in
// enter); where getg is not implemented the caller is taken to be the
// running task.
func (pd *pollDesc) current() *Task {
	if pd.c == nil {
		return nil
	}
	return pd.c.caller()
}

// caller returns the task of c that calls (see pollDesc.current).
func (c *Carrier) caller() *Task {
	if !haveGetg { // other architectures: the caller is taken to be the running task
		return c.cur.Load()
	}
	// The coroutine of the current (or last) run: its task is the
	// caller's own when the caller is that coroutine, which alone may then
	// read co.task (set before the run). Any other goroutine, a task of
	// another carrier included, is a foreign caller (foreign.go).
	g := getg()
	if co := c.runCo.Load(); co != nil && co.g.Load() == g {
		return co.task
	}
	if c.ho.on {
		return c.awayCaller(g)
	}
	return nil
}

// Conn is a TCP connection driven by its home carrier, and a net.Conn for
// any goroutine. Called by a task of its home carrier, Read and Write look
// blocking but park the task, not the thread; any other caller (a plain
// goroutine, a task of another carrier) is served by Go's netpoller on a
// duplicate of the fd, or, for a write behind bytes the io_uring poller
// has yet to send, has the carrier do it (foreign.go). Like a net.Conn it
// takes readers and writers at the same moment, which take turns (each
// Write goes out whole), and deadlines and Close from any goroutine. With
// floating carriers a conn moves with the task that holds it (the one
// that dialled or accepted it), until a foreign caller first uses it.
type Conn struct {
	pd            pollDesc
	owner         *Task
	local, remote netip.AddrPort
	rdl, wdl      atomic.Int64 // deadlines, monotonic ns (wait.Now); 0: none; set from any goroutine
}

// newConn wraps a connected non-blocking socket and registers it on c.
func (c *Carrier) newConn(fd int, remote netip.AddrPort) (*Conn, error) {
	cn := &Conn{pd: pollDesc{fd: fd, conn: true, g: c.g}, remote: remote}
	cn.pd.cn = cn
	if err := c.register(&cn.pd); err != nil {
		return nil, fmt.Errorf("register conn: %w", err)
	}
	cn.local, _ = unix.LocalAddr(fd)
	return cn, nil
}

// Read reads into p, parking the task until data arrives. It returns io.EOF
// at the end of the stream, os.ErrDeadlineExceeded after the read deadline
// and net.ErrClosed once the conn is closed.
func (cn *Conn) Read(p []byte) (int, error) {
	t := cn.pd.current()
	if t == nil {
		return cn.foreignRead(p)
	}
	outer, err := t.enterIO()
	if err != nil {
		return 0, err
	}
	defer t.leave(outer)
	cn.pd.rl.lock(t)
	defer cn.pd.rl.unlock(t)
	return cn.pd.eng.read(cn, t, p)
}

// Write writes all of p, parking the task while the socket buffer is full;
// it returns the bytes written and an error when it could not write all.
// With the io_uring poller it returns once p is copied into the conn's
// write-behind buffer, which the carrier sends on its next pass; a send
// that fails later is reported by the next Write, Read or Close
// (writebehind.go).
func (cn *Conn) Write(p []byte) (int, error) {
	t := cn.pd.current()
	if t == nil {
		return cn.foreignWrite(p)
	}
	outer, err := t.enterIO()
	if err != nil {
		return 0, err
	}
	defer t.leave(outer)
	cn.pd.wl.lock(t)
	defer cn.pd.wl.unlock(t)
	if err := cn.pd.beginHomeWrite(t); err != nil {
		return 0, err
	}
	defer cn.pd.wHome.Add(-1)
	return cn.pd.eng.write(cn, t, p)
}

// Close closes the connection; tasks parked on it resume with
// net.ErrClosed. Closing twice returns net.ErrClosed. With the io_uring
// poller it first sends the bytes Write accepted, for at most
// Options.CloseFlush, and returns a write error not yet reported or one
// that says how many bytes it dropped (writebehind.go).
func (cn *Conn) Close() error {
	t := cn.pd.current()
	if t == nil {
		return cn.foreignClose()
	}
	defer t.leave(t.enter())
	if cn.pd.closed() {
		return net.ErrClosed
	}
	// Asked to close already (CloseAsync, a foreign Close): this Close
	// does it now, and reports that the conn was closed before. Either way
	// the holder lets go of it (a panicking task's cleanup closes what it
	// holds until it holds nothing).
	asked := cn.pd.closeReq.Load()
	if o := cn.owner; o != nil {
		o.unhold(cn)
		if o.accepted == cn {
			o.accepted = nil
		}
	}
	var err error
	if e := cn.pd.eng; e != nil && !asked {
		err = e.flush(cn, true)
	}
	cn.pd.shut()
	if asked {
		return net.ErrClosed
	}
	return err
}

// CloseAsync closes the connection from any goroutine, as Close does from
// its task: the carrier the conn is on closes it at its next loop turn
// (the group's carriers are woken), also when a floating carrier is
// handing it over meanwhile, and tasks parked on it resume with
// net.ErrClosed. It does not wait, nor send what Write accepted and the
// io_uring poller has not sent yet. Calling it again, or after Close, does
// nothing.
func (cn *Conn) CloseAsync() { cn.requestClose() }

// requestClose is CloseAsync; it reports false when the conn was asked to
// close before (or has no group). Foreign callers see the request at once
// (their operations fail with net.ErrClosed) and their waiters wake.
func (cn *Conn) requestClose() bool {
	pd := &cn.pd
	if pd.g == nil || pd.closeReq.Swap(true) {
		return false
	}
	pd.closeGoConn()
	pd.g.closeReqs.Add(1)
	for _, c := range pd.g.carriers {
		c.nudge()
	}
	return true
}

// closeRequested closes the conns of c that CloseAsync asked to close
// (the loop calls it when the group's count of requests moved).
func (c *Carrier) closeRequested() {
	for _, pd := range c.fdt.fds {
		if pd != nil && pd.cn != nil && pd.closeReq.Load() && !pd.closed() {
			pd.cn.closeNow()
		}
	}
}

// closeNow closes cn on its carrier's own goroutine, outside any task.
func (cn *Conn) closeNow() {
	if o := cn.owner; o != nil {
		o.unhold(cn)
		if o.accepted == cn {
			o.accepted = nil
		}
	}
	cn.pd.shut()
}

// CloseWrite shuts down the sending side of the connection (the peer reads
// the end of the stream) and keeps the receiving side open: a server that
// ends a conversation half-closes and drains before it closes, so that its
// last answer is not destroyed by a TCP reset. With the io_uring poller
// it first sends the bytes Write accepted, waiting as Close does (at most
// Options.CloseFlush, or until the write deadline); when they cannot all
// be sent it returns that error and leaves the sending side open.
func (cn *Conn) CloseWrite() error {
	t := cn.pd.current()
	if t == nil {
		return cn.foreignCloseWrite()
	}
	outer, err := t.enterIO()
	if err != nil {
		return err
	}
	defer t.leave(outer)
	if cn.pd.ended() {
		return net.ErrClosed
	}
	if e := cn.pd.eng; e != nil {
		if err := e.flush(cn, false); err != nil {
			return err
		}
	}
	return unix.Shutdown(cn.pd.fd, unix.SHUT_WR)
}

// SetDeadline sets the read and write deadlines; the zero time clears them.
// Like the other deadline setters it may be called by any task of the
// conn's home carrier, also while another one is parked in Read or Write:
// the parked task's timer moves with the deadline.
//
// A Read or Write on a conn whose deadline has passed fails with
// os.ErrDeadlineExceeded at once, also when it could have completed; one
// that has to wait times out at, never before, the deadline. To spare a
// clock read per operation, Read and Write judge the deadline by the
// carrier's latest clock reading, taken before the task last resumed, and
// read the clock only when the deadline is within a millisecond of that
// reading or when they must wait. So a deadline that passes while a task
// runs for over a millisecond without parking, yielding or setting a
// deadline is seen by its next operation that waits (a deadline already
// passed when it is set is always seen).
func (cn *Conn) SetDeadline(t time.Time) error {
	cn.SetReadDeadline(t)
	return cn.SetWriteDeadline(t)
}

// Now returns the time a caller arms the conn's deadlines from: for a task
// of its carrier, that carrier's latest clock reading (Task.Time), which
// costs no clock read; for any other caller, time.Now. http1's servers and
// readers take their deadlines and Date header from it (http1.Clock). A
// task handed off whose carrier stopped gets time.Now.
func (cn *Conn) Now() time.Time {
	if t := cn.pd.current(); t != nil {
		if outer, err := t.enterIO(); err == nil {
			defer t.leave(outer)
			return t.home.clock()
		}
	}
	return time.Now()
}

// SetReadDeadline sets the time after which Read fails with
// os.ErrDeadlineExceeded; the zero time clears it.
func (cn *Conn) SetReadDeadline(t time.Time) error {
	cn.setDeadline(&cn.rdl, &cn.pd.rwait, t)
	return nil
}

// SetWriteDeadline sets the time after which Write fails with
// os.ErrDeadlineExceeded; the zero time clears it.
func (cn *Conn) SetWriteDeadline(t time.Time) error {
	cn.setDeadline(&cn.wdl, &cn.pd.wwait, t)
	return nil
}

// taskLock lets one task of a conn's home carrier at a time in (a Read,
// or a Write); the others park in its queue, first come first in. Only
// the home carrier's tasks touch it. A close does not empty the queue:
// each task let in finds the conn closed and lets the next one in.
type taskLock struct {
	holder *Task
	q      []*Task
}

// lock parks t until the lock is free, and takes it.
func (l *taskLock) lock(t *Task) {
	for l.holder != nil {
		l.q = append(l.q, t)
		t.block()
	}
	l.holder = t
}

// unlock frees the lock, which t holds, and wakes the first task waiting
// for it.
func (l *taskLock) unlock(t *Task) {
	l.holder = nil
	if len(l.q) == 0 {
		return
	}
	next := l.q[0]
	l.q = l.q[:copy(l.q, l.q[1:])]
	t.home.wakeTask(next, false)
}

// otherThan reports whether a task other than t holds the lock or waits
// for it: t may then not take the conn to another carrier (movable).
func (l *taskLock) otherThan(t *Task) bool {
	return len(l.q) > 0 || (l.holder != nil && l.holder != t)
}

// rearm moves the timer of a task parked on pd to a new deadline (0: none).
func (pd *pollDesc) rearm(w *Task, deadline int64) {
	if w == nil || pd.c == nil || w.state != taskParked {
		return
	}
	if deadline == 0 {
		pd.c.timers.remove(w)
		return
	}
	pd.c.timers.add(w, deadline)
}

// deadlinePassed is the stored deadline of one without a monotonic reading
// that had passed when it was set (time.Unix(1, 0), say): every clock reading of a running carrier is past it, so Read and
// Write fail at once without reading the clock (the cached reading, taken
// before the task resumed, may lag behind a deadline of "now").
const deadlinePassed = 1

// monoDeadline converts a deadline to wait.Now nanoseconds: 0 for the zero
// time (none), deadlinePassed for one that has passed. A deadline from
// time.Now (time.Now().Add(d), a context's) carries a monotonic reading and
// converts without reading the clock; one that has passed then comes out
// at or before the carrier's clock, which pollDesc.passed tells without a
// reading either. Others are placed by the wall clock.
func monoDeadline(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	if m, ok := wait.Mono(t); ok {
		return max(m, deadlinePassed)
	}
	d := time.Until(t)
	if d <= 0 {
		return deadlinePassed
	}
	return wait.Now() + int64(d)
}

// LocalAddr returns the local address.
func (cn *Conn) LocalAddr() net.Addr { return net.TCPAddrFromAddrPort(cn.local) }

// PeerClosed reports whether the poller has seen the peer's end of stream
// or an error on the conn (epoll's RDHUP, HUP or ERR), without a system
// call: a pooled client conn the server closed while it was idle. With the
// io_uring poller, whose conns have no readiness poll, it reports false
// unless a hang-up watch's poll saw it (WatchHangup).
func (cn *Conn) PeerClosed() bool {
	t := cn.pd.current()
	if t == nil {
		return false // the edge state is the carrier's: a foreign caller learns by reading
	}
	defer t.leave(t.enter())
	return cn.pd.hup
}

// WatchHangup arranges for f to run once, on the conn's carrier, when the
// poller reports that the peer has gone while the conn is not being read:
// it ended its stream with nothing left unread (a client that closed or
// half-closed after its request), or the connection failed. Data still
// unread is no hang-up: a pipelined request after a half-close is read in
// its turn. f must not block (it runs in the carrier's event loop; a
// context's cancel is the intended use). WatchHangup(nil) stops the watch.
// It reports true, and arms nothing, when the peer is gone already. With
// the io_uring poller, whose conns have no readiness poll, the watch is a
// one-shot poll of the conn for the peer's end (ringConn.watchHangup),
// which stays in the kernel from the first WatchHangup until it fires or
// the conn closes, so that a keep-alive connection's later requests arm
// it at no cost. From a goroutine other than a task of the conn's carrier
// it does nothing and reports false.
func (cn *Conn) WatchHangup(f func()) (gone bool) {
	pd := &cn.pd
	t := pd.current()
	if t == nil {
		return false
	}
	outer, err := t.enterIO()
	if err != nil {
		return false
	}
	defer t.leave(outer)
	pd.onHup = nil
	switch {
	case pd.closed():
		return false
	case f == nil:
		pd.eng.watchHangup(pd, false)
		return false
	case pd.hup && unix.PeerGone(pd.fd), pd.eng.watchHangup(pd, true):
		return true
	}
	pd.onHup = f
	return false
}

// RemoteAddr returns the peer's address.
func (cn *Conn) RemoteAddr() net.Addr { return net.TCPAddrFromAddrPort(cn.remote) }

// Dial connects to addr, "host:port": the host is an IP address,
// "localhost" (127.0.0.1) or a name looked up on an offloaded goroutine;
// the port is a decimal number from 1 to 65535; an empty host is an error.
// It makes a non-blocking connect on the task's carrier, waiting at
// most timeout (0: no limit). The conn is held by the task: a panic closes
// it. Errors are *net.OpError values: errors.Is(err, syscall.ECONNREFUSED)
// and errors.Is(err, os.ErrDeadlineExceeded) work.
func (t *Task) Dial(addr string, timeout time.Duration) (*Conn, error) {
	defer t.leave(t.enter())
	var deadline int64
	if timeout > 0 {
		deadline = wait.Now() + int64(timeout)
	}
	ap, err := t.resolve(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	raddr := net.TCPAddrFromAddrPort(ap)
	opErr := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Addr: raddr, Err: err} }
	sa, family := unix.SockaddrOf(ap)
	fd, err := unix.TCPSocket(family)
	if err != nil {
		return nil, opErr(err)
	}
	cerr := unix.Connect(fd, sa)
	if cerr != nil && !errors.Is(cerr, unix.EINPROGRESS) {
		unix.Close(fd)
		return nil, opErr(cerr)
	}
	cn, err := t.home.newConn(fd, ap)
	if err != nil {
		unix.Close(fd)
		return nil, opErr(err)
	}
	t.hold(cn)
	if cerr != nil { // in progress: writable means connected or failed
		if err := cn.pd.eng.connecting(&cn.pd, true); err != nil {
			cn.Close()
			return nil, opErr(err)
		}
		defer cn.pd.eng.connecting(&cn.pd, false)
		for {
			if err := cn.pd.await(t, &cn.pd.wwait, deadline); err != nil {
				cn.Close()
				return nil, opErr(err)
			}
			if cn.pd.closed() {
				return nil, opErr(net.ErrClosed)
			}
			if err := unix.SocketError(fd); err != nil {
				cn.Close()
				return nil, opErr(err)
			}
			if isConnected(fd) {
				break
			}
		}
	}
	cn.local, _ = unix.LocalAddr(fd)
	if err := unix.SetNoDelay(fd); err != nil {
		cn.Close()
		return nil, opErr(err)
	}
	return cn, nil
}

// isConnected reports whether a connecting socket has a peer (the
// writability that woke us was not a spurious edge).
func isConnected(fd int) bool {
	_, err := unix.PeerAddr(fd)
	return err == nil
}

// resolve turns "host:port" into an address with parseAddr's Dial rules;
// a host name other than localhost is looked up on an offloaded goroutine,
// so the carrier's thread never blocks in the resolver.
func (t *Task) resolve(addr string) (netip.AddrPort, error) {
	ap, name, err := parseAddr(addr, forDial)
	if err != nil || name == "" {
		return ap, err
	}
	var ips []netip.Addr
	t.Offload(func() { ips, err = net.DefaultResolver.LookupNetIP(context.Background(), "ip", name) })
	if err != nil {
		return netip.AddrPort{}, err
	}
	if len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("no address for %q", name)
	}
	return netip.AddrPortFrom(ips[0].Unmap(), ap.Port()), nil
}
