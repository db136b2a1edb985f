package carrier

import (
	"runtime"
	"testing"

	"github.com/spindle-lab/spindle/internal/unix"
)

// helperThread starts a goroutine locked to a thread of its own, which
// lives until the test ends (or stop is called), and returns its tid; batch,
// when set, puts it under SCHED_BATCH first, as its owner would.
func helperThread(t *testing.T, batch bool) (tid int, stop func()) {
	t.Helper()
	tids, done := make(chan int), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if batch {
			if _, err := unix.SetBatch(0, true); err != nil {
				t.Error(err)
			}
		}
		tids <- unix.Gettid()
		<-done
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			close(done)
		}
	}
	t.Cleanup(stop)
	return <-tids, stop
}

// batched reports whether thread tid is under SCHED_BATCH.
func batched(t *testing.T, tid int) bool {
	t.Helper()
	on, err := unix.Batch(tid)
	if err != nil {
		t.Fatal(err)
	}
	return on
}

// A group whose carriers block in their pollers on threads of their own
// puts the process's other threads, those started before it and after,
// under SCHED_BATCH and its carriers' under SCHED_NORMAL; Close puts back
// the ones it batched, and leaves under SCHED_BATCH a thread that was so
// before. Groups that float, park or reserve a CPU for the other threads,
// and NoBatch, leave them all as they are.
func TestBatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     Options
		batch bool
	}{
		{"default", Options{Carriers: 1}, true},
		{"two carriers", Options{Carriers: 2}, true},
		{"NoBatch", Options{Carriers: 1, NoBatch: true}, false},
		{"ParkIdle", Options{Carriers: 1, ParkIdle: true}, false},
		{"Float", Options{Carriers: 1, Float: true}, false},
		{"NPlusOne", Options{Carriers: 1, NPlusOne: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			before, _ := helperThread(t, false)
			userBatch, _ := helperThread(t, true)
			g, err := New(tc.o)
			if err != nil {
				if tc.o.NPlusOne {
					t.Skipf("N+1 needs two CPUs or more: %v", err)
				}
				t.Fatal(err)
			}
			closeAtEnd(t, g)
			after, _ := helperThread(t, false)
			tc.batch = tc.batch && !g.opts.ParkIdle // the suite's parking run parks every group
			if g.batches() != tc.batch {
				t.Errorf("batching %v, want %v", g.batches(), tc.batch)
			}
			for i := range g.Len() {
				if c := int(g.Carrier(i).tid.Load()); batched(t, c) {
					t.Errorf("carrier %d's thread %d is batched", i, c)
				}
			}
			if got := batched(t, before); got != tc.batch {
				t.Errorf("a thread started before the group: batched %v, want %v", got, tc.batch)
			}
			if got := batched(t, after); got != tc.batch {
				t.Errorf("a thread started after the group (inheriting): batched %v, want %v", got, tc.batch)
			}
			for _, tel := range g.Snapshot() {
				others, batched := tel.OtherThreads, tel.BatchedThreads
				switch {
				case !tc.batch && (others != -1 || batched != -1):
					t.Errorf("carrier %d's telemetry: %d of %d other threads batched, want -1 of -1 (the group does not batch)", tel.Carrier, batched, others)
				case tc.batch && (others < 3 || batched != others): // before, userBatch, after and the runtime's
					t.Errorf("carrier %d's telemetry: %d of %d other threads batched, want all of 3 or more", tel.Carrier, batched, others)
				}
			}
			g.Close()
			if batched(t, before) || batched(t, after) {
				t.Errorf("after Close: the thread started before batched %v, after %v; want neither", batched(t, before), batched(t, after))
			}
			if !batched(t, userBatch) {
				t.Errorf("after Close: a thread batched before the group is not any more")
			}
		})
	}
}

// Groups batch together: the other threads stay batched until the last
// batching group closes, and a thread a carrier of one group had is not
// batched by another's sweep.
func TestBatchTwoGroups(t *testing.T) {
	checkLeaks(t)
	other, _ := helperThread(t, false)
	a := newGroup(t, Options{Carriers: 1})
	if !a.batches() {
		t.Skip("the suite's parking run: no group batches")
	}
	b := newGroup(t, Options{Carriers: 1})
	for _, g := range []*Group{a, b} {
		if c := int(g.Carrier(0).tid.Load()); batched(t, c) {
			t.Errorf("a carrier's thread %d is batched with two groups open", c)
		}
	}
	if !batched(t, other) {
		t.Fatal("another thread is not batched with two groups open")
	}
	b.Close()
	if !batched(t, other) {
		t.Error("another thread was put back when the first of two groups closed")
	}
	if c := int(a.Carrier(0).tid.Load()); batched(t, c) {
		t.Errorf("the open group's carrier thread %d was batched when the other closed", c)
	}
	a.Close()
	if batched(t, other) {
		t.Error("another thread is still batched after both groups closed")
	}
}

// ProbeBatch answers what a batching group gets here: nil where the
// group's telemetry finds every other thread batched, an error where it
// finds none.
func TestProbeBatch(t *testing.T) {
	checkLeaks(t)
	probe := ProbeBatch()
	g := newGroup(t, Options{Carriers: 1})
	if !g.batches() {
		t.Skip("the suite's parking run: no group batches")
	}
	tel := g.Snapshot()[0]
	if all := tel.BatchedThreads == tel.OtherThreads; all != (probe == nil) {
		t.Errorf("ProbeBatch: %v, but the group batched %d of %d other threads", probe, tel.BatchedThreads, tel.OtherThreads)
	}
}
