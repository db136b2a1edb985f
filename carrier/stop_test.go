package carrier

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestCloseEndsWaitsWithErrors: a task parked in a conn's Read when its
// group closes gets ErrCarrierStopped (net.ErrClosed) from the Read, not a
// panic that its own recover would take for its code's; it runs on in the
// carrier's shutdown, so a Write with room reaches the client, and a second
// Read fails at once. An operation with no error to return (Sleep) still
// unwinds it. Under the io_uring completion poller the kernel holds a
// parked Read's buffer until the shutdown quiesces the ring, so the Read
// unwinds the task there instead.
func TestCloseEndsWaitsWithErrors(t *testing.T) {
	checkLeaks(t)
	g, err := New(Options{Carriers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer notePoller(t, g)
	ringRead := defaultPoller == PollerURing
	type outcome struct {
		readErr, secondErr, writeErr error
		recovered                    any // what the task's recover saw, in the Read or after it
		sleptOn                      bool
	}
	done := make(chan outcome, 1)
	parked := make(chan struct{})
	l, err := g.Listen("127.0.0.1:0", func(tk *Task, c *Conn) {
		var o outcome
		defer func() { done <- o }()
		defer func() {
			o.recovered = recover()
			if o.recovered != nil && !IsStop(o.recovered) {
				panic(o.recovered)
			}
		}()
		c.Write([]byte("x"))
		close(parked) // the client reads the byte, then the group closes
		_, o.readErr = c.Read(make([]byte, 1))
		_, o.writeErr = c.Write([]byte("bye"))
		_, o.secondErr = c.Read(make([]byte, 1))
		tk.Sleep(time.Hour)
		o.sleptOn = true
	}, ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	<-parked
	if _, err := io.ReadFull(client, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the task parks in its Read
	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }()
	within(t, closed, 5*time.Second, "Close with a task parked in Read")
	var o outcome
	select {
	case o = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the task did not end")
	}
	rest, _ := io.ReadAll(client)
	if o.sleptOn {
		t.Error("Sleep returned after the carrier stopped")
	}
	if !IsStop(o.recovered) {
		t.Errorf("the task's recover saw %v, want the carrier's stop (from Sleep or, io_uring, the Read)", o.recovered)
	}
	if ringRead {
		if o.readErr != nil || o.writeErr != nil || len(rest) != 0 {
			t.Errorf("io_uring: the Read returned (%v), the Write %v, the client got %q: want the Read to unwind the task", o.readErr, o.writeErr, rest)
		}
		return
	}
	for _, e := range []struct {
		what string
		err  error
	}{{"the parked Read", o.readErr}, {"the second Read", o.secondErr}} {
		if !errors.Is(e.err, ErrCarrierStopped) || !errors.Is(e.err, net.ErrClosed) {
			t.Errorf("%s: %v, want ErrCarrierStopped (net.ErrClosed)", e.what, e.err)
		}
	}
	if o.writeErr != nil || string(rest) != "bye" {
		t.Errorf("the Write after the stop: %v, the client got %q, want \"bye\"", o.writeErr, rest)
	}
}
