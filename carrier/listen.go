package carrier

import (
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/spindle-lab/spindle/internal/unix"
)

// ListenOptions configure Group.Listen.
type ListenOptions struct {
	// ReusePort opens one SO_REUSEPORT listener per carrier, each accepting
	// onto its own carrier (the kernel spreads connections by hash). When
	// false, one acceptor on carrier 0 accepts for all and hands connections
	// out round-robin with Submit.
	ReusePort bool
	// Backlog is the listen backlog in connections; 0: DefaultBacklog.
	Backlog int
}

// Listener accepts TCP connections onto a group's carriers.
type Listener struct {
	g       *Group
	handler func(*Task, *Conn)
	addr    netip.AddrPort
	accs    []*acceptor
	closed  atomic.Bool
	rr      uint32 // balancing cursor, written only by the single acceptor
}

// acceptor is one listening socket served by an accept task on carrier c.
type acceptor struct {
	l          *Listener
	c          *Carrier
	pd         pollDesc
	registered bool // written by the accept task; read after c is done
	done       chan struct{}
}

// acceptFn accepts one connection; tests replace it to simulate EMFILE.
var acceptFn = unix.AcceptNB

// Listen listens on addr, "host:port": the host is an IP address,
// "localhost" (127.0.0.1) or empty (0.0.0.0); other names fail with
// ErrHostName (resolve them first); the port is a decimal number, 0 for one
// the kernel picks. It runs handler(t, conn) as a new task for every
// accepted connection. The handler owns conn: the runtime closes it when
// the handler returns without closing it, or panics. Accept tasks count in TasksLive.
func (g *Group) Listen(addr string, handler func(t *Task, c *Conn), o ListenOptions) (*Listener, error) {
	if handler == nil {
		return nil, fmt.Errorf("carrier: listen %s: nil handler", addr)
	}
	if g.closed.Load() {
		return nil, fmt.Errorf("carrier: listen %s: %w", addr, ErrGroupClosed)
	}
	ap, _, err := parseAddr(addr, forListen)
	if err != nil {
		return nil, fmt.Errorf("carrier: listen %s: %w", addr, err)
	}
	backlog := o.Backlog
	if backlog <= 0 {
		backlog = DefaultBacklog
	}
	l := &Listener{g: g, handler: handler}
	n := 1
	if o.ReusePort {
		n = len(g.carriers)
	}
	for i := 0; i < n; i++ {
		fd, err := unix.ListenTCP(ap, o.ReusePort, backlog)
		if err != nil {
			l.closeUnregistered()
			return nil, fmt.Errorf("carrier: %w", err)
		}
		if i == 0 { // port 0: the others bind the port the kernel chose
			if ap, err = unix.LocalAddr(fd); err != nil {
				unix.Close(fd)
				return nil, fmt.Errorf("carrier: %w", err)
			}
			l.addr = ap
		}
		l.accs = append(l.accs, &acceptor{l: l, c: g.carriers[i], pd: pollDesc{fd: fd}, done: make(chan struct{})})
	}
	g.mu.Lock()
	g.listeners[l] = struct{}{}
	g.mu.Unlock()
	for _, a := range l.accs {
		if err := a.c.SubmitLocal(a.run); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// Addr returns the address the listener is bound to (with the port the
// kernel chose for port 0).
func (l *Listener) Addr() net.Addr { return net.TCPAddrFromAddrPort(l.addr) }

// Close stops accepting and closes the listening sockets. Called from
// outside the group's carriers it waits until they are closed; from inside
// a task it only starts the closing.
func (l *Listener) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return net.ErrClosed
	}
	for _, a := range l.accs {
		a.c.SubmitLocal(a.stop) // fails only when the group closed everything already
	}
	if !l.g.onCarrierThread() {
		for _, a := range l.accs {
			select {
			case <-a.done:
			case <-a.c.done:
			}
		}
	}
	l.g.mu.Lock()
	delete(l.g.listeners, l)
	l.g.mu.Unlock()
	return nil
}

// closeUnregistered closes listening sockets whose accept task never ran
// (the group closed first). Called under g.mu after the carriers are done,
// or before any accept task was submitted.
func (l *Listener) closeUnregistered() {
	for _, a := range l.accs {
		if !a.registered {
			a.closeFD()
		}
	}
}

// stop closes the listening socket; it runs as a task on a's carrier, as
// the accept task does, so the two never race.
func (a *acceptor) stop(t *Task) {
	defer t.leave(t.enter())
	if a.registered {
		a.pd.shut() // wakes the parked accept task, which sees closed
		return
	}
	a.closeFD()
}

// closeFD closes a listening socket that was never registered on its
// carrier (descNew -> descShut).
func (a *acceptor) closeFD() {
	if !a.pd.closed() {
		a.pd.setState(descShut)
		unix.Close(a.pd.fd)
	}
}

// run is the accept task. It accepts until the listener closes; on EAGAIN
// it parks until the socket is readable; when the process is out of file
// descriptors it sleeps AcceptBackoff instead of spinning on a listener
// that stays readable, and counts the back-off.
func (a *acceptor) run(t *Task) {
	defer t.leave(t.enter()) // carrier code throughout: never handed off
	c := t.home
	defer close(a.done)
	if a.l.closed.Load() || a.pd.closed() {
		a.closeFD()
		return
	}
	if err := c.register(&a.pd); err != nil {
		a.closeFD()
		return
	}
	a.registered = true
	defer a.pd.shut()
	for !a.l.closed.Load() && !a.pd.closed() {
		nfd, sa, err := acceptFn(a.pd.fd)
		switch {
		case err == nil:
			a.dispatch(t, nfd, sa)
			t.opDone()
		case err == unix.EAGAIN:
			if a.pd.await(t, &a.pd.rwait, 0) != nil {
				return // the carrier stopped
			}
		case err == unix.EINTR || err == unix.ECONNABORTED:
		default: // EMFILE, ENFILE, ENOBUFS, ENOMEM: wait for resources
			add(&c.stats.acceptBackoffs, 1)
			t.Sleep(AcceptBackoff)
		}
	}
}

// dispatch makes an accepted connection a handler task: on this carrier
// (reuseport; stealable) or on the next carrier round-robin (balancing).
func (a *acceptor) dispatch(t *Task, fd int, sa unix.Sockaddr) {
	nt := newTask(a.l.serve)
	nt.afd, nt.asa = fd, sa
	if len(a.l.accs) > 1 {
		t.home.enqueue(nt) // on failure the task is released and fd closed
		return
	}
	cs := a.l.g.carriers
	target := cs[a.l.rr%uint32(len(cs))]
	a.l.rr++
	target.submit(nt) // on failure the task is released and fd closed
}

// serve is the task of one accepted connection: it registers the conn on
// the carrier that runs it (a thief's, when stolen) and calls the handler.
func (l *Listener) serve(t *Task) {
	outer := t.enter() // the conn's registration is carrier code; the handler is not
	fd, sa := t.afd, t.asa
	t.afd, t.asa = -1, nil
	cn, err := t.home.newConn(fd, unix.AddrPortOf(sa))
	if err != nil {
		unix.Close(fd)
		t.leave(outer)
		return
	}
	unix.SetNoDelay(fd)
	t.hold(cn)
	t.accepted = cn
	t.leave(outer)
	l.handler(t, cn)
}
