package carrier

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/internal/unix"
)

// These tests hold for every poller (TestMain runs them once per poller);
// what only the io_uring poller's write-behind does is checked when
// Options.Poller resolves to PollerURing (writeBehindOn).

// writeBehindOn reports whether the suite's current pass uses write-behind.
func writeBehindOn() bool { return defaultPoller == PollerURing }

// pattern returns n bytes whose values depend on their position, so that a
// lost, repeated or reordered chunk shows.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>9)
	}
	return b
}

// readAllFrom reads nc until EOF or an error, waiting first (the peer
// "not reading" meanwhile), and returns what it read.
func readAllFrom(nc net.Conn, after time.Duration, out chan<- []byte) {
	time.Sleep(after)
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(nc)
	out <- b
}

// Many small writes arrive whole and in order, with the default buffer and
// with one small enough that writes park on it all the time, against a
// peer that starts reading late.
func TestWriteBehindOrder(t *testing.T) {
	checkLeaks(t)
	for _, tc := range []struct {
		name   string
		buffer int
		writes int
	}{
		{"default buffer", 0, 20000},
		{"1 KiB buffer", 1 << 10, 20000},
		{"buffer smaller than a write", 50, 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total := 0
			for i := range tc.writes {
				total += 1 + i%97
			}
			want := pattern(total)
			got := make(chan []byte, 1)
			var inline uint64
			g := newGroup(t, Options{Carriers: 1, WriteBuffer: tc.buffer})
			ln := netServeOne(t, func(nc net.Conn) { readAllFrom(nc, 20*time.Millisecond, got) })
			inTask(t, g, func(tk *Task) {
				c, err := tk.Dial(ln.Addr().String(), time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				off := 0
				for i := range tc.writes {
					n := 1 + i%97
					if k, err := c.Write(want[off : off+n]); k != n || err != nil {
						t.Errorf("write %d: %d, %v; want %d", i, k, err, n)
						break
					}
					off += n
					if i%500 == 0 {
						tk.Yield() // let some passes send while more is written
					}
				}
				if err := c.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
				inline = tk.Carrier().stats.ringInlineSends.Load()
			})
			if b := <-got; !bytes.Equal(b, want) {
				t.Errorf("peer got %d bytes, want %d; first difference at %d", len(b), len(want), firstDiff(b, want))
			}
			if writeBehindOn() && inline == 0 {
				t.Error("no SEND completed inline")
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// isReset reports whether err says the peer reset the connection.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// A write to a peer that reset the connection fails: with epoll at once;
// with write-behind the Write is accepted and its SEND's error comes back
// from the next Write, Read and Close.
func TestWriteErrorAfterPeerReset(t *testing.T) {
	checkLeaks(t)
	inTaskWithConn(t, Options{Carriers: 1}, func(nc net.Conn) {
		nc.SetDeadline(time.Now().Add(2 * time.Second))
		io.ReadFull(nc, make([]byte, 5))
		nc.(*net.TCPConn).SetLinger(0) // close with RST
	}, func(tk *Task, c *Conn) {
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatalf("first write: %v", err)
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil { // returns once the RST arrived
			t.Fatal("read from a reset conn succeeded")
		}
		_, w1 := c.Write([]byte("again"))
		tk.Sleep(10 * time.Millisecond) // a pass sends it
		_, w2 := c.Write([]byte("more"))
		_, r := c.Read(make([]byte, 1))
		cl := c.Close()
		if !isReset(w1) && !isReset(w2) {
			t.Errorf("writes after the reset returned %v, %v: want ECONNRESET or EPIPE by the second", w1, w2)
		}
		if !writeBehindOn() {
			return
		}
		if w1 != nil {
			t.Errorf("write-behind: the write after the reset returned %v, want nil (accepted)", w1)
		}
		for what, err := range map[string]error{"next write": w2, "read": r, "close": cl} {
			if !isReset(err) {
				t.Errorf("write-behind: %s after the failed SEND returned %v, want the SEND's error", what, err)
			}
		}
	})
}

// Close sends everything Write accepted before it closes, also when the
// peer reads only later; the peer sees every byte in order, then EOF.
func TestCloseFlushes(t *testing.T) {
	checkLeaks(t)
	want := pattern(256 << 10)
	got := make(chan []byte, 1)
	g := newGroup(t, Options{Carriers: 1})
	ln := netServeOne(t, func(nc net.Conn) { readAllFrom(nc, 50*time.Millisecond, got) })
	inTask(t, g, func(tk *Task) {
		c, err := tk.Dial(ln.Addr().String(), time.Second)
		if err != nil {
			t.Error(err)
			return
		}
		for off := 0; off < len(want); off += 1 << 10 {
			if _, err := c.Write(want[off : off+1<<10]); err != nil {
				t.Errorf("write at %d: %v", off, err)
				break
			}
		}
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if b := <-got; !bytes.Equal(b, want) {
		t.Errorf("peer got %d bytes, want %d; first difference at %d", len(b), len(want), firstDiff(b, want))
	}
}

// fill writes 1 KiB chunks, each with a write deadline d after its start,
// until one waits out its deadline (the peer does not read), checks that
// it waited about d, and returns the bytes written.
func fill(t *testing.T, c *Conn, d time.Duration) int {
	t.Helper()
	chunk := pattern(1 << 10)
	total := 0
	for {
		start := time.Now()
		c.SetWriteDeadline(start.Add(d))
		n, err := c.Write(chunk)
		total += n
		if err == nil {
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write into a full conn: %v, want os.ErrDeadlineExceeded", err)
		}
		if el := time.Since(start); el < d-5*time.Millisecond || el > d+2*time.Second {
			t.Fatalf("write deadline %v ended the writes after %v", d, el)
		}
		return total
	}
}

// A write deadline ends a Write parked on a full conn (with write-behind,
// on the full buffer); what Write accepted before is still delivered, in
// order, and Close then succeeds once the peer reads.
func TestWriteDeadlineWhileParked(t *testing.T) {
	checkLeaks(t)
	got := make(chan []byte, 1)
	g := newGroup(t, Options{Carriers: 1})
	ln := netServeOne(t, func(nc net.Conn) { readAllFrom(nc, 300*time.Millisecond, got) })
	total := 0
	inTask(t, g, func(tk *Task) {
		c, err := tk.Dial(ln.Addr().String(), time.Second)
		if err != nil {
			t.Error(err)
			return
		}
		total = fill(t, c, 100*time.Millisecond)
		if writeBehindOn() && len(c.pd.wb.buf) != DefaultWriteBuffer {
			t.Errorf("write-behind: the deadline ended a write with %d bytes buffered, want a full buffer (%d)", len(c.pd.wb.buf), DefaultWriteBuffer)
		}
		c.SetWriteDeadline(time.Time{})
		if err := c.Close(); err != nil { // the peer starts reading within the flush bound
			t.Errorf("close: %v", err)
		}
	})
	b := <-got
	if len(b) != total {
		t.Errorf("peer got %d bytes, want the %d accepted", len(b), total)
	}
	for off := 0; off+1<<10 <= len(b); off += 1 << 10 {
		if !bytes.Equal(b[off:off+1<<10], pattern(1<<10)) {
			t.Fatalf("chunk at %d differs", off)
		}
	}
}

// Close waits at most Options.CloseFlush for a peer that does not read,
// then drops the rest, says so, and closes: the peer then reads a prefix
// of what was written and the end of the stream. A new conn opened at once
// (which may reuse the fd number) is not disturbed.
func TestCloseFlushBound(t *testing.T) {
	checkLeaks(t)
	const bound = 150 * time.Millisecond
	release := make(chan struct{})
	got := make(chan []byte, 1)
	g := newGroup(t, Options{Carriers: 1, CloseFlush: bound})
	ln := netServeOne(t, func(nc net.Conn) {
		<-release
		readAllFrom(nc, 0, got)
	})
	_, echo := echoGroup(t, Options{Carriers: 1}, ListenOptions{})
	inTask(t, g, func(tk *Task) {
		defer close(release)
		c, err := tk.Dial(ln.Addr().String(), time.Second)
		if err != nil {
			t.Error(err)
			return
		}
		fill(t, c, 50*time.Millisecond)
		c.SetWriteDeadline(time.Time{})
		start := time.Now()
		err = c.Close()
		el := time.Since(start)
		if writeBehindOn() {
			if !errors.Is(err, os.ErrDeadlineExceeded) || el < bound-5*time.Millisecond || el > bound+time.Second {
				t.Errorf("write-behind: close with a full buffer and a peer that does not read: %v after %v; want os.ErrDeadlineExceeded after about %v", err, el, bound)
			}
		} else if err != nil || el > time.Second {
			t.Errorf("close: %v after %v; want nil at once (the kernel keeps the bytes)", err, el)
		}
		e, err := tk.Dial(echo.Addr().String(), time.Second)
		if err != nil {
			t.Error(err)
			return
		}
		defer e.Close()
		e.SetDeadline(time.Now().Add(2 * time.Second))
		msg, back := pattern(3000), make([]byte, 3000)
		for i := range 20 {
			if _, err := e.Write(msg); err != nil {
				t.Fatalf("echo write %d: %v", i, err)
			}
			if _, err := io.ReadFull(e, back); err != nil || !bytes.Equal(back, msg) {
				t.Fatalf("echo round trip %d: %v, equal %v", i, err, bytes.Equal(back, msg))
			}
		}
	})
	b := <-got
	if !bytes.Equal(b, bytes.Repeat(pattern(1<<10), len(b)>>10+1)[:len(b)]) {
		t.Errorf("the closed conn's peer got %d bytes that are not a prefix of what was written", len(b))
	}
}

// The fd of a conn shut while the kernel still has a SEND of it stays
// open until that SEND's completion is reaped, and is closed then.
func TestShutWaitsForKernel(t *testing.T) {
	p, k, r := fakePoller(t, 8, 16)
	fd := observableFd(t) // a real fd, so that closing it is observable
	c := &Carrier{poll: p, connEng: ringConn{p}}
	c.g = &Group{opts: Options{WriteBuffer: DefaultWriteBuffer}}
	pd := &pollDesc{fd: fd, conn: true, state: descOpen} // as register leaves it
	c.fdt.fds = []*pollDesc{pd}
	pd.c = c
	pd.wb.add([]byte("pending"), DefaultWriteBuffer)
	p.sendAsync(pd) // an ordinary SEND the fake kernel keeps pending
	p.wait(0)
	if pd.kops != 1 || len(k.sqes) == 0 || k.sqes[len(k.sqes)-1].Opcode != unix.IORING_OP_SEND {
		t.Fatalf("SEND not submitted: kops %d", pd.kops)
	}
	pd.shut()
	if !fdOpen(fd) {
		t.Fatal("fd closed while the kernel held a SEND of it")
	}
	p.wait(0) // submits the cancellation
	r.KernelPostCQE(unix.CQE{UserData: pd.token() | udWrite, Res: -int32(unix.ECANCELED)})
	p.wait(0)
	if fdOpen(fd) {
		unix.Close(fd)
		t.Fatal("fd still open after the SEND's completion was reaped")
	}
}

func fdOpen(fd int) bool {
	_, err := os.Lstat("/proc/self/fd/" + strconv.Itoa(fd))
	return err == nil
}

// The poller's side of write-behind, on the fake kernel: queued conns get
// one inline SEND of their whole buffer in the next wait; one that the
// kernel consumed without a completion has sent everything; a failed one
// continues as an ordinary SEND from where it stopped (or reports its
// error), and a conn never has two SENDs at once.
func TestURingPollerWriteBehind(t *testing.T) {
	p, k, r := fakePoller(t, 8, 16)
	c := &Carrier{poll: p, connEng: ringConn{p}}
	c.g = &Group{opts: Options{WriteBuffer: DefaultWriteBuffer}}
	newPD := func(slot int32) *pollDesc {
		pd := &pollDesc{fd: 7 + int(slot), c: c, slot: slot, gen: 1, conn: true}
		return pd
	}
	a, b := newPD(1), newPD(2)
	a.wb.add([]byte("hello "), DefaultWriteBuffer)
	a.wb.add([]byte("world"), DefaultWriteBuffer)
	p.queueWrite(a)
	p.queueWrite(a)
	b.wb.add([]byte("0123456789"), DefaultWriteBuffer)
	p.queueWrite(b)
	k.sendFail = map[uint64]int32{b.token() | udInline: 4}
	p.wait(0)
	var sends []unix.SQE
	for _, s := range k.sqes {
		if s.Opcode == unix.IORING_OP_SEND {
			sends = append(sends, s)
		}
	}
	if len(sends) != 2 || sends[0].Len != 11 || sends[0].Flags&unix.IOSQE_CQE_SKIP_SUCCESS == 0 || sends[1].Len != 10 {
		t.Fatalf("inline SENDs %+v; want one of 11 bytes for a (queued twice), one of 10 for b, without success completions", sends)
	}
	if len(a.wb.buf) != 0 || a.wb.inline || a.kops != 0 {
		t.Errorf("a after its inline SEND: %d bytes left, inline %v, kops %d", len(a.wb.buf), a.wb.inline, a.kops)
	}
	if string(b.wb.buf) != "456789" || !b.wop.pending || !b.wop.fromBuffer || b.kops != 1 {
		t.Fatalf("b after a short inline SEND: buffer %q, SEND pending %v behind %v, kops %d; want the rest in an ordinary SEND", b.wb.buf, b.wop.pending, b.wop.fromBuffer, b.kops)
	}
	b.wb.add([]byte("ab"), DefaultWriteBuffer)
	p.queueWrite(b) // must wait for the SEND in flight
	n0 := len(k.sqes)
	p.wait(0) // submits the ordinary SEND queued by the last one, and nothing else
	if s := k.sqes[n0:]; len(s) != 1 || s[0].Opcode != unix.IORING_OP_SEND || s[0].Len != 6 || s[0].Flags != 0 {
		t.Fatalf("submitted %+v; want only the ordinary SEND of the 6 bytes left", s)
	}
	r.KernelPostCQE(unix.CQE{UserData: b.token() | udWrite, Res: 6})
	p.wait(0)
	if string(b.wb.buf) != "ab" || !b.wop.pending {
		t.Fatalf("after the ordinary SEND: buffer %q, pending %v; want the bytes written meanwhile in a new SEND", b.wb.buf, b.wop.pending)
	}
	r.KernelPostCQE(unix.CQE{UserData: b.token() | udWrite, Res: -int32(syscall.ECONNRESET)})
	p.wait(0)
	if !errors.Is(b.wb.err, syscall.ECONNRESET) || len(b.wb.buf) != 0 || b.kops != 0 {
		t.Fatalf("after a failed SEND: err %v, %d bytes, kops %d", b.wb.err, len(b.wb.buf), b.kops)
	}
}

// A Close from another task while a large Write waits for the peer ends
// that Write with net.ErrClosed at once, and Close does not wait for its
// flush bound (with write-behind the Write's own SEND is cancelled, not
// flushed: Write had not accepted those bytes).
func TestCloseDuringLargeWrite(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	inTaskWithConn(t, Options{Carriers: 1}, func(nc net.Conn) { <-release }, func(tk *Task, c *Conn) {
		defer close(release)
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		werr := make(chan error, 1)
		tk.Go(func(*Task) {
			_, err := c.Write(make([]byte, 16<<20)) // more than loopback buffers hold
			werr <- err
		})
		for range 5 {
			tk.Sleep(time.Millisecond) // the writer parks
		}
		start := time.Now()
		err := c.Close()
		if el := time.Since(start); el > DefaultCloseFlush/2 {
			t.Errorf("close waited %v for a write it had not accepted", el)
		}
		if err != nil {
			t.Errorf("close: %v", err)
		}
		for len(werr) == 0 {
			tk.Yield()
		}
		if err := <-werr; !errors.Is(err, net.ErrClosed) {
			t.Errorf("the parked write returned %v, want net.ErrClosed", err)
		}
	})
}

// A floating carrier does not hand over a task whose conn the ring still
// writes for: bytes buffered, an inline SEND not settled, a SEND of the
// buffer in flight, or the task's own SEND not completed.
func TestMovableWithWriteBehind(t *testing.T) {
	c := &Carrier{g: &Group{opts: Options{FloatSettle: DefaultFloatSettle}}}
	tests := []struct {
		name    string
		set     func(pd *pollDesc)
		movable bool
	}{
		{"idle conn", func(*pollDesc) {}, true},
		{"bytes buffered", func(pd *pollDesc) { pd.wb.buf = []byte("x") }, false},
		{"inline SEND not settled", func(pd *pollDesc) { pd.wb.inline = true }, false},
		{"SEND of the buffer in flight", func(pd *pollDesc) { pd.wop.pending, pd.wop.fromBuffer = true, true }, false},
		{"the task's SEND in flight", func(pd *pollDesc) { pd.wop.pending = true }, false},
		{"the task's SEND done, not yet seen", func(pd *pollDesc) { pd.wop.pending, pd.wop.done = true, true }, true},
		{"RECV in flight", func(pd *pollDesc) { pd.rop.pending = true }, false},
	}
	for _, tc := range tests {
		tk := &Task{}
		cn := &Conn{pd: pollDesc{eng: ringConn{}}} // a PollerURing conn
		tc.set(&cn.pd)
		tk.hold(cn)
		if got := c.movable(tk); got != tc.movable {
			t.Errorf("%s: movable %v, want %v", tc.name, got, tc.movable)
		}
	}
}

// An inline SEND whose failure completion overflowed the CQ is not taken
// for sent: settle waits until the overflow is flushed and the failure
// reaped, and the bytes then go as an ordinary SEND, none lost.
func TestInlineSendFailureOverflowed(t *testing.T) {
	p, k, r := fakePoller(t, 8, 2)
	c := &Carrier{poll: p, connEng: ringConn{p}}
	c.g = &Group{opts: Options{WriteBuffer: DefaultWriteBuffer}}
	pd := &pollDesc{fd: 9, c: c, slot: 1, gen: 1, conn: true}
	pd.wb.add([]byte("abc"), DefaultWriteBuffer)
	p.cancel(1 << 40) // two cancellations of nothing: their failures fill the CQ
	p.cancel(2 << 40)
	p.queueWrite(pd)
	k.sendFail = map[uint64]int32{pd.token() | udInline: -int32(unix.EAGAIN)}
	p.wait(0)
	if len(k.overflow) != 1 || r.SQFlags()&unix.IORING_SQ_CQ_OVERFLOW == 0 {
		t.Fatalf("the SEND's failure did not overflow: %d in the overflow list", len(k.overflow))
	}
	if !pd.wb.inline || string(pd.wb.buf) != "abc" {
		t.Fatalf("settled with its failure unreaped: inline %v, buffer %q", pd.wb.inline, pd.wb.buf)
	}
	p.wait(0) // the overflow flag makes it enter, which flushes the overflow
	if pd.wb.inline || string(pd.wb.buf) != "abc" || !pd.wop.pending || pd.wb.err != nil {
		t.Fatalf("after the failure was reaped: inline %v, buffer %q, SEND pending %v, err %v; want the bytes in an ordinary SEND",
			pd.wb.inline, pd.wb.buf, pd.wop.pending, pd.wb.err)
	}
}
