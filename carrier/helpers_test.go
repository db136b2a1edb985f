package carrier

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/internal/leakcheck"
)

// checkLeaks fails the test if goroutines or fds outlive it (after the
// cleanups registered later, such as Group.Close).
func checkLeaks(t *testing.T) {
	t.Helper()
	leakcheck.Register(t, time.Second)
}

// newGroup starts a group closed at the end of the test.
func newGroup(t testing.TB, o Options) *Group {
	t.Helper()
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, g)
	return g
}

// closeAtEnd closes g when the test ends, saying which poller g had if
// the test failed (notePoller).
func closeAtEnd(t testing.TB, g *Group) {
	t.Cleanup(func() {
		notePoller(t, g)
		g.Close()
	})
}

// notePoller logs, when t has failed, which poller g ran with: TestMain
// runs the suite once per poller, and go test's own lines name the test
// only. A test that starts its group with New rather than newGroup (to
// test Close itself) defers it.
func notePoller(t testing.TB, g *Group) {
	if t.Failed() {
		park := ""
		if g.opts.ParkIdle {
			park = ", its carriers parking when idle"
		}
		t.Logf("this test ran with poller %s%s", g.opts.Poller, park)
	}
}

// within fails the test if ch is not closed (or sent on) within d.
func within(t testing.TB, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not done within %v", what, d)
	}
}

func mustAddrPort(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// netListen listens on a loopback port with the net package, closed at the
// end of the test.
func netListen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// netServeOne accepts one connection on a fresh listener and hands it to
// serve on a goroutine, closing it when serve returns.
func netServeOne(t testing.TB, serve func(net.Conn)) net.Listener {
	ln := netListen(t)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			serve(c)
			c.Close()
		}
	}()
	return ln
}

// echoGroup starts a group with an echo listener on a loopback port.
func echoGroup(t testing.TB, o Options, lo ListenOptions) (*Group, *Listener) {
	t.Helper()
	g := newGroup(t, o)
	l, err := g.Listen("127.0.0.1:0", echo, lo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return g, l
}

// inTaskWithConn starts a group and a net server that hands its one
// connection to serve, then dials that server from a task on carrier 0 and
// runs fn with the conn, which is closed afterwards.
func inTaskWithConn(t *testing.T, o Options, serve func(net.Conn), fn func(tk *Task, c *Conn)) {
	t.Helper()
	ln := netServeOne(t, serve)
	g := newGroup(t, o)
	inTask(t, g, func(tk *Task) {
		c, err := tk.Dial(ln.Addr().String(), time.Second)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		fn(tk, c)
	})
}

// spin busies the calling task for about d without parking.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// echo is a handler that writes back everything it reads until the peer
// closes, with a buffer that takes what a client usually sends in one go.
func echo(t *Task, c *Conn) {
	io.CopyBuffer(c, c, make([]byte, 4096))
}
