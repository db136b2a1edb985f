package carrier

import (
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// needHandoff skips a test of the hand-off where the carriers of o do not
// hand off (io_uring, floating, no getm), saying why.
func needHandoff(t *testing.T, g *Group) {
	t.Helper()
	if !g.Carrier(0).handoff {
		t.Skipf("carriers do not hand off here (poller %s, float %v, getm %v): they block as before",
			g.opts.Poller, g.opts.Float, mOK())
	}
}

// TestGetm: getm passes its start-up check where getg exists, and is the
// same for a goroutine locked to its thread however it is scheduled.
func TestGetm(t *testing.T) {
	if !haveGetg {
		t.Skip("getm is not implemented on this architecture: no hand-off")
	}
	if !mOK() {
		t.Fatal("getm failed its start-up check: the runtime's g no longer has m at offset 48")
	}
}

// TestHandoffLeaderFollowers is the hang: followers wait the Go way
// (a WaitGroup) for a leader parked on the same carrier (on its timer, as a
// backend call parks on its conn). Without the hand-off the first follower
// blocks the carrier's thread and nobody fires the leader's timer: the
// test fails at its time bound (checked against the code before).
func TestHandoffLeaderFollowers(t *testing.T) {
	for _, pin := range []Pinning{PinOff, PinCPU} {
		t.Run(pin.String(), func(t *testing.T) {
			checkLeaks(t)
			g := newGroup(t, Options{Carriers: 1, Pin: pin, HandoffThreshold: DefaultHandoffThreshold})
			needHandoff(t, g)
			var wg sync.WaitGroup
			wg.Add(1)
			const followers = 8
			done := make(chan struct{})
			var finished atomic.Int32
			g.Go(func(tk *Task) {
				tk.Sleep(50 * time.Millisecond) // the backend call
				wg.Done()
			})
			for range followers {
				g.Go(func(tk *Task) {
					wg.Wait()  // blocks the Go way
					tk.Yield() // and uses its carrier again after
					if finished.Add(1) == followers {
						close(done)
					}
				})
			}
			within(t, done, 5*time.Second, "followers of a leader parked on their carrier")
			s := g.Snapshot()[0]
			if s.Handoffs == 0 || s.Rejoins != s.Handoffs {
				t.Errorf("handoffs %d, rejoins %d: want some, all back", s.Handoffs, s.Rejoins)
			}
			t.Logf("handoffs %d, rejoins %d, thread moves %d", s.Handoffs, s.Rejoins, s.ThreadMoves)
		})
	}
}

// TestHandoffIsolation: while a task blocks the Go way (time.Sleep) or
// computes for 50 ms, the carrier's other tasks go on: a conn echoes
// within a few hand-off thresholds.
func TestHandoffIsolation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block func()
	}{
		{"time.Sleep", func() { time.Sleep(200 * time.Millisecond) }},
		{"computes", func() { spin(200 * time.Millisecond) }},
		{"mutex", func() {
			var mu sync.Mutex
			mu.Lock()
			go func() { time.Sleep(200 * time.Millisecond); mu.Unlock() }()
			mu.Lock()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			g, l := echoGroup(t, Options{Carriers: 1, HandoffThreshold: DefaultHandoffThreshold}, ListenOptions{})
			needHandoff(t, g)
			blocked := make(chan struct{})
			released := make(chan struct{})
			g.Go(func(tk *Task) {
				close(blocked)
				tc.block()
				tk.Yield()
				close(released)
			})
			<-blocked
			time.Sleep(5 * time.Millisecond) // the blocked run is under way
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			buf := make([]byte, 4)
			if _, err := c.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(buf); err != nil {
				t.Fatalf("echo while a task blocks its carrier: %v", err)
			}
			took := time.Since(start)
			select {
			case <-released:
				t.Fatalf("the blocked task ended before the echo (%v): nothing was isolated", took)
			default:
			}
			// A bound for a loaded 2-CPU machine; the hand-off itself
			// takes a threshold and a half (1.5 ms).
			if took > 100*time.Millisecond {
				t.Errorf("echo took %v while a task blocked its carrier", took)
			}
			within(t, released, 5*time.Second, "the blocked task")
			t.Logf("echo %v during a blocked run; %+v", took, g.Snapshot()[0].Handoffs)
		})
	}
}

// TestHandoffCloseWhileBlocked: the group closes while a handed-off task
// still blocks; Close returns, and the task, once it wakes, is unwound
// (its deferred function runs) without touching the stopped carrier.
func TestHandoffCloseWhileBlocked(t *testing.T) {
	checkLeaks(t)
	g, err := New(Options{Carriers: 1, HandoffThreshold: DefaultHandoffThreshold})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Carrier(0).handoff {
		g.Close()
		t.Skip("carriers do not hand off here")
	}
	release := make(chan struct{})
	blocked := make(chan struct{})
	unwound := make(chan struct{})
	g.Go(func(tk *Task) {
		defer close(unwound)
		close(blocked)
		<-release
		tk.Yield() // rejoins a stopped carrier: unwinds
		t.Error("a task ran on after its carrier stopped")
	})
	<-blocked
	deadline := time.Now().Add(5 * time.Second)
	for g.Snapshot()[0].Handoffs == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }()
	within(t, closed, 5*time.Second, "Close while a handed-off task blocks")
	close(release)
	within(t, unwound, 5*time.Second, "the handed-off task's unwinding")
}

// BenchmarkHandoffStall measures how long a carrier's other work waits
// while one of its tasks blocks the Go way: a task sleeps 5 ms with
// time.Sleep, and an echo round trip through the carrier starts as it
// does. Reported: the echo's p50 and p99 (µs) and the hand-offs; without
// the hand-off the echo would wait the whole 5 ms.
func BenchmarkHandoffStall(b *testing.B) {
	g, l := echoGroup(b, Options{Carriers: 1, HandoffThreshold: DefaultHandoffThreshold}, ListenOptions{})
	if !g.Carrier(0).handoff {
		b.Skip("carriers do not hand off here")
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1)
	var stalls []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		started := make(chan struct{})
		finished := make(chan struct{})
		g.Go(func(tk *Task) {
			close(started)
			time.Sleep(5 * time.Millisecond)
			tk.Yield()
			close(finished)
		})
		<-started
		t0 := time.Now()
		c.Write([]byte{1})
		if _, err := c.Read(buf); err != nil {
			b.Fatal(err)
		}
		stalls = append(stalls, time.Since(t0))
		<-finished
	}
	slices.Sort(stalls)
	if len(stalls) > 0 {
		b.ReportMetric(float64(stalls[len(stalls)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(stalls[len(stalls)*99/100].Microseconds()), "p99-µs")
	}
	b.ReportMetric(float64(g.Snapshot()[0].Handoffs)/float64(b.N), "handoffs/op")
}
