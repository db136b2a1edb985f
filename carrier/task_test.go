package carrier

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/internal/unix"
)

// inTask runs fn as a task on carrier 0 of g and waits for it.
func inTask(t *testing.T, g *Group, fn func(*Task)) {
	t.Helper()
	done := make(chan struct{})
	if err := g.Carrier(0).Submit(func(tk *Task) {
		defer close(done)
		fn(tk)
	}); err != nil {
		t.Fatal(err)
	}
	within(t, done, 10*time.Second, "task")
}

// TestNoLostWakeup submits to carriers that block (block, and adaptive
// once it has spun) from several producers, each waiting for its task
// before submitting the next, so that every submission finds the carrier
// asleep or falling asleep: a lost wake-up hangs one producer and fails the
// test. Half the producers submit from outside, half from a task of the
// other carrier; with stealing on, a nudged sibling must wake as well.
func TestNoLostWakeup(t *testing.T) {
	for _, tc := range []struct {
		wait  string
		steal bool
	}{{"block", false}, {"block", true}, {"adaptive", false}} {
		t.Run(fmt.Sprintf("wait=%s/steal=%v", tc.wait, tc.steal), func(t *testing.T) {
			checkLeaks(t)
			g := newGroupOrSkip(t, Options{Carriers: 2, Wait: tc.wait, Steal: tc.steal})
			const producers, rounds = 4, 2500
			var wg sync.WaitGroup
			var ran atomic.Int64
			for p := 0; p < producers; p++ {
				wg.Add(1)
				produce := func(submit func(fn func(*Task)) error, offload func(func())) {
					defer wg.Done()
					ch := make(chan struct{}, 1)
					fn := func(*Task) { ran.Add(1); ch <- struct{}{} }
					for i := 0; i < rounds; i++ {
						if err := submit(fn); err != nil {
							t.Error(err)
							return
						}
						timedOut := false
						offload(func() {
							select {
							case <-ch:
							case <-time.After(5 * time.Second):
								timedOut = true
							}
						})
						if timedOut {
							t.Errorf("producer %d round %d: task not run within 5s (lost wake-up)", p, i)
							return
						}
						if i%64 == 0 {
							offload(func() { time.Sleep(50 * time.Microsecond) }) // let the carrier fall asleep
						}
					}
				}
				target := g.Carrier(p % 2)
				if p < producers/2 {
					go produce(target.Submit, func(f func()) { f() })
					continue
				}
				g.Carrier(1 - p%2).Submit(func(tk *Task) { produce(target.Submit, tk.Offload) })
			}
			wg.Wait()
			if got := ran.Load(); got != producers*rounds {
				t.Fatalf("ran %d tasks, want %d", got, producers*rounds)
			}
			var blocks uint64
			for _, s := range g.Snapshot() {
				blocks += s.Waits["block"]
			}
			if blocks == 0 {
				t.Error("the carriers never blocked: the test did not exercise the wake-up path")
			}
		})
	}
}

// TestSleepAndYieldStayOnCarrier: after each park a task runs on its
// carrier's thread. That thread can change: a carrier that hands off or
// parks idle runs its tasks, and parks, with its thread unlocked, and when
// a run or a park ends on another thread (the scheduler moved a briefly
// blocked or preempted goroutine, or a parked carrier), the carrier moves
// there (handoff.go); otherwise it is the thread the task began on.
func TestSleepAndYieldStayOnCarrier(t *testing.T) {
	for _, threshold := range []time.Duration{0, -1} {
		t.Run(fmt.Sprintf("handoff threshold %v", threshold), func(t *testing.T) {
			checkLeaks(t)
			g := newGroup(t, Options{Carriers: 2, HandoffThreshold: threshold})
			inTask(t, g, func(tk *Task) {
				c, tid := tk.Carrier(), unix.Gettid()
				onCarrier := func(after string) {
					if got, want := unix.Gettid(), int(c.tid.Load()); got != want || !c.ho.unlocked && got != tid {
						t.Errorf("after %s the task runs on thread %d; its carrier's is %d (it began on %d)", after, got, want, tid)
					}
					if tk.Carrier() != c {
						t.Errorf("after %s the task is on carrier %d, not %d", after, tk.Carrier().ID(), c.ID())
					}
				}
				start := time.Now()
				tk.Sleep(20 * time.Millisecond)
				onCarrier("Sleep")
				if d := time.Since(start); d < 20*time.Millisecond {
					t.Errorf("Sleep(20ms) returned after %v", d)
				}
				tk.Yield()
				onCarrier("Yield")
				tk.Offload(func() { time.Sleep(time.Millisecond) })
				onCarrier("Offload")
			})
		})
	}
}

func TestOffload(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 1})
	inTask(t, g, func(tk *Task) {
		ch := make(chan int)
		go func() { ch <- 42 }()
		var v int
		tk.Offload(func() { v = <-ch }) // a channel receive would block the carrier
		if v != 42 {
			t.Errorf("offloaded receive got %d", v)
		}
	})
	// A panic in the offloaded function surfaces in the task.
	inTask(t, g, func(tk *Task) {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want boom", p)
			}
		}()
		tk.Offload(func() { panic("boom") })
	})
}

func TestPanicRecoveredConnsClosed(t *testing.T) {
	checkLeaks(t)
	ln := netListen(t)
	g := newGroup(t, Options{Carriers: 1})
	done := make(chan struct{})
	g.Carrier(0).Submit(func(tk *Task) {
		defer close(done)
		if _, err := tk.Dial(ln.Addr().String(), time.Second); err != nil {
			t.Error(err)
			return
		}
		panic("handler bug")
	})
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	within(t, done, 5*time.Second, "panicking task")
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := peer.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("peer read after the panic: %v, want EOF (conn closed)", err)
	}
	s := g.Snapshot()[0]
	for i := 0; i < 1000 && (s.Panics != 1 || s.OpenConns != 0); i++ { // counted after the task's own defers
		time.Sleep(time.Millisecond)
		s = g.Snapshot()[0]
	}
	if s.Panics != 1 || s.OpenConns != 0 {
		t.Errorf("panics=%d open_conns=%d, want 1 and 0", s.Panics, s.OpenConns)
	}
	inTask(t, g, func(*Task) {}) // the carrier goes on
}

func TestReadDeadline(t *testing.T) {
	checkLeaks(t)
	stop := make(chan struct{})
	defer close(stop)
	inTaskWithConn(t, Options{Carriers: 1}, func(net.Conn) { <-stop }, func(tk *Task, c *Conn) { // the peer never writes
		start := time.Now() // before the deadline is set: a start read after it may be late
		c.SetReadDeadline(start.Add(30 * time.Millisecond))
		_, err := c.Read(make([]byte, 8))
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read: %v, want deadline exceeded", err)
		}
		if d := time.Since(start); d < 30*time.Millisecond || d > 900*time.Millisecond {
			t.Errorf("deadline fired after %v, want about 30ms", d)
		}
		c.SetDeadline(time.Time{})
		if c.LocalAddr() == nil || c.RemoteAddr() == nil || c.LocalAddr().String() == c.RemoteAddr().String() {
			t.Errorf("addrs %v -> %v", c.LocalAddr(), c.RemoteAddr())
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("read after close: %v", err)
		}
	})
}

func TestDialRefused(t *testing.T) {
	checkLeaks(t)
	ln := netListen(t)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	g := newGroup(t, Options{Carriers: 1})
	inTask(t, g, func(tk *Task) {
		_, err := tk.Dial(addr, time.Second)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial closed port: %v, want connection refused", err)
		}
		if _, err := tk.Dial("no-port", time.Second); err == nil {
			t.Error("dial without a port succeeded")
		}
	})
	if s := g.Snapshot()[0]; s.OpenConns != 0 {
		t.Errorf("open_conns = %d after failed dials", s.OpenConns)
	}
}

// TestDialTimeout fills a listener's accept queue (backlog 0, nobody
// accepting) so that further SYNs are dropped and connect hangs.
func TestDialTimeout(t *testing.T) {
	checkLeaks(t)
	lfd, err := unix.ListenTCP(mustAddrPort("127.0.0.1:0"), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lfd)
	ap, _ := unix.LocalAddr(lfd)
	g := newGroup(t, Options{Carriers: 1})
	timedOut := false // t.Skip must not run inside a task: it calls runtime.Goexit
	inTask(t, g, func(tk *Task) {
		var held []*Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for i := 0; i < 8; i++ {
			start := time.Now()
			c, err := tk.Dial(ap.String(), 100*time.Millisecond)
			if err == nil {
				held = append(held, c) // the queue still had room
				continue
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("dial: %v, want a timeout", err)
			}
			if d := time.Since(start); d < 100*time.Millisecond {
				t.Errorf("timed out after %v, want >= 100ms", d)
			}
			timedOut = true
			return
		}
	})
	if !timedOut {
		t.Skip("the kernel accepted 8 connections into a backlog-0 queue: cannot provoke a connect timeout here")
	}
}

// TestOpBudget: a task whose writes never block must still let another
// task of its carrier run.
func TestOpBudget(t *testing.T) {
	checkLeaks(t)
	var other atomic.Bool
	inTaskWithConn(t, Options{Carriers: 1, OpBudget: 8}, func(c net.Conn) { io.Copy(io.Discard, c) }, func(tk *Task, c *Conn) {
		tk.Go(func(*Task) { other.Store(true) })
		for i := 0; i < 10000 && !other.Load(); i++ {
			if _, err := c.Write([]byte("x")); err != nil {
				t.Error(err)
				return
			}
		}
		if !other.Load() {
			t.Error("10000 non-blocking writes and the other task never ran")
		}
	})
}

// TestDeadlineMovedWhileParked: a task parked in Read with no deadline is
// released when another task of its carrier sets one in the past.
func TestDeadlineMovedWhileParked(t *testing.T) {
	checkLeaks(t)
	stop := make(chan struct{})
	defer close(stop)
	inTaskWithConn(t, Options{Carriers: 1}, func(net.Conn) { <-stop }, func(tk *Task, c *Conn) {
		tk.Go(func(*Task) { c.SetReadDeadline(time.Now().Add(-time.Second)) })
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read: %v, want deadline exceeded", err)
		}
	})
}

// TestDialNames dials by name: localhost directly, the machine's host name
// through the resolver on an offloaded goroutine.
func TestDialNames(t *testing.T) {
	checkLeaks(t)
	ln := netListen(t)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	host, err := os.Hostname()
	if err != nil {
		t.Skipf("no host name: %v", err)
	}
	resolvable := false
	if ips, err := net.LookupIP(host); err == nil {
		for _, ip := range ips {
			resolvable = resolvable || ip.IsLoopback()
		}
	}
	g := newGroup(t, Options{Carriers: 1})
	inTask(t, g, func(tk *Task) {
		names := []string{"localhost:" + port}
		if resolvable {
			names = append(names, net.JoinHostPort(host, port))
		}
		for _, addr := range names {
			c, err := tk.Dial(addr, time.Second)
			if err != nil {
				t.Errorf("dial %s: %v", addr, err)
				continue
			}
			c.Close()
		}
		if _, err := tk.Dial("localhost:notaport", time.Second); err == nil {
			t.Error("dial with a bad port succeeded")
		}
	})
	if !resolvable {
		t.Skipf("host name %q does not resolve to loopback: only localhost was dialed", host)
	}
}

// TestDrainServesEveryQueue: one carrier kept busy by tasks that always
// yield (more work per pass than the drain budget) still starts a new
// submission, runs a SubmitLocal task and resumes an offloaded task: each
// drain goes on with the round the last one left, instead of beginning
// with the FIFO again.
func TestDrainServesEveryQueue(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 1})
	c := g.Carrier(0)
	const busy = 8
	var stop atomic.Bool
	defer stop.Store(true) // the group's Close (a cleanup) then waits for the tasks to return
	var started atomic.Int32
	allStarted := make(chan struct{})
	for i := 0; i < busy; i++ {
		c.Submit(func(tk *Task) {
			if started.Add(1) == busy {
				close(allStarted)
			}
			for !stop.Load() {
				spin(30 * time.Microsecond) // 8 x 30µs: every pass's budget (50µs) is spent in the FIFO
				tk.Yield()
			}
		})
	}
	within(t, allStarted, 5*time.Second, "busy tasks submitted together") // the first ones yield before the last start
	for _, tc := range []struct {
		name   string
		submit func(fn func(*Task)) error
	}{
		{"Submit (inject queue)", c.Submit},
		{"SubmitLocal (local queue)", c.SubmitLocal},
		{"Offload resumption (local queue)", func(fn func(*Task)) error {
			return c.Submit(func(tk *Task) { tk.Offload(func() {}); fn(tk) })
		}},
	} {
		ran := make(chan struct{})
		if err := tc.submit(func(*Task) { close(ran) }); err != nil {
			t.Fatal(err)
		}
		within(t, ran, 5*time.Second, tc.name+" behind always-runnable tasks")
	}
}

// TestIdleCorosTrimmed: the coroutines a burst of parked tasks left idle
// are stopped once the pool has gone unused for a trim period, down to
// minIdleCoros; the carrier, blocked with nothing to do, wakes for it.
func TestIdleCorosTrimmed(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: it waits for two trim periods (seconds)")
	}
	g := newGroup(t, Options{Carriers: 1, Wait: "block"})
	const burst = minIdleCoros + 136
	var wg sync.WaitGroup
	var started atomic.Int32
	wg.Add(burst)
	for range burst {
		if err := g.Carrier(0).Submit(func(t *Task) {
			// All parked at once, so burst coroutines: none ends before the
			// last has started (a fixed sleep let early ones end first, and
			// lend their coroutine, on a slow machine).
			started.Add(1)
			for started.Load() < burst {
				t.Sleep(time.Millisecond)
			}
			wg.Done()
		}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	deadline := time.Now().Add(3*coroTrimPeriod + 2*time.Second)
	for {
		got := g.Snapshot()[0].CorosTrimmed
		if got == burst-minIdleCoros {
			break
		}
		if got > burst-minIdleCoros || time.Now().After(deadline) {
			t.Fatalf("coroutines trimmed %d, want %d", got, burst-minIdleCoros)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The pool kept minIdleCoros: that many tasks again start no coroutine
	// and trim none.
	wg.Add(minIdleCoros)
	for range minIdleCoros {
		g.Carrier(0).Submit(func(t *Task) { t.Sleep(time.Millisecond); wg.Done() })
	}
	wg.Wait()
	time.Sleep(coroTrimPeriod + 300*time.Millisecond)
	if got := g.Snapshot()[0].CorosTrimmed; got != burst-minIdleCoros {
		t.Fatalf("coroutines trimmed %d after a burst within the floor, want still %d", got, burst-minIdleCoros)
	}
}

// A task's Time is its carrier's clock reading (Now) as a time.Time, with
// the wall clock at most a rebase old: a step of the system's clock shows
// after wallRebase. A conn's Now is its task's Time for the task, and
// time.Now for a goroutine.
func TestTaskTime(t *testing.T) {
	checkLeaks(t)
	inTaskWithConn(t, Options{Carriers: 1}, func(c net.Conn) { io.Copy(io.Discard, c) }, func(tk *Task, cn *Conn) {
		tt := tk.Time()
		if m, ok := wait.Mono(tt); !ok || m != tk.Now() {
			t.Errorf("Time's monotonic reading %d (%v), Now %d", m, ok, tk.Now())
		}
		if d := time.Now().Sub(tt); d < 0 || d > time.Second {
			t.Errorf("Time is %v behind time.Now", d)
		}
		if wall := time.Since(tt.Round(0)); wall < -time.Millisecond || wall > time.Second {
			t.Errorf("Time's wall clock is %v behind the system's", wall)
		}
		if got := cn.Now(); !got.Equal(tt) {
			t.Errorf("the conn's Now for its task: %v, Time %v", got, tt)
		}
		foreign := make(chan time.Time)
		go func() { foreign <- cn.Now() }()
		before := time.Now()
		if got := <-foreign; got.Equal(tt) || got.Before(tt) {
			t.Errorf("the conn's Now for a goroutine: %v, the task's clock %v (time.Now %v)", got, tt, before)
		}

		// A wall clock an hour off (a step of the system's clock) stays
		// until the rebase, then goes.
		c := tk.home
		c.wall = c.wall.Add(-time.Hour)
		stepped := time.Since(tk.Time().Round(0))
		c.wallAt = c.now - wallRebase
		after := time.Since(tk.Time().Round(0))
		if stepped < time.Hour-time.Second || after < -time.Millisecond || after > time.Second {
			t.Errorf("an hour-off wall clock: %v behind before the rebase, %v after", stepped, after)
		}
	})
}
