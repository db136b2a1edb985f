package carrier

import (
	"io"
	"net"
	"testing"
	"time"
)

// serveOne listens on a one-carrier group with handler and returns a
// client connection to it (the group and listener close at the end of the
// test, the client when the caller closes it).
func serveOne(t *testing.T, handler func(*Task, *Conn)) net.Conn {
	t.Helper()
	return serveOneWith(t, Options{Carriers: 1}, handler)
}

// serveOneWith is serveOne on a group of options o.
func serveOneWith(t *testing.T, o Options, handler func(*Task, *Conn)) net.Conn {
	t.Helper()
	g := newGroup(t, o)
	l, err := g.Listen("127.0.0.1:0", handler, ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}

// TestConnCloseWrite: after CloseWrite the client reads the server's last
// bytes and the end of the stream, while the server still reads what the
// client sends; a closed conn refuses it.
func TestConnCloseWrite(t *testing.T) {
	checkLeaks(t)
	got := make(chan string, 1)
	c := serveOne(t, func(_ *Task, c *Conn) {
		c.Write([]byte("bye"))
		if err := c.CloseWrite(); err != nil {
			got <- "CloseWrite: " + err.Error()
			return
		}
		b, _ := io.ReadAll(c)
		c.Close()
		if err := c.CloseWrite(); err != net.ErrClosed {
			got <- "CloseWrite after Close: no net.ErrClosed"
			return
		}
		got <- string(b)
	})
	defer c.Close()
	if b, err := io.ReadAll(c); err != nil || string(b) != "bye" {
		t.Fatalf("client read %q, %v; want \"bye\" then EOF", b, err)
	}
	c.Write([]byte("still here"))
	c.(*net.TCPConn).CloseWrite()
	select {
	case s := <-got:
		if s != "still here" {
			t.Fatalf("server: %s", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server did not finish")
	}
}

// TestConnReadEOFWithData: a peer that sends data and closes before the
// task reads makes one edge-triggered event for both; the read that takes
// the data is short, and the next one must still see the end of the stream
// instead of parking for an event that never comes.
func TestConnReadEOFWithData(t *testing.T) {
	checkLeaks(t)
	got := make(chan string, 1)
	c := serveOne(t, func(tk *Task, c *Conn) {
		tk.Sleep(100 * time.Millisecond) // the data and the FIN arrive meanwhile
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		b, err := io.ReadAll(c)
		if err != nil {
			got <- "read: " + err.Error()
			return
		}
		got <- string(b)
	})
	defer c.Close()
	c.Write([]byte("request"))
	c.(*net.TCPConn).CloseWrite()
	select {
	case s := <-got:
		if s != "request" {
			t.Fatalf("server: %s", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server did not finish")
	}
}
