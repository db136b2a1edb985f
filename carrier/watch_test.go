package carrier

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// watchRun is what one ContextWatch test saw.
type watchRun struct {
	fired   chan struct{} // closed by f
	after   time.Duration // from Start to f
	stopped chan bool     // Stop's result
	armed   uint64        // the carrier's WatchesArmed at the end
	watches uint64        // and its Watches
}

// runWatch starts a watch on ctx in a task of a one-carrier group, with
// another task keeping the carrier busy (yielding) while busy is set, then
// calls between (in the task, after Start) and, once stopAfter has passed
// or f ran, Stop. The watching task sleeps in 1ms steps on a busy carrier
// and in one piece on an idle one, which then has nothing to wake it but
// the cancellation.
func runWatch(t *testing.T, o Options, ctx context.Context, busy bool, between func(), stopAfter time.Duration) watchRun {
	t.Helper()
	o.Carriers = 1
	// No hand-off: a run of the busy task preempted past the threshold (a
	// GC pause on this small machine) would be handed off, and the carrier,
	// its busy task away, would go idle and arm the watch.
	o.HandoffThreshold = -1
	g := newGroup(t, o)
	r := watchRun{fired: make(chan struct{}), stopped: make(chan bool, 1)}
	var spin atomic.Bool
	spin.Store(busy)
	spun := make(chan struct{})
	if busy {
		g.Go(func(task *Task) {
			defer close(spun)
			for end := time.Now().Add(5 * time.Second); spin.Load() && time.Now().Before(end); {
				task.Yield()
			}
		})
	} else {
		close(spun)
	}
	var fired atomic.Bool
	step := stopAfter
	if busy {
		step = time.Millisecond
	}
	g.Go(func(task *Task) {
		var w ContextWatch
		start := time.Now()
		w.Start(task, ctx, func() {
			r.after = time.Since(start)
			fired.Store(true)
			close(r.fired)
		})
		between()
		for end := time.Now().Add(stopAfter); !fired.Load() && time.Now().Before(end); {
			task.Sleep(step)
		}
		r.stopped <- w.Stop()
		spin.Store(false)
	})
	var stopped bool
	select {
	case stopped = <-r.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the watching task did not finish")
	}
	r.stopped <- stopped
	within(t, spun, 10*time.Second, "the busy task")
	tel := g.Snapshot()[0]
	r.armed, r.watches = tel.WatchesArmed, tel.Watches
	return r
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestContextWatch checks that f runs when the context ends before Stop
// and only then, on a busy carrier (the watch polled, never registered
// with context.AfterFunc) and on an idle one (registered before the
// carrier waits), and what Stop reports.
func TestContextWatch(t *testing.T) {
	checkLeaks(t)
	cancelled, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	cases := []struct {
		name string
		o    Options
		busy bool
		// ctx returns the context and what to call in the task after
		// Start (cancel it, or nothing).
		ctx         func() (context.Context, func())
		stopAfter   time.Duration
		wantFired   bool
		wantStopped bool   // Stop's result
		wantWatches uint64 // counted watches
		wantArmed   uint64 // of them registered with context.AfterFunc
	}{
		{"busy, cancelled", Options{}, true, cancelLater, 5 * time.Second, true, false, 1, 0},
		{"busy, stopped first", Options{}, true, uncancelled, 5 * time.Millisecond, false, true, 1, 0},
		{"busy, outlives watchArmAge", Options{}, true, cancelAfterArmAge, 5 * time.Second, true, false, 1, 1},
		{"idle, cancelled", Options{}, false, cancelLater, 300 * time.Millisecond, true, false, 1, 1},
		{"idle, stopped first", Options{}, false, uncancelled, 5 * time.Millisecond, false, true, 1, 1},
		{"ended before Start", Options{}, true, func() (context.Context, func()) { return cancelled, func() {} }, 5 * time.Second, true, false, 1, 0},
		{"cannot end", Options{}, true, func() (context.Context, func()) { return context.Background(), func() {} }, 5 * time.Millisecond, false, true, 0, 0},
		{"floating carrier", Options{Float: true}, true, cancelLater, 5 * time.Second, true, false, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, between := tc.ctx()
			r := runWatch(t, tc.o, ctx, tc.busy, between, tc.stopAfter)
			if tc.wantFired {
				within(t, r.fired, 5*time.Second, "f")
				// The cancellation comes within 3*watchArmAge of Start;
				// the rest is the notice (at most watchSweep and a
				// drain pass, on a busy carrier) and the race detector.
				if limit := 3*watchArmAge + 100*time.Millisecond; r.after > limit {
					t.Errorf("f ran %v after Start, more than %v", r.after, limit)
				}
			} else {
				time.Sleep(20 * time.Millisecond) // room for a wrong firing
				if isClosed(r.fired) {
					t.Error("f ran although the watch was stopped first")
				}
			}
			if got := <-r.stopped; got != tc.wantStopped {
				t.Errorf("Stop = %v, want %v", got, tc.wantStopped)
			}
			wantArmed := tc.wantArmed
			if wantArmed == 0 && tc.wantFired && r.after >= watchArmAge {
				// The cancellation (or the carrier's notice of it) came
				// late on a loaded host: a watch that outlives
				// watchArmAge is registered by design, as in "busy,
				// outlives watchArmAge".
				t.Logf("f ran %v after Start, past watchArmAge: the watch may be registered", r.after)
				wantArmed = r.armed
			}
			if r.watches != tc.wantWatches || r.armed != wantArmed {
				t.Errorf("telemetry: %d watches, %d registered; want %d, %d", r.watches, r.armed, tc.wantWatches, wantArmed)
			}
		})
	}
}

// cancelLater is a context cancelled by another goroutine 5ms after the
// task starts watching it.
func cancelLater() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	return ctx, func() { time.AfterFunc(5*time.Millisecond, cancel) }
}

// cancelAfterArmAge is cancelled once the carrier has registered the
// watch for its age.
func cancelAfterArmAge() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	return ctx, func() { time.AfterFunc(3*watchArmAge, cancel) }
}

func uncancelled() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	return ctx, func() { time.AfterFunc(time.Second, cancel) } // long after Stop
}

// TestBacklogPolls checks the poll rule of a carrier with a backlog (a
// round longer than a drain pass): it polls I/O about once every
// backlogPollGap drain budgets instead of before every pass, and I/O is
// still served in the meantime (echo exchanges complete while the
// backlog lasts).
func TestBacklogPolls(t *testing.T) {
	checkLeaks(t)
	g, l := echoGroup(t, Options{Carriers: 1}, ListenOptions{})
	const spinners = 40 // each pass of 50µs runs about two of them
	var stop atomic.Bool
	ended := make(chan struct{}, spinners)
	for range spinners {
		g.Go(func(task *Task) {
			defer func() { ended <- struct{}{} }()
			for end := time.Now().Add(5 * time.Second); !stop.Load() && time.Now().Before(end); {
				spin(30 * time.Microsecond)
				task.Yield()
			}
		})
	}
	time.Sleep(20 * time.Millisecond) // the backlog settles
	before := g.Snapshot()[0]
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	echoes := 0
	// At least 50 ms and 200 drain passes: a fixed window alone gave a
	// starved CPU too few passes to judge by.
	enough := func() bool {
		return time.Since(start) >= 50*time.Millisecond && g.Snapshot()[0].Sub(before).Drains >= 200 || time.Since(start) > 5*time.Second
	}
	for ; echoes < 5 || !enough(); echoes++ {
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 4)); err != nil {
			t.Fatalf("echo during the backlog: %v", err)
		}
	}
	took := time.Since(start)
	d := g.Snapshot()[0].Sub(before)
	stop.Store(true)
	for range spinners {
		<-ended
	}
	t.Logf("%d echoes in %v; %d drain passes, %d polls", echoes, took, d.Drains, d.IOCycles)
	if d.Drains < 100 {
		t.Fatalf("only %d drain passes: no backlog to judge by", d.Drains)
	}
	if d.IOCycles*2 > d.Drains {
		t.Errorf("%d polls for %d drain passes: polled before most passes of a round", d.IOCycles, d.Drains)
	}
}

// TestContextWatchRestart: Start on a watch still on stops it first, so
// only the new context's end runs the new function, and the carrier polls
// the watch once.
func TestContextWatchRestart(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 1})
	first, cancelFirst := context.WithCancel(context.Background())
	second, cancelSecond := context.WithCancel(context.Background())
	firstRan, secondRan := make(chan struct{}), make(chan struct{})
	polled := make(chan int, 1)
	stopped := make(chan bool, 1)
	g.Go(func(task *Task) {
		var w ContextWatch
		w.Start(task, first, func() { close(firstRan) })
		w.Start(task, second, func() { close(secondRan) })
		polled <- len(task.home.watches)
		cancelFirst()
		task.Sleep(20 * time.Millisecond) // room for a wrong firing
		cancelSecond()
		for end := time.Now().Add(5 * time.Second); !isClosed(secondRan) && time.Now().Before(end); {
			task.Sleep(time.Millisecond)
		}
		stopped <- w.Stop()
	})
	within(t, secondRan, 10*time.Second, "the second watch's function")
	if n := <-polled; n != 1 {
		t.Errorf("the carrier polls %d watches after a restart, want 1", n)
	}
	if isClosed(firstRan) {
		t.Error("the first watch's function ran after Start replaced it")
	}
	if <-stopped {
		t.Error("Stop after the context ended reported true")
	}
}
