package carrier

import (
	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/internal/unix"
	"sync/atomic"
	"testing"
	"time"
)

func TestSubmitRunsOnCarrier(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 2})
	if g.Len() != 2 {
		t.Fatalf("Len = %d, want 2", g.Len())
	}
	done := make(chan struct{})
	var ran atomic.Int32
	const n = 100
	for i := 0; i < n; i++ {
		if err := g.Go(func(tk *Task) {
			if tk.Carrier() == nil {
				t.Error("task without carrier")
			}
			if ran.Add(1) == n {
				close(done)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	within(t, done, 5*time.Second, "100 tasks")
	// Each drain pass publishes its counts when it ends, after its tasks ran.
	var runs uint64
	for i := 0; i < 1000 && runs < n; i++ {
		runs = 0
		for _, s := range g.Snapshot() {
			runs += s.TasksRun
		}
		time.Sleep(time.Millisecond)
	}
	if runs < n {
		t.Errorf("telemetry counts %d task runs, want >= %d", runs, n)
	}
}

// BenchmarkYield measures one Yield: the task parks, the carrier's drain
// loop picks it up again and resumes it. Besides wall time per op it
// reports the carrier thread's CPU time per op (cpu-ns/op), which time
// spent preempted by other processes does not inflate.
func BenchmarkYield(b *testing.B) {
	g := newGroup(b, Options{Carriers: 1})
	done := make(chan struct{})
	b.ReportAllocs()
	var cpuNs int64
	g.Carrier(0).Submit(func(tk *Task) {
		tk.Yield() // warm
		b.ResetTimer()
		c0 := unix.ThreadCPUTime()
		for i := 0; i < b.N; i++ {
			tk.Yield()
		}
		cpuNs = unix.ThreadCPUTime() - c0
		b.StopTimer()
		close(done)
	})
	<-done
	b.ReportMetric(float64(cpuNs)/float64(b.N), "cpu-ns/op")
}

// waitAsleep waits until c is blocked in epoll_wait (its producers must
// write the eventfd to wake it).
func waitAsleep(t *testing.T, c *Carrier) {
	t.Helper()
	for start := time.Now(); c.sleeping.Load() == 0; time.Sleep(50 * time.Microsecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatal("carrier did not fall asleep within 5s")
		}
	}
}

// TestWakeSentStampsWakeups checks that a Submit waking a sleeping carrier
// stamps the time just before its eventfd write.
func TestWakeSentStampsWakeups(t *testing.T) {
	g := newGroup(t, Options{Carriers: 1, Wait: "block"})
	c := g.Carrier(0)
	waitAsleep(t, c)
	before := wait.Now()
	ran := make(chan int64, 1)
	if err := c.Submit(func(*Task) { ran <- wait.Now() }); err != nil {
		t.Fatal(err)
	}
	var at int64
	select {
	case at = <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("task did not run within 5s")
	}
	if s := c.WakeSent(); s < before || s > at {
		t.Errorf("WakeSent = %d, want in [%d, %d] (between Submit and the task's run)", s, before, at)
	}
}

// TestAdaptiveLearnsBlockWakeOnCarrier checks that the adaptive strategy of
// a carrier folds the carrier's own wake-ups into B: after a few wake-ups
// of a sleeping carrier, B has moved from its seed.
func TestAdaptiveLearnsBlockWakeOnCarrier(t *testing.T) {
	g := newGroup(t, Options{Carriers: 1, Wait: "adaptive"})
	c := g.Carrier(0)
	// The policy belongs to the carrier's thread: read it from a task.
	blockWake := func() time.Duration {
		out := make(chan time.Duration, 1)
		if err := c.SubmitLocal(func(*Task) { out <- c.strat.(*wait.Adaptive).Policy.BlockWake() }); err != nil {
			t.Fatal(err)
		}
		select {
		case b := <-out:
			return b
		case <-time.After(5 * time.Second):
			t.Fatal("task did not run within 5s")
		}
		return 0
	}
	seed := blockWake()
	const wakeups = 20
	for i := 0; i < wakeups; i++ {
		waitAsleep(t, c)
		done := make(chan struct{})
		if err := c.Submit(func(*Task) { close(done) }); err != nil {
			t.Fatal(err)
		}
		within(t, done, 5*time.Second, "woken task")
	}
	if c.WakeSent() == 0 {
		t.Fatal("no wake-up was stamped")
	}
	if b := blockWake(); b == seed {
		t.Errorf("B = %v after %d wake-ups of a sleeping carrier, still the seed: the carrier's wake-ups are not learned", b, wakeups)
	}
}

// TestSlice: a carrier's thread has the time slice Options.Slice asks for
// (DefaultSlice where 0, the kernel's default where negative), as the
// kernel reports it and as Telemetry.SliceNs does.
func TestSlice(t *testing.T) {
	def, granted, err := ProbeSlice()
	if err != nil {
		t.Fatal(err)
	}
	if granted == 0 {
		t.Skip("the kernel keeps no time slice per thread (before Linux 6.12): Options.Slice has no effect here")
	}
	for _, tc := range []struct {
		name  string
		slice time.Duration
		want  time.Duration
	}{
		{"default", 0, DefaultSlice},
		{"2ms", 2 * time.Millisecond, 2 * time.Millisecond},
		{"the kernel's", -1, def},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(Options{Carriers: 2, Slice: tc.slice})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			for i, s := range g.Snapshot() {
				ns, err := unix.Slice(int(g.Carrier(i).tid.Load()))
				if err != nil {
					t.Fatal(err)
				}
				if got := time.Duration(ns); got != tc.want {
					t.Errorf("carrier %d's thread: slice %v, want %v", i, got, tc.want)
				}
				if got := time.Duration(s.SliceNs); got != tc.want {
					t.Errorf("carrier %d's telemetry: slice %v, want %v", i, got, tc.want)
				}
			}
		})
	}
}
