package carrier

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestListenCloseAtOnce closes listeners before and right after their
// accept tasks start, and in both listener modes: no fd may stay open.
func TestListenCloseAtOnce(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 2})
	for i := 0; i < 50; i++ {
		l, err := g.Listen("127.0.0.1:0", echo, ListenOptions{ReusePort: i%2 == 0})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err == nil {
			t.Fatal("second Close: no error")
		}
	}
}

// TestRelease: a handler that releases its accepted conn and gives it to a
// goroutine returns without closing it; the goroutine serves it on, and
// the group's Close closes what is still open. A handler that does not
// release it has it closed as it returns.
func TestRelease(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 1})
	l, err := g.Listen("127.0.0.1:0", func(t *Task, c *Conn) {
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != 'r' {
			return // closed by the runtime
		}
		t.Release(c)
		go io.Copy(c, c) // after the handler returned: ends at the client's close or the group's
	}, ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dialSend := func(first string) net.Conn {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, first)
		return c
	}
	kept, closed := dialSend("r"), dialSend("x")
	if n, err := closed.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a conn not released: read %d, %v; want the runtime's close", n, err)
	}
	for _, msg := range []string{"after the handler", "again"} {
		io.WriteString(kept, msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(kept, got); err != nil || string(got) != msg {
			t.Fatalf("released conn echoed %q, %v; want %q", got, err, msg)
		}
	}
	g.Close()
	if n, err := kept.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the group's Close the released conn read %d, %v; want its close", n, err)
	}
}
