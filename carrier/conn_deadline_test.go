package carrier

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
)

// benchDeadline is how far ahead the benchmarks set their deadlines: far
// enough never to pass, so every Read and Write checks and passes one.
const benchDeadline = time.Hour

// BenchmarkConnReadWriteDeadline measures Read and Write on conns whose
// read and write deadlines are set (once, an hour ahead), with 64-byte
// messages on loopback:
//   - echo: BenchmarkEchoRoundTrip with deadlines on both ends, client and
//     echo handler on two carriers; every round trip parks both tasks and
//     wakes both threads.
//   - echo-one-carrier: the same on one carrier: the tasks park and take
//     turns, without thread wake-ups.
//   - inline: one task writes on the accepted end and reads the message
//     from the dialed end; nothing parks, so the figure is two system calls
//     and the deadline checks around them.
func BenchmarkConnReadWriteDeadline(b *testing.B) {
	b.Run("echo", func(b *testing.B) { benchEcho(b, 2, benchDeadline) })
	b.Run("echo-one-carrier", func(b *testing.B) { benchEcho(b, 1, benchDeadline) })
	b.Run("inline", func(b *testing.B) {
		g := newGroup(b, Options{Carriers: 1})
		var srv *Conn // set by the handler; both tasks run on carrier 0
		l, err := g.Listen("127.0.0.1:0", func(t *Task, c *Conn) {
			setDeadline(c, benchDeadline)
			srv = c
			c.Read(make([]byte, 1)) // parks until the client closes
		}, ListenOptions{})
		if err != nil {
			b.Fatal(err)
		}
		benchDial(b, g.Carrier(0), l, benchDeadline, func(tk *Task, c *Conn) error {
			for srv == nil {
				tk.Yield()
			}
			return benchLoop(b, srv, c)
		})
	})
}

// benchEcho times round trips of 64-byte messages through an echo handler
// and back, with both conns' deadlines set deadline ahead (0: none). With
// two carriers the handler runs on carrier 0 and the client on carrier 1;
// with one, both run on carrier 0.
func benchEcho(b *testing.B, carriers int, deadline time.Duration) {
	g := newGroup(b, Options{Carriers: carriers})
	l, err := g.Listen("127.0.0.1:0", func(t *Task, c *Conn) {
		setDeadline(c, deadline)
		echo(t, c)
	}, ListenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	benchDial(b, g.Carrier(carriers-1), l, deadline, func(_ *Task, c *Conn) error { return benchLoop(b, c, c) })
}

// setDeadline sets c's deadlines d ahead; 0: none.
func setDeadline(c *Conn, d time.Duration) {
	if d > 0 {
		c.SetDeadline(time.Now().Add(d))
	}
}

// benchDial runs fn in a task on c with a conn dialed to l (deadlines set
// deadline ahead; 0: none) and fails b with its error.
func benchDial(b *testing.B, c *Carrier, l *Listener, deadline time.Duration, fn func(*Task, *Conn) error) {
	done := make(chan error, 1)
	err := c.SubmitLocal(func(tk *Task) {
		cn, err := tk.Dial(l.Addr().String(), time.Second)
		if err != nil {
			done <- err
			return
		}
		defer cn.Close()
		setDeadline(cn, deadline)
		done <- fn(tk, cn)
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// benchLoop times b.N rounds of a 64-byte Write on w and reading 64 bytes
// back from r, after 100 rounds of warm-up, and reports allocations.
func benchLoop(b *testing.B, w, r *Conn) error {
	msg, buf := make([]byte, 64), make([]byte, 64)
	round := func() error {
		if _, err := w.Write(msg); err != nil {
			return err
		}
		for got := 0; got < len(buf); {
			n, err := r.Read(buf[got:])
			if err != nil {
				return err
			}
			got += n
		}
		return nil
	}
	for i := 0; i < 100; i++ { // warm up: pools, buffers
		if err := round(); err != nil {
			return err
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := round(); err != nil {
			return err
		}
	}
	b.StopTimer()
	return nil
}

// peerCmd is one step of a scripted loopback peer: after delay it writes
// write bytes, then reads and discards exactly discard bytes, then closes
// done.
type peerCmd struct {
	delay          time.Duration
	write, discard int
	done           chan struct{}
}

// scriptedPeer serves one connection by running the commands sent on cmds
// until cmds is closed.
func scriptedPeer(cmds <-chan peerCmd) func(net.Conn) {
	return func(nc net.Conn) {
		for c := range cmds {
			time.Sleep(c.delay)
			if c.write > 0 {
				nc.Write(make([]byte, c.write))
			}
			if c.discard > 0 {
				io.CopyN(io.Discard, nc, int64(c.discard))
			}
			close(c.done)
		}
	}
}

// peer sends one command to a scripted peer and returns a function that
// parks the task until the peer has carried it out. cmds is buffered, so
// the send does not block the carrier.
func peer(cmds chan<- peerCmd, c peerCmd) (wait func(*Task)) {
	c.done = make(chan struct{})
	cmds <- c
	return func(tk *Task) { tk.Offload(func() { <-c.done }) }
}

// deadlineCase is one deadline the Conn deadline tests set.
type deadlineCase struct {
	name    string
	none    bool          // the zero time: no deadline
	after   time.Duration // the deadline, from the moment it is set
	expired bool          // it has passed when the operation starts
	fires   bool          // an operation that waits times out at it
}

var deadlineCases = []deadlineCase{
	{name: "zero", none: true},
	{name: "past", after: -time.Second, expired: true},
	{name: "now", after: 0, expired: true},
	{name: "near", after: nearDeadline, fires: true},
	{name: "far", after: time.Hour},
}

const (
	// nearDeadline is the near-future deadline: long enough that an
	// operation which fails "at once" returns well before it.
	nearDeadline = 60 * time.Millisecond
	// peerLate is when the peer lets a waiting operation complete: after
	// nearDeadline, so the near deadline fires first.
	peerLate = 2 * nearDeadline
	// bigWrite is more than a loopback connection holds while its reader
	// does not read: a send buffer autotuned up to 4 MiB (tcp_wmem's
	// default maximum) and a receive window that grows only as the reader
	// reads. (A small SO_RCVBUF set on the peer after the handshake would
	// shrink the window under the sender and stall it in retransmissions.)
	bigWrite = 16 << 20
)

// at returns the deadline as a time, set now.
func (dc deadlineCase) at() time.Time {
	if dc.none {
		return time.Time{}
	}
	return time.Now().Add(dc.after)
}

// check reports a failure unless n, err after an operation that started
// at start with deadline dl are what dc expects: want bytes, or a timeout
// at once (expired) or, when the operation had to wait, at and not before
// the deadline (fires).
func (dc deadlineCase) check(t *testing.T, op string, waits bool, n, want int, err error, start, dl time.Time) {
	t.Helper()
	switch {
	case dc.expired:
		if !errors.Is(err, os.ErrDeadlineExceeded) || n != 0 {
			t.Errorf("%s, deadline %s: %d, %v, want 0 bytes and a timeout", op, dc.name, n, err)
		} else if d := time.Since(start); d >= nearDeadline {
			t.Errorf("%s, deadline %s: timed out after %v, want at once", op, dc.name, d)
		}
	case dc.fires && waits:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s, deadline %s: %d, %v, want a timeout", op, dc.name, n, err)
		} else if now := time.Now(); now.Before(dl) {
			t.Errorf("%s, deadline %s: timed out %v before the deadline", op, dc.name, dl.Sub(now))
		}
	default:
		if err != nil || n != want {
			t.Errorf("%s, deadline %s: %d, %v, want %d bytes", op, dc.name, n, err, want)
		}
	}
}

// TestConnReadDeadline reads with each deadline twice: with a byte already
// waiting (an expired deadline fails even so; the others read it at once)
// and with none, so that Read has to wait (an expired deadline fails at
// once, the near one at its time, the others get the peer's late byte).
func TestConnReadDeadline(t *testing.T) {
	checkLeaks(t)
	cmds := make(chan peerCmd, 4)
	defer close(cmds)
	inTaskWithConn(t, Options{Carriers: 1}, scriptedPeer(cmds), func(tk *Task, c *Conn) {
		one := make([]byte, 1)
		readOne := func() { // with no deadline
			c.SetReadDeadline(time.Time{})
			if _, err := io.ReadFull(c, one); err != nil {
				t.Errorf("read: %v", err)
			}
		}
		for _, dc := range deadlineCases {
			// Two bytes in one segment: once the first is read, the
			// second is waiting.
			peer(cmds, peerCmd{write: 2})(tk)
			readOne()
			dl := dc.at()
			c.SetReadDeadline(dl)
			start := time.Now()
			n, err := c.Read(one)
			dc.check(t, "read with a byte waiting", false, n, 1, err, start, dl)
			if n == 0 {
				readOne()
			}

			dl = dc.at()
			c.SetReadDeadline(dl)
			late := peer(cmds, peerCmd{delay: peerLate, write: 1})
			start = time.Now()
			n, err = c.Read(one)
			dc.check(t, "read that waits", true, n, 1, err, start, dl)
			late(tk)
			if n == 0 {
				readOne()
			}
		}
	})
}

// TestConnWriteDeadline writes with each deadline twice: one byte into an
// empty socket (an expired deadline fails even so; the others write it)
// and bigWrite bytes that the peer reads only after peerLate, so that
// Write has to wait (an expired deadline fails at once, the near one at
// its time, the others once the peer reads).
func TestConnWriteDeadline(t *testing.T) {
	checkLeaks(t)
	cmds := make(chan peerCmd, 4)
	defer close(cmds)
	big := make([]byte, bigWrite)
	filled := true
	inTaskWithConn(t, Options{Carriers: 1}, scriptedPeer(cmds), func(tk *Task, c *Conn) {
		for _, dc := range deadlineCases {
			dl := dc.at()
			c.SetWriteDeadline(dl)
			start := time.Now()
			n, err := c.Write(big[:1])
			dc.check(t, "write into an empty socket", false, n, 1, err, start, dl)
			peer(cmds, peerCmd{discard: n})(tk)

			dl = dc.at()
			c.SetWriteDeadline(dl)
			var drained func(*Task)
			if !dc.expired && !dc.fires { // the peer makes room later
				drained = peer(cmds, peerCmd{delay: peerLate, discard: len(big)})
			}
			start = time.Now()
			n, err = c.Write(big)
			if dc.fires && n == len(big) {
				filled = false // the path took it all: nothing waited
				err = os.ErrDeadlineExceeded
			}
			dc.check(t, "write that waits", true, n, len(big), err, start, dl)
			if drained == nil {
				drained = peer(cmds, peerCmd{discard: n})
			}
			drained(tk)
		}
	})
	if !filled {
		t.Skipf("loopback took a %d-byte write without waiting: the near deadline could not be tested", bigWrite)
	}
}

// TestConnDeadlinePassed checks the decision Read and Write make before
// each system call, against cached clock readings (c.now) set ahead of the
// clock (so that a clock read finds the deadline not passed) or behind it
// (so that it finds it passed).
func TestConnDeadlinePassed(t *testing.T) {
	const slack = clockSlack
	ahead, behind := int64(10*time.Second), -int64(10*time.Second)
	tests := []struct {
		name     string
		now      int64 // c.now, relative to the clock
		deadline int64 // relative to c.now; none and deadlinePassed as they are
		absolute bool  // deadline is not relative
		want     bool
	}{
		{"none", 0, 0, true, false},
		{"passed when set", 0, deadlinePassed, true, true},
		{"at the cached reading", 0, 0, false, true},
		{"before the cached reading", 0, -1, false, true},
		{"beyond the slack", 0, slack + 1, false, false},
		{"within the slack, not passed by the clock", ahead, slack / 2, false, false},
		{"within the slack, passed by the clock", behind, slack / 2, false, true},
		{"at the slack, passed by the clock", behind, slack, false, true},
		// The documented limit: a cached reading older than clockSlack is
		// trusted for a deadline more than clockSlack after it.
		{"beyond the slack of a stale reading", behind, 2 * slack, false, false},
	}
	for _, tt := range tests {
		c := &Carrier{now: wait.Now() + tt.now}
		pd := &pollDesc{c: c}
		dl := tt.deadline
		if !tt.absolute {
			dl += c.now
		}
		if got := pd.passed(dl); got != tt.want {
			t.Errorf("%s: passed(now%+d) = %v, want %v", tt.name, dl-c.now, got, tt.want)
		}
	}
	for _, tt := range []struct {
		t    time.Time
		want func(int64) bool
	}{
		{time.Time{}, func(d int64) bool { return d == 0 }},
		// Passed, with a monotonic reading: at or before the clock.
		{time.Now().Add(-time.Second), func(d int64) bool { return d >= deadlinePassed && d <= wait.Now() }},
		{time.Now(), func(d int64) bool { return d >= deadlinePassed && d <= wait.Now() }},
		// Passed, placed by the wall clock.
		{time.Now().Add(-time.Second).Round(0), func(d int64) bool { return d == deadlinePassed }},
		{time.Unix(1, 0), func(d int64) bool { return d == deadlinePassed }},
		{time.Now().Add(time.Hour), func(d int64) bool { return d > wait.Now()+int64(59*time.Minute) }},
		{time.Now().Add(time.Hour).Round(0), func(d int64) bool { return d > wait.Now()+int64(59*time.Minute) }},
	} {
		if d := monoDeadline(tt.t); !tt.want(d) {
			t.Errorf("monoDeadline(%v) = %d", tt.t, d)
		}
	}
}
