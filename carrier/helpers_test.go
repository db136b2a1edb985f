package carrier

import (
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"
)

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count fds: %v", err)
	}
	return len(ents)
}

// checkLeaks records goroutines and fds now and, at cleanup (after the
// cleanups registered later, such as Group.Close), fails if either grew.
func checkLeaks(t *testing.T) {
	t.Helper()
	g0, f0 := runtime.NumGoroutine(), openFDs(t)
	t.Cleanup(func() {
		var g, f int
		for i := 0; i < 200; i++ { // exiting goroutines take a moment to be counted out
			g, f = runtime.NumGoroutine(), openFDs(t)
			if g <= g0 && f <= f0 {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		buf := make([]byte, 1<<16)
		n := runtime.Stack(buf, true)
		t.Errorf("leak: goroutines %d -> %d, fds %d -> %d\n%s", g0, g, f0, f, buf[:n])
	})
}

// newGroup starts a group closed at the end of the test.
func newGroup(t testing.TB, o Options) *Group {
	t.Helper()
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
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
	l, err := g.Listen("127.0.0.1:0", Echo, lo)
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
