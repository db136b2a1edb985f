package carrier

import (
	"context"
	"testing"
	"time"
)

func TestTaskFromContext(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 2})
	type seen struct {
		same, inner bool
		ctx         context.Context
	}
	done := make(chan seen, 1)
	g.Go(func(task *Task) {
		ctx := ContextWithTask(context.Background(), task)
		inner := make(chan bool, 1)
		task.Go(func(other *Task) { inner <- TaskFromContext(ctx) == nil }) // another task of the same carrier
		task.Sleep(10 * time.Millisecond)
		done <- seen{same: TaskFromContext(ctx) == task, inner: <-inner, ctx: ctx}
	})
	var s seen
	select {
	case s = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("task did not finish")
	}
	if !s.same {
		t.Error("TaskFromContext in the task did not return it")
	}
	if !s.inner {
		t.Error("TaskFromContext in another task returned the first")
	}
	if TaskFromContext(s.ctx) != nil {
		t.Error("TaskFromContext on a plain goroutine returned a task")
	}
	if TaskFromContext(context.Background()) != nil {
		t.Error("TaskFromContext of a context without a task returned one")
	}
}

func TestWatchdog(t *testing.T) {
	cases := []struct {
		name      string
		threshold time.Duration
		block     time.Duration
		want      uint64
	}{
		{"blocks past the threshold", 20 * time.Millisecond, 40 * time.Millisecond, 1},
		{"parks instead", 20 * time.Millisecond, 0, 0},
		{"watchdog off", -1, 40 * time.Millisecond, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			g := newGroup(t, Options{Carriers: 1, PinnedThreshold: tc.threshold})
			got := make(chan uint64, 1)
			g.Go(func(task *Task) {
				if tc.block > 0 {
					time.Sleep(tc.block) // blocks the carrier's thread
				} else {
					task.Sleep(40 * time.Millisecond) // parks
				}
				task.Yield() // ends the run: the watchdog judges it
				got <- task.Pinned()
			})
			var n uint64
			select {
			case n = <-got:
			case <-time.After(5 * time.Second):
				t.Fatal("task did not finish")
			}
			if n != tc.want {
				t.Errorf("Task.Pinned = %d, want %d", n, tc.want)
			}
			if tel := g.Snapshot()[0].Pinned; tel != tc.want {
				t.Errorf("Telemetry.Pinned = %d, want %d", tel, tc.want)
			}
		})
	}
}
