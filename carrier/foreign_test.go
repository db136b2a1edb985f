package carrier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// dialFree dials addr on carrier i of g from one of its tasks and returns
// the conn, held by no task: a driver's pooled conn.
func dialFree(t *testing.T, g *Group, i int, addr string) *Conn {
	t.Helper()
	nc, err := g.Carrier(i).DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cn := nc.(*Conn)
	t.Cleanup(func() { cn.Close() })
	return cn
}

// netPeer is a plain net server whose one accepted conn the test gets.
func netPeer(t *testing.T) (addr string, peer <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(ch)
			return
		}
		t.Cleanup(func() { c.Close() })
		ch <- c
	}()
	return ln.Addr().String(), ch
}

// dialPeer dials a plain net server on carrier 0 of g (dialFree) and
// returns the conn and the server's end of it.
func dialPeer(t *testing.T, g *Group) (*Conn, net.Conn) {
	t.Helper()
	addr, peers := netPeer(t)
	cn := dialFree(t, g, 0, addr)
	peer := <-peers
	if peer == nil {
		t.Fatal("no peer conn")
	}
	return cn, peer
}

// echoPeer writes back what peer reads, with a plain loop: io.Copy
// between TCP conns splices through a pipe the runtime pools, two fds
// that outlive the test.
func echoPeer(peer net.Conn) {
	io.CopyBuffer(struct{ io.Writer }{peer}, struct{ io.Reader }{peer}, make([]byte, 64<<10))
}

// waitEnds starts a Read of cn, from a plain goroutine or (inTask) a task
// of carrier 0, lets it wait, calls end, and checks that the Read returns
// want within 5 s.
func waitEnds(t *testing.T, g *Group, cn *Conn, inTask bool, end func(), want error) {
	t.Helper()
	got := make(chan error, 1)
	read := func() { _, err := cn.Read(make([]byte, 1)); got <- err }
	if !inTask {
		go read()
	} else if err := g.Carrier(0).Submit(func(*Task) { read() }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	end()
	select {
	case err := <-got:
		if !errors.Is(err, want) {
			t.Errorf("read: %v, want %v", err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("read still waiting 5s after its wait was ended (want %v)", want)
	}
}

// observableFd is an fd whose close the test can see (fdOpen): the write
// end of a pipe, duplicated.
func observableFd(t *testing.T) int {
	t.Helper()
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	fd, err := syscall.Dup(int(wr.Fd()))
	wr.Close()
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// netEcho is a plain net echo server (a goroutine per conn) for the
// test's length; it returns its address.
func netEcho(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				echoPeer(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// inTaskOf runs fn as a task of carrier i of g and waits for it.
func inTaskOf(t *testing.T, g *Group, i int, fn func(*Task)) {
	t.Helper()
	done := make(chan struct{})
	if err := g.Carrier(i).Submit(func(tk *Task) {
		defer close(done)
		fn(tk)
	}); err != nil {
		t.Fatal(err)
	}
	within(t, done, 10*time.Second, "task")
}

// A carrier conn serves plain goroutines as a net.Conn does: the round
// trips, deadlines, closes and half-closes of a driver's conn, a task of
// another carrier, and a task of the home carrier whose wait a goroutine
// ends, for every poller (TestMain) and with 1 and 2 carriers.
func TestForeignConn(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB: beyond the socket buffers
	tests := []struct {
		name string
		run  func(t *testing.T, g *Group, cn *Conn, peer net.Conn)
	}{
		{"round trips", func(t *testing.T, g *Group, cn *Conn, peer net.Conn) {
			go echoPeer(peer)
			buf := make([]byte, 64)
			for i := range 50 {
				msg := []byte("ping " + strconv.Itoa(i))
				if _, err := cn.Write(msg); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(cn, buf[:len(msg)]); err != nil || !bytes.Equal(buf[:len(msg)], msg) {
					t.Fatalf("echo %d: %q, %v", i, buf[:len(msg)], err)
				}
			}
		}},
		{"full duplex, 4 MiB each way", func(t *testing.T, g *Group, cn *Conn, peer net.Conn) {
			go echoPeer(peer)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				if n, err := cn.Write(big); err != nil || n != len(big) {
					t.Errorf("write: %d, %v", n, err)
				}
			}()
			got := make([]byte, len(big))
			if _, err := io.ReadFull(cn, got); err != nil || !bytes.Equal(got, big) {
				t.Errorf("read back: equal %v, %v", bytes.Equal(got, big), err)
			}
			wg.Wait()
		}},
		{"read deadline passes", func(t *testing.T, g *Group, cn *Conn, peer net.Conn) {
			// The clock is read before the deadline is set: the first
			// foreign call (this one) does more than store it, and a start
			// read after it came up to 1 ms late on a loaded machine.
			start := time.Now()
			cn.SetReadDeadline(start.Add(30 * time.Millisecond))
			_, err := cn.Read(make([]byte, 1))
			if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) < 30*time.Millisecond {
				t.Errorf("read: %v after %v, want the deadline's error after 30ms", err, time.Since(start))
			}
			cn.SetReadDeadline(time.Time{})
			peer.Write([]byte("x"))
			if _, err := io.ReadFull(cn, make([]byte, 1)); err != nil {
				t.Errorf("read after the deadline was cleared: %v", err)
			}
		}},
		{"another goroutine's deadline ends a wait (pgx's context watcher)", func(t *testing.T, g *Group, cn *Conn, peer net.Conn) {
			waitEnds(t, g, cn, false, func() { cn.SetReadDeadline(time.Unix(1, 0)) }, os.ErrDeadlineExceeded)
		}},
		{"another goroutine's close ends a wait", func(t *testing.T, g *Group, cn *Conn, peer net.Conn) {
			waitEnds(t, g, cn, false, func() {
				if err := cn.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			}, net.ErrClosed)
			if err := cn.Close(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("second close: %v, want net.ErrClosed", err)
			}
			if _, err := cn.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
				t.Errorf("write after close: %v, want net.ErrClosed", err)
			}
			peer.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := peer.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("the peer read %v, want io.EOF: the fd was not closed", err)
			}
		}},
		{"half close", func(t *testing.T, g *Group, cn *Conn, peer net.Conn) {
			cn.Write([]byte("bye"))
			if err := cn.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			peer.SetReadDeadline(time.Now().Add(5 * time.Second))
			if b, err := io.ReadAll(peer); err != nil || string(b) != "bye" {
				t.Errorf("the peer read %q, %v; want bye and the end", b, err)
			}
			peer.Write([]byte("ok"))
			if _, err := io.ReadFull(cn, make([]byte, 2)); err != nil {
				t.Errorf("read after the half close: %v", err)
			}
		}},
		{"raw conn peek (go-redis's health check)", func(t *testing.T, g *Group, cn *Conn, peer net.Conn) {
			rc, err := cn.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			peek := func() (n int, errno error) {
				rc.Read(func(fd uintptr) bool {
					var b [1]byte
					n, _, errno = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
					return true
				})
				return n, errno
			}
			if _, errno := peek(); errno != syscall.EAGAIN {
				t.Errorf("peek of an idle conn: %v, want EAGAIN", errno)
			}
			peer.Close()
			time.Sleep(20 * time.Millisecond)
			if n, errno := peek(); n != 0 || errno != nil {
				t.Errorf("peek after the peer closed: %d, %v; want 0 (end of stream)", n, errno)
			}
		}},
		{"a task of another carrier", func(t *testing.T, g *Group, cn *Conn, peer net.Conn) {
			if len(g.carriers) < 2 {
				t.Skip("one carrier")
			}
			go echoPeer(peer)
			inTaskOf(t, g, 1, func(tk *Task) {
				for i := range 20 {
					msg := []byte("from carrier 1: " + strconv.Itoa(i))
					if _, err := cn.Write(msg); err != nil {
						t.Error(err)
						return
					}
					buf := make([]byte, len(msg))
					if _, err := io.ReadFull(cn, buf); err != nil || !bytes.Equal(buf, msg) {
						t.Errorf("echo %d: %q, %v", i, buf, err)
						return
					}
				}
			})
		}},
		{"a goroutine's deadline ends a home task's wait", func(t *testing.T, g *Group, cn *Conn, peer net.Conn) {
			cn.SetWriteDeadline(time.Time{}) // a foreign use before the task parks
			waitEnds(t, g, cn, true, func() { cn.SetReadDeadline(time.Unix(1, 0)) }, os.ErrDeadlineExceeded)
		}},
		{"a goroutine's close ends a home task's wait", func(t *testing.T, g *Group, cn *Conn, peer net.Conn) {
			waitEnds(t, g, cn, true, func() { cn.Close() }, net.ErrClosed)
		}},
	}
	for _, carriers := range []int{1, 2} {
		for _, tc := range tests {
			t.Run(strconv.Itoa(carriers)+" carriers/"+tc.name, func(t *testing.T) {
				checkLeaks(t)
				g := newGroup(t, Options{Carriers: carriers})
				cn, peer := dialPeer(t, g)
				tc.run(t, g, cn, peer)
			})
		}
	}
}

// A goroutine waiting in a conn's Read when its group closes gets an
// error, not a wait for ever: with io_uring its read is a task on the
// carrier, which the stop unwinds or drops unrun.
func TestForeignReadAtGroupClose(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 1})
	addr, peers := netPeer(t)
	cn := dialFree(t, g, 0, addr)
	if <-peers == nil {
		t.Fatal("no peer conn")
	}
	got := make(chan error, 1)
	go func() { _, err := cn.Read(make([]byte, 1)); got <- err }()
	time.Sleep(20 * time.Millisecond)
	g.Close()
	select {
	case err := <-got:
		if err == nil {
			t.Error("read returned no error after its group closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("read still waiting 5s after its group closed")
	}
}

// A conn taken off its carrier's poller for a foreign caller (unpoll) and
// put back by a task that parks on it, in one loop pass (TestForeignConn's
// goroutine and task do it by chance), is still reported ready, and its
// close reaches the peer and leaves no request in flight: io_uring posts
// the removed poll's cancellation only after the new poll is armed, and a
// poller that took it for the new poll's end armed a second poll, which
// the close did not cancel (the socket stayed open for the kernel, so the
// peer got no FIN, and the group's close waited quiesceLimit for it).
func TestRepollAfterUnpoll(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 1})
	if !g.connEng.polled() {
		t.Skip("this poller's conns have no readiness poll to take off")
	}
	cn, peer := dialPeer(t, g)
	go func() {
		time.Sleep(20 * time.Millisecond) // the task is parked by then, or finds the byte at once
		peer.Write([]byte("x"))
	}()
	inTaskOf(t, g, 0, func(tk *Task) {
		pd := &cn.pd
		pd.foreignUsed.Store(true) // a foreign caller's first use marks it so...
		pd.unpoll(tk.home)         // ...and has the carrier run this
		if !pd.unpolled {
			t.Error("the conn was not taken off the poller")
			return
		}
		cn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(cn, make([]byte, 1)); err != nil { // parks: back on the poller
			t.Errorf("read on the conn put back on the poller: %v", err)
		}
		if err := cn.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := peer.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the peer read %d, %v after the close, want io.EOF: a poll still holds the socket", n, err)
	}
	start := time.Now()
	g.Close()
	if up, ok := g.Carrier(0).poll.(*uringPoller); ok && up.inflight != 0 {
		t.Errorf("the group closed after %v with %d io_uring requests in flight, want none", time.Since(start), up.inflight)
	}
}

// A foreign system call holds the fd: the conn's close leaves it open
// until the last one ends, and closes it then.
func TestForeignFdRefs(t *testing.T) {
	fd := observableFd(t)
	pd := &pollDesc{fd: fd}
	if !pd.refFD() || !pd.refFD() {
		t.Fatal("refFD failed on an open fd")
	}
	pd.closeFD()
	if !fdOpen(fd) {
		t.Fatal("fd closed while two foreign calls held it")
	}
	if pd.refFD() {
		t.Error("refFD succeeded after the close")
	}
	pd.unrefFD()
	if !fdOpen(fd) {
		t.Fatal("fd closed while one foreign call held it")
	}
	pd.unrefFD()
	if fdOpen(fd) {
		syscall.Close(fd)
		t.Fatal("fd still open after the last foreign call ended")
	}
}

// A driver's dial from a goroutine with a context that carries a task
// lands on that task's carrier; without one, the dials go round-robin;
// a context already done or a foreign network fails at once.
func TestGroupDialContext(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 2})
	addr := netEcho(t)
	var ctx1 context.Context
	inTaskOf(t, g, 1, func(tk *Task) { ctx1 = ContextWithTask(context.Background(), tk) })
	for range 3 {
		nc, err := g.DialContext(ctx1, "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if c := nc.(*Conn).pd.home.Load(); c != g.Carrier(1) {
			t.Errorf("dialled on carrier %d, want the context's task's carrier 1", c.ID())
		}
		nc.Close()
	}
	seen := map[int]bool{}
	for range 4 {
		nc, err := g.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		seen[nc.(*Conn).pd.home.Load().ID()] = true
		nc.Close()
	}
	if len(seen) != 2 {
		t.Errorf("4 dials without a task went to carriers %v, want both", seen)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.DialContext(done, "tcp", addr); !errors.Is(err, context.Canceled) {
		t.Errorf("dial with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := g.DialContext(context.Background(), "udp", addr); err == nil {
		t.Error("udp dial succeeded")
	}
}

// PerCarrier gives a task its own carrier's value and a goroutine any.
func TestPerCarrier(t *testing.T) {
	g := newGroup(t, Options{Carriers: 2})
	p, err := NewPerCarrier(g, func(c *Carrier) (int, error) { return 100 + c.ID(), nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		inTaskOf(t, g, i, func(tk *Task) {
			if v := p.Get(context.Background()); v != 100+i {
				t.Errorf("task of carrier %d got %d", i, v)
			}
			ctx := ContextWithTask(context.Background(), tk)
			if v := p.Get(ctx); v != 100+i {
				t.Errorf("context of carrier %d's task got %d", i, v)
			}
		})
	}
	if v := p.Get(context.Background()); v != 100 && v != 101 {
		t.Errorf("goroutine got %d", v)
	}
	var undone []int
	_, err = NewPerCarrier(g, func(c *Carrier) (int, error) {
		if c.ID() == 1 {
			return 0, errors.New("no")
		}
		return 7, nil
	}, func(v int) { undone = append(undone, v) })
	if err == nil || len(undone) != 1 || undone[0] != 7 {
		t.Errorf("failed constructor: %v, undone %v; want the error and [7]", err, undone)
	}
}

// FuzzForeignOps interleaves a conn's operations from a plain goroutine
// and from a task of its home carrier (writes, reads of what the peer
// sent, a deadline in the past, a close from either side) and checks
// each result, and the bytes the peer got, against a model of the stream.
// Each byte of the input is one operation: the low 3 bits say which, the
// high 5 its size (1-32 bytes).
func FuzzForeignOps(f *testing.F) {
	f.Add([]byte{0x00, 0x02, 0x09, 0x0b, 0x04, 0x0d})
	f.Add([]byte{0x11, 0x13, 0x05, 0x00, 0x01})
	f.Add([]byte{0x02, 0x03, 0x04, 0x0c, 0x06, 0x00})
	g := newGroup(f, Options{Carriers: 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		cn, peer := dialPeer(t, g)
		// fromTask runs fn as a task of the home carrier, or on this
		// goroutine: the two kinds of caller the model does not tell apart.
		do := func(inTask bool, fn func()) {
			if !inTask {
				fn()
				return
			}
			inTaskOf(t, g, 0, func(*Task) { fn() })
		}
		var sent []byte // what the conn wrote: the peer must read it all
		closed := false
		seq := byte(0)
		for i, b := range ops {
			op, size := b&7, int(b>>3)+1
			inTask := op&1 == 1
			msg := make([]byte, size)
			for k := range msg {
				msg[k] = seq
				seq++
			}
			var err error
			switch op {
			case 0, 1: // write
				do(inTask, func() { _, err = cn.Write(msg) })
				if !closed {
					sent = append(sent, msg...)
				}
			case 2, 3: // the peer sends, the conn reads it
				if !closed {
					peer.Write(msg)
				}
				got := make([]byte, size)
				do(inTask, func() { _, err = io.ReadFull(cn, got) })
				if err == nil && !bytes.Equal(got, msg) {
					t.Fatalf("op %d: read %v, want %v", i, got, msg)
				}
			case 4, 5: // a deadline in the past, then cleared
				do(inTask, func() {
					cn.SetReadDeadline(time.Unix(1, 0))
					_, err = cn.Read(make([]byte, 1))
					cn.SetReadDeadline(time.Time{})
				})
				if !closed && !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("op %d: read past its deadline: %v", i, err)
				}
				if !closed {
					err = nil
				}
			default: // close, from a task (7) or this goroutine (6)
				do(inTask, func() { err = cn.Close() })
				if !closed && err != nil {
					t.Fatalf("op %d: close: %v", i, err)
				}
				if !closed {
					err = nil
				}
				closed = true
			}
			switch {
			case closed && !errors.Is(err, net.ErrClosed) && op != 4 && op != 5 && err != nil:
				t.Fatalf("op %d (%d) on the closed conn: %v, want net.ErrClosed", i, op, err)
			case closed && op < 4 && err == nil:
				t.Fatalf("op %d (%d) on the closed conn succeeded", i, op)
			case !closed && err != nil:
				t.Fatalf("op %d (%d): %v", i, op, err)
			}
		}
		if !closed {
			cn.Close()
		}
		peer.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(peer)
		if err != nil || !bytes.Equal(got, sent) {
			t.Fatalf("the peer read %d bytes (%v), want the %d written", len(got), err, len(sent))
		}
	})
}

// skipWithoutGoConn skips a test of the Go conn where g's foreign
// callers have none.
func skipWithoutGoConn(t *testing.T, g *Group) {
	switch g.connEng.foreign().(type) {
	case goConnPath, ringPath:
	default:
		t.Skip("this poller's foreign callers have no Go conn")
	}
}

// goConnFd returns the fd of cn's Go conn (its duplicate, in Go's
// netpoller), or -1 when it has none.
func goConnFd(t *testing.T, cn *Conn) int {
	t.Helper()
	gc := cn.pd.gc.Load()
	if gc == nil {
		return -1
	}
	raw, err := (*gc).(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	raw.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// echoSlow writes back each read of peer after a millisecond, so that the
// conn's reader has parked by then.
func echoSlow(peer net.Conn) {
	b := make([]byte, 4096)
	for {
		n, err := peer.Read(b)
		if err != nil {
			return
		}
		time.Sleep(time.Millisecond)
		if _, err := peer.Write(b[:n]); err != nil {
			return
		}
	}
}

// A conn that a goroutine greeted and then only tasks of its home carrier
// use (a pgx conn its pool's goroutine dialled) loses its Go conn after
// goConnQuietParks parks: the duplicate leaves Go's netpoller, which every
// arrival woke for nothing (a runtime thread's epoll_pwait and two context
// switches per database query). A conn that goroutines and tasks take
// turns on keeps its Go conn; a goroutine's use after the drop makes a new
// one, and both kinds of caller go on.
func TestGoConnDropped(t *testing.T) {
	tests := []struct {
		name string
		// foreignEvery: a goroutine's round trip after every so many of
		// the task's (0: none); wantDrop: the Go conn is dropped.
		foreignEvery int
		wantDrop     bool
	}{
		{"only tasks after the greeting", 0, true},
		{"a goroutine after every task's round trip", 1, false},
		{"a goroutine after every few of the task's", goConnQuietParks / 2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			g := newGroup(t, Options{Carriers: 1})
			skipWithoutGoConn(t, g)
			cn, peer := dialPeer(t, g)
			go echoSlow(peer)
			roundTrip := func(what string) error {
				msg := []byte(what)
				if _, err := cn.Write(msg); err != nil {
					return err
				}
				buf := make([]byte, len(msg))
				if _, err := io.ReadFull(cn, buf); err != nil || !bytes.Equal(buf, msg) {
					return fmt.Errorf("echo of %q: %q, %v", msg, buf, err)
				}
				return nil
			}
			if err := roundTrip("greeting"); err != nil { // a goroutine's: the Go conn is made
				t.Fatal(err)
			}
			first := cn.pd.gc.Load()
			dup := goConnFd(t, cn)
			if first == nil || dup < 0 {
				t.Fatal("a goroutine's round trip made no Go conn")
			}
			// Each of the task's reads parks (the echo comes a millisecond
			// later); a loaded machine may let a few find it there, so the
			// task makes four times the round trips a drop needs.
			trips := 4 * goConnQuietParks
			for i := range trips {
				inTaskOf(t, g, 0, func(*Task) {
					if err := roundTrip("task " + strconv.Itoa(i)); err != nil {
						t.Error(err)
					}
				})
				if tc.foreignEvery > 0 && (i+1)%tc.foreignEvery == 0 {
					if err := roundTrip("goroutine " + strconv.Itoa(i)); err != nil {
						t.Fatal(err)
					}
				}
			}
			dropped := g.Snapshot()[0].GoConnsDropped
			gc := cn.pd.gc.Load()
			switch {
			case tc.wantDrop && (gc != nil || dropped != 1):
				t.Fatalf("after %d round trips of tasks alone the Go conn is %p (%d dropped), want none (1 dropped): its duplicate stays in Go's netpoller", trips, gc, dropped)
			case tc.wantDrop && fdOpen(dup):
				t.Fatalf("the dropped Go conn's duplicate, fd %d, is still open", dup)
			case !tc.wantDrop && (gc != first || dropped != 0):
				t.Fatalf("the Go conn was dropped (%d) although a goroutine used the conn every %d round trips", dropped, tc.foreignEvery)
			}
			if err := roundTrip("goroutine after"); err != nil {
				t.Fatalf("a goroutine's round trip after the task's: %v", err)
			}
			if cn.pd.gc.Load() == nil {
				t.Error("a goroutine's round trip made no Go conn")
			}
			inTaskOf(t, g, 0, func(*Task) {
				if err := roundTrip("task after"); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

// Goroutines' operations race the carrier's drops of the Go conn: a
// goroutine writes in bursts while a task reads what the peer sends, one
// byte at a time, so that the task's parks between the bursts drop the Go
// conn and the next burst makes another. No write fails or is lost, and
// every byte arrives in order (run it with -race).
func TestGoConnDropRace(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 1})
	skipWithoutGoConn(t, g)
	cn, peer := dialPeer(t, g)
	const bytesIn, bursts, burst = 300, 30, 8
	var wrote bytes.Buffer
	writer := make(chan error, 1)
	go func() {
		for b := range bursts {
			for i := range burst {
				msg := []byte("w" + strconv.Itoa(b) + "." + strconv.Itoa(i) + ";")
				if _, err := cn.Write(msg); err != nil {
					writer <- fmt.Errorf("write %d of burst %d: %w", i, b, err)
					return
				}
				wrote.Write(msg)
			}
			time.Sleep(time.Duration(4+3*(b%4)) * time.Millisecond) // a byte's sleep below lasts about 1 ms (Go's timers)
		}
		writer <- nil
	}()
	received := make(chan []byte, 1)
	go func() {
		peer.SetReadDeadline(time.Now().Add(30 * time.Second))
		got, _ := io.ReadAll(peer)
		received <- got
	}()
	go func() {
		for i := range bytesIn {
			if _, err := peer.Write([]byte{byte(i)}); err != nil {
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	inTaskOf(t, g, 0, func(*Task) {
		cn.SetReadDeadline(time.Now().Add(30 * time.Second))
		b := make([]byte, 1)
		for i := range bytesIn {
			if _, err := io.ReadFull(cn, b); err != nil || b[0] != byte(i) {
				t.Errorf("the task's read %d: %d, %v", i, b[0], err)
				return
			}
		}
	})
	if err := <-writer; err != nil {
		t.Fatal(err)
	}
	if err := cn.CloseWrite(); err != nil { // a goroutine's: the peer reads the end after what was written
		t.Fatal(err)
	}
	select {
	case got := <-received:
		if !bytes.Equal(got, wrote.Bytes()) {
			t.Fatalf("the peer received %d bytes, want the %d written", len(got), wrote.Len())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the peer did not see the end of what was written within 30s")
	}
	if n := g.Snapshot()[0].GoConnsDropped; n == 0 {
		t.Logf("no Go conn was dropped: the race was not run (the task's reads parked too seldom)")
	} else {
		t.Logf("Go conns dropped and made again: %d", n)
	}
}

// A goroutine's Write just after a task's comes after it on the wire,
// also where the task's bytes wait in the write-behind buffer (io_uring)
// when the goroutine writes: the goroutine must not write them directly.
func TestForeignWriteAfterTask(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 1})
	cn, peer := dialPeer(t, g)
	var want bytes.Buffer
	for i := range 20 {
		first, second := []byte("task "+strconv.Itoa(i)+";"), []byte("goroutine "+strconv.Itoa(i)+";")
		want.Write(first)
		want.Write(second)
		started, wrote := make(chan struct{}), make(chan error, 1)
		inTaskOf(t, g, 0, func(*Task) {
			if _, err := cn.Write(first); err != nil {
				t.Error(err)
			}
			go func() {
				close(started)
				_, err := cn.Write(second)
				wrote <- err
			}()
			// Spin without parking, so the carrier does not send the
			// buffered bytes while the goroutine writes.
			<-started
			for end := time.Now().Add(time.Millisecond); time.Now().Before(end); {
			}
		})
		if err := <-wrote; err != nil {
			t.Fatalf("the goroutine's write %d: %v", i, err)
		}
	}
	got := make([]byte, want.Len())
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(peer, got); err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("the peer read %q (%v), want %q", got, err, want.Bytes())
	}
}

// Writers of one conn at the same moment (a goroutine, two tasks of the
// home carrier, a task of another carrier), with a full socket buffer
// (the peer reads slowly), all finish and never interleave their Writes'
// bytes, as goroutines' Writes on a net.Conn do not.
func TestForeignWritersAtOnce(t *testing.T) {
	const size, each = 256 << 10, 4 // a Write beyond the socket buffers
	for _, carriers := range []int{1, 2} {
		t.Run(strconv.Itoa(carriers)+" carriers", func(t *testing.T) {
			checkLeaks(t)
			g := newGroup(t, Options{Carriers: carriers})
			cn, peer := dialPeer(t, g)
			msg := func(who byte, i int) []byte { return bytes.Repeat([]byte{who + byte(i)}, size) }
			var wg sync.WaitGroup
			write := func(who byte) {
				defer wg.Done()
				for i := range each {
					if _, err := cn.Write(msg(who, i)); err != nil {
						t.Errorf("write %c%d: %v", who, i, err)
						return
					}
				}
			}
			writers := []byte{'a', 'h', 'n', 'x'} // 'a' a goroutine; then tasks of carriers 0, 0, and the last
			wg.Add(len(writers))
			go write('a')
			for i, who := range writers[1:] {
				if err := g.Carrier(i / 2 * (carriers - 1)).Submit(func(*Task) { write(who) }); err != nil {
					t.Fatal(err)
				}
			}
			total := len(writers) * each * size
			peer.SetReadDeadline(time.Now().Add(20 * time.Second))
			got := make([]byte, 0, total)
			buf := make([]byte, 16<<10)
			for len(got) < total {
				if len(got) < size {
					time.Sleep(time.Millisecond) // slowly at first: both writers meet a full buffer
				}
				n, err := peer.Read(buf)
				if err != nil {
					t.Fatalf("the peer's read after %d bytes: %v", len(got), err)
				}
				got = append(got, buf[:n]...)
			}
			wg.Wait()
			seen := map[byte]bool{}
			for off := 0; off < len(got); off += size {
				b := got[off]
				if seen[b] {
					t.Fatalf("message %q twice", b)
				}
				seen[b] = true
				if i := bytes.IndexFunc(got[off:off+size], func(r rune) bool { return byte(r) != b }); i >= 0 {
					t.Fatalf("the message at %d (%q) holds another's byte %q at %d: the Writes interleaved", off, b, got[off+i], i)
				}
			}
		})
	}
}

// Tasks of the home carrier reading one conn at the same moment take
// turns: each gets its share of what the peer sends, and none is left
// parked for ever (a second reader used to take the first's place in the
// conn's one parking slot).
func TestTasksReadAtOnce(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 1})
	cn, peer := dialPeer(t, g)
	const readers, share = 3, 4 << 10
	done := make(chan int, readers)
	for range readers {
		if err := g.Carrier(0).Submit(func(*Task) {
			cn.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, _ := io.ReadFull(cn, make([]byte, share))
			done <- n
		}); err != nil {
			t.Fatal(err)
		}
	}
	for range readers * share / 512 {
		peer.Write(make([]byte, 512))
		time.Sleep(100 * time.Microsecond)
	}
	for range readers {
		select {
		case n := <-done:
			if n != share {
				t.Fatalf("a reader got %d bytes, want %d", n, share)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("a reader still waits")
		}
	}
}

// A raw write (SyscallConn) after a task's Write comes after it on the
// wire, also where the Write's bytes wait in the write-behind buffer
// (io_uring) because the peer reads late: the raw write is not let
// through before they are sent, whether the task itself or a goroutine
// makes it (then as a task of the home carrier: rawWriteOnCarrier).
func TestRawWriteAfterWrite(t *testing.T) {
	rawWrite := func(cn *Conn) error {
		rc, err := cn.SyscallConn()
		if err != nil {
			return err
		}
		var werr error
		if err := rc.Write(func(fd uintptr) bool {
			_, werr = syscall.Write(int(fd), []byte("raw;"))
			return true
		}); err != nil {
			return err
		}
		return werr
	}
	// More than small socket buffers hold, less than the write-behind
	// buffer: the task's Write returns with bytes still to send.
	written := append(bytes.Repeat([]byte{'w'}, 32<<10), ';')
	for _, foreign := range []bool{false, true} {
		name := "the task"
		if foreign {
			name = "a goroutine"
		}
		t.Run(name, func(t *testing.T) {
			checkLeaks(t)
			g := newGroup(t, Options{Carriers: 1})
			cn, peer := dialPeer(t, g)
			peer.(*net.TCPConn).SetReadBuffer(4096)
			want := string(written) + "raw;"
			read := make(chan string, 1)
			go func() { // late, so that the socket fills
				time.Sleep(50 * time.Millisecond)
				got := make([]byte, len(want))
				peer.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, _ := io.ReadFull(peer, got)
				read <- string(got[:n])
			}()
			inTaskOf(t, g, 0, func(*Task) {
				if rc, err := cn.SyscallConn(); err == nil {
					rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096) })
				}
				if _, err := cn.Write(written); err != nil {
					t.Error(err)
					return
				}
				if !foreign {
					if err := rawWrite(cn); err != nil {
						t.Errorf("raw write: %v", err)
					}
				}
			})
			if foreign {
				if err := rawWrite(cn); err != nil {
					t.Errorf("raw write: %v", err)
				}
			}
			if got := <-read; got != want {
				i := bytes.Index([]byte(got), []byte("raw;"))
				t.Fatalf("the peer read %d bytes, \"raw;\" at %d; want %d with it last", len(got), i, len(want))
			}
		})
	}
}
