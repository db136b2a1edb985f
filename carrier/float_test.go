package carrier

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
)

func TestFloatOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		bad  string // substring of the error; "": accepted
	}{
		{"float", Options{Carriers: 2, Float: true, Steal: true}, ""},
		{"float without steal", Options{Carriers: 1, Float: true}, ""},
		{"pin", Options{Carriers: 1, Float: true, Pin: PinCPU}, "excludes Pin cpu:"},
		{"nosmt", Options{Carriers: 1, Float: true, Pin: PinSkipSMT}, "excludes Pin nosmt:"},
		{"n+1", Options{Carriers: 1, Float: true, NPlusOne: true}, "excludes NPlusOne:"},
		{"cpus", Options{Carriers: 1, Float: true, CPUs: cpu.Set{0}}, "excludes CPUs 0:"},
		{"all three", Options{Carriers: 1, Float: true, Pin: PinCPU, NPlusOne: true, CPUs: cpu.Set{0}}, "excludes Pin cpu, NPlusOne, CPUs 0:"},
		{"slice", Options{Carriers: 1, Float: true, Slice: time.Millisecond}, "excludes Slice 1ms: leave it at 0"},
		{"the default slice", Options{Carriers: 1, Float: true}, ""}, // none: Float ignores DefaultSlice
		{"the kernel's slice", Options{Carriers: 1, Float: true, Slice: -1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(tc.o)
			if tc.bad == "" {
				if err != nil {
					t.Fatal(err)
				}
				g.Close()
				return
			}
			if err == nil {
				g.Close()
				t.Fatalf("New(%+v) accepted", tc.o)
			}
			way := "taskset" // the way out, for a restriction of threads
			if tc.o.Slice > 0 {
				way = "leave it at 0"
			}
			if !strings.Contains(err.Error(), tc.bad) || !strings.Contains(err.Error(), way) {
				t.Errorf("error %q: want it to name %q and the way out", err, tc.bad)
			}
			// The conflict is structured, so that a command can name its
			// flags instead of the fields.
			var ce *ConflictError
			if !errors.As(err, &ce) || ce.Option != "Float" || len(ce.With) == 0 {
				t.Errorf("error %q: want a *ConflictError of Float", err)
			}
		})
	}
}

// floatScene runs imbalance on a floating group of two stealing carriers.
func floatScene(t *testing.T, n int, body func(tk *Task, start *Carrier)) *Group {
	t.Helper()
	g, _ := imbalance(t, Options{Carriers: 2, Steal: true, Float: true}, n, body)
	return g
}

// imbalance starts a group of two carriers with options o, hogs carrier 1
// and starts n tasks on carrier 0, each running body(tk, start) where start
// is the carrier it started on; once all n have started the hog lets go, so
// carrier 1 goes idle with carrier 0's runnable tasks in view. It returns
// when every task has returned, with the group and the time from the hog's
// release to then.
func imbalance(tb testing.TB, o Options, n int, body func(tk *Task, start *Carrier)) (*Group, time.Duration) {
	tb.Helper()
	o.HandoffThreshold = -1 // the hog holds carrier 1 by blocking it the Go way, on purpose
	g := newGroup(tb, o)
	hogging, release := make(chan struct{}), make(chan struct{})
	g.Carrier(1).SubmitLocal(func(*Task) {
		close(hogging)
		<-release // keeps carrier 1 from stealing the tasks before they start
	})
	<-hogging
	var started, finished atomic.Int32
	var released time.Time
	done := make(chan struct{})
	for i := 0; i < n; i++ {
		g.Carrier(0).Submit(func(tk *Task) {
			start := tk.Carrier()
			if started.Add(1) == int32(n) {
				released = time.Now()
				close(release)
			}
			defer func() {
				if finished.Add(1) == int32(n) {
					close(done)
				}
			}()
			body(tk, start)
		})
	}
	within(tb, done, 60*time.Second, "tasks started on one carrier")
	return g, time.Since(released)
}

// TestFloatMigratesStartedTasks: started tasks that only compute and yield
// are handed from busy carrier 0 to idle carrier 1, and the books agree.
func TestFloatMigratesStartedTasks(t *testing.T) {
	checkLeaks(t)
	const n = 16
	var moved atomic.Int32
	var stop atomic.Bool // set once a task has moved: then all return
	deadline := time.Now().Add(10 * time.Second)
	g := floatScene(t, n, func(tk *Task, start *Carrier) {
		for !stop.Load() && time.Now().Before(deadline) {
			spin(20 * time.Microsecond)
			tk.Yield()
			if tk.Carrier() != start {
				moved.Add(1)
				stop.Store(true)
				return
			}
		}
	})
	if moved.Load() == 0 {
		t.Fatal("no started task moved to the idle carrier")
	}
	s := g.Snapshot()
	if s[1].MigrationsIn == 0 || s[1].MigrationsIn > s[1].StealsIn {
		t.Errorf("carrier 1 migrations in %d, steals in %d", s[1].MigrationsIn, s[1].StealsIn)
	}
	if in, out := s[0].StealsIn+s[1].StealsIn, s[0].StealsOut+s[1].StealsOut; in != out {
		t.Errorf("steals in %d, out %d: every task handed over is counted by both ends", in, out)
	}
	if s[0].MigrationsIn+s[1].MigrationsIn < uint64(moved.Load()) {
		t.Errorf("%d tasks moved but %d migrations counted", moved.Load(), s[0].MigrationsIn+s[1].MigrationsIn)
	}
	// A task signals the end from inside its body; its carrier counts it
	// out just after. Give the carriers a moment to do so.
	for end := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		live := int64(0)
		for _, c := range g.Snapshot() {
			live += c.TasksLive
		}
		if live == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("tasks live %d after every task returned (the gauges went wrong in a hand-over)", live)
		}
	}
}

// TestFloatSettle: with a settle longer than the test, carrier 0 hands
// over once (half its backlog) and the moved tasks never move again,
// however long the imbalance that follows lasts.
func TestFloatSettle(t *testing.T) {
	checkLeaks(t)
	const n = 16
	var moved atomic.Int32
	g, _ := imbalance(t, Options{Carriers: 2, Steal: true, Float: true, FloatSettle: time.Hour}, n, func(tk *Task, start *Carrier) {
		counted := false
		for i := 0; i < 200; i++ {
			spin(10 * time.Microsecond)
			tk.Yield()
			if tk.Carrier() != start && !counted {
				counted = true
				moved.Add(1)
			}
		}
	})
	var migrations uint64
	for _, s := range g.Snapshot() {
		migrations += s.MigrationsIn
	}
	if migrations == 0 || migrations > n/2 || migrations != uint64(moved.Load()) {
		t.Errorf("%d migrations, %d tasks moved: want one hand-over of at most half the %d tasks, each moved once", migrations, moved.Load(), n)
	}
}

// TestFloatMigratesConns: tasks that own a conn keep talking on it after
// they moved (the fd is re-registered on the new carrier's epoll), a panic
// after a move is counted by the new home and closes the conn, and Close
// leaves nothing behind.
func TestFloatMigratesConns(t *testing.T) {
	checkLeaks(t)
	_, echo := echoGroup(t, Options{Carriers: 1}, ListenOptions{}) // a pinned group: the far ends stay put
	const n, after = 8, 20                                         // tasks; round trips each makes once moved
	var moved atomic.Int32
	var panicked, stop atomic.Bool // stop: one task made its round trips after moving
	errs := make(chan error, n)
	deadline := time.Now().Add(10 * time.Second)
	g := floatScene(t, n, func(tk *Task, start *Carrier) {
		c, err := tk.Dial(echo.Addr().String(), 5*time.Second)
		if err != nil {
			errs <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 64)
		for i, left := 0, after; left > 0 && !stop.Load() && time.Now().Before(deadline); i++ {
			msg := []byte(fmt.Sprintf("%p round %d", tk, i))
			if _, err := c.Write(msg); err != nil {
				errs <- fmt.Errorf("write after %d rounds: %w", i, err)
				return
			}
			if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
				errs <- fmt.Errorf("read after %d rounds: %w", i, err)
				return
			}
			if !bytes.Equal(buf[:len(msg)], msg) {
				errs <- fmt.Errorf("echo %q, want %q", buf[:len(msg)], msg)
				return
			}
			spin(20 * time.Microsecond)
			if tk.Carrier() != start {
				left--
				if left == 0 {
					moved.Add(1)
					stop.Store(true)
					if panicked.CompareAndSwap(false, true) {
						panic("after moving") // recovered by the runtime, counted by the new home
					}
				}
			}
			tk.Yield()
		}
	})
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if moved.Load() == 0 {
		t.Fatal("no task moved with its conn")
	}
	var panics uint64
	var conns int64
	for _, s := range g.Snapshot() {
		panics += s.Panics
		conns += s.OpenConns
	}
	if panics != 1 {
		t.Errorf("panics counted %d, want 1", panics)
	}
	if conns != 0 {
		t.Errorf("open conns %d after every task closed its conn", conns)
	}
}

// TestFloatCloseFromTask: floating carriers have no thread to recognise,
// yet Close and Listener.Close called from a task must not deadlock.
func TestFloatCloseFromTask(t *testing.T) {
	g := newGroup(t, Options{Carriers: 2, Steal: true, Float: true})
	l, err := g.Listen("127.0.0.1:0", echo, ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inTask(t, g, func(*Task) {
		if err := g.Close(); !errors.Is(err, ErrCloseInTask) {
			t.Errorf("Close in a task: %v, want ErrCloseInTask", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("Listener.Close in a task: %v", err)
		}
	})
	if calledFromTask() {
		t.Error("the test goroutine taken for a task")
	}
	if c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
		c.Close()
		// The accept task closes the socket soon after Listener.Close; give it a moment.
		time.Sleep(100 * time.Millisecond)
		if c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
			c.Close()
			t.Error("listener still accepts after Close")
		}
	}
}

// TestFloatStress mixes everything a task can do on four floating,
// stealing carriers (two CPUs here): echo round trips on a conn it owns,
// Yield, Sleep, Offload, computation and the odd panic, while tasks move
// between carriers. Every echo must come back intact, every panic be
// counted once, and Close leave nothing behind.
func TestFloatStress(t *testing.T) {
	checkLeaks(t)
	g, done, failed, panics := floatStress(t)
	within(t, done, 60*time.Second, "stress tasks")
	if err, ok := failed.Load().(error); ok {
		t.Fatal(err)
	}
	// done closes in a task's deferred call, before its panic reaches the
	// carrier that counts it: the last panics may be counted just after.
	var counted, moved uint64
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		counted, moved = 0, 0
		for _, s := range g.Snapshot() {
			counted += s.Panics
			moved += s.MigrationsIn
		}
		if counted == uint64(panics.Load()) || time.Now().After(end) {
			break
		}
	}
	if counted != uint64(panics.Load()) {
		t.Errorf("panics counted %d, raised %d", counted, panics.Load())
	}
	t.Logf("%d tasks moved between carriers", moved)
}

// TestFloatCloseMidway closes a floating group while the stress tasks are
// running and moving: parked, runnable and handed-over tasks all unwind,
// and nothing is left behind.
func TestFloatCloseMidway(t *testing.T) {
	checkLeaks(t)
	g, _, _, _ := floatStress(t)
	time.Sleep(20 * time.Millisecond)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}

// floatStress starts the stress tasks on four floating, stealing carriers
// and returns the group, a channel closed when every task has returned,
// the first failure and the number of panics raised.
func floatStress(t *testing.T) (*Group, chan struct{}, *atomic.Value, *atomic.Int32) {
	_, echo := echoGroup(t, Options{Carriers: 1}, ListenOptions{})
	g := newGroup(t, Options{Carriers: 4, Steal: true, Float: true})
	const tasks, steps = 64, 150
	failed := new(atomic.Value)
	panics := new(atomic.Int32)
	var finished atomic.Int32
	done := make(chan struct{})
	for i := 0; i < tasks; i++ {
		seed := uint64(i)
		g.Carrier(i % 2).Submit(func(tk *Task) {
			defer func() {
				if finished.Add(1) == tasks {
					close(done)
				}
			}()
			rng := rand.New(rand.NewPCG(seed, 7))
			c, err := tk.Dial(echo.Addr().String(), 5*time.Second)
			if err != nil {
				failed.Store(err)
				return
			}
			defer c.Close()
			buf := make([]byte, 64)
			for s := 0; s < steps; s++ {
				switch rng.IntN(6) {
				case 0, 1:
					msg := []byte(fmt.Sprintf("%d/%d", seed, s))
					if _, err := c.Write(msg); err != nil {
						failed.Store(fmt.Errorf("task %d step %d write: %w", seed, s, err))
						return
					}
					if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
						failed.Store(fmt.Errorf("task %d step %d read: %w", seed, s, err))
						return
					}
					if !bytes.Equal(buf[:len(msg)], msg) {
						failed.Store(fmt.Errorf("task %d: echo %q, want %q", seed, buf[:len(msg)], msg))
						return
					}
				case 2:
					tk.Yield()
				case 3:
					tk.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
				case 4:
					tk.Offload(func() { time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond) })
				case 5:
					spin(time.Duration(rng.IntN(50)) * time.Microsecond)
				}
			}
			if seed%16 == 0 {
				panics.Add(1)
				panic("planned") // closes c; counted by whichever carrier runs the task now
			}
		})
	}
	return g, done, failed, panics
}
