package carrier

import (
	"spindle/internal/unix"
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
