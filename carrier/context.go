package carrier

import (
	"context"

	"github.com/spindle-lab/spindle/internal/unix"
)

// taskKey is the context key of the task a request runs in.
type taskKey struct{}

// taskRef is the context value: the task, its carrier and its coroutine
// when the context was made, so that a lookup from any goroutine reads only
// the coroutine's goroutine or the carrier's thread id (atomics) before it
// touches the task.
type taskRef struct {
	t  *Task
	c  *Carrier
	co *coro
}

// ContextWithTask returns a copy of ctx that carries t, so that code called
// with that context (an http.RoundTripper, a database driver) can do its
// I/O on the task's carrier. Call it from t itself.
func ContextWithTask(ctx context.Context, t *Task) context.Context {
	return context.WithValue(ctx, taskKey{}, taskRef{t, t.home, t.co})
}

// TaskFromContext returns the task ctx carries (see ContextWithTask) when
// the caller runs in that task right now, and nil otherwise: a context
// travels to other goroutines and outlives its task, and only the task
// itself may park on its carrier. With floating carriers (Options.Float),
// which have no thread of their own, it checks that the caller is some
// task's coroutine and the task is its carrier's running one.
func TaskFromContext(ctx context.Context) *Task {
	ref, ok := ctx.Value(taskKey{}).(taskRef)
	if !ok || ref.c == nil {
		return nil
	}
	if co := ref.co; haveGetg && co != nil {
		// The caller is the coroutine that ran the task when ctx was made
		// (a coroutine keeps its task until the task ends, also on a
		// floating carrier), and it still runs that task. Only the
		// coroutine itself reads co.task.
		if g := co.g.Load(); g != 0 && g == getg() && co.task == ref.t {
			return ref.t
		}
		return nil
	}
	c := ref.c
	if c.g.opts.Float {
		if calledFromTask() && c.cur.Load() == ref.t {
			return ref.t
		}
		return nil
	}
	// Only c's own thread may read c.cur: look at the thread first.
	if c.tid.Load() == int64(unix.Gettid()) && c.cur.Load() == ref.t {
		return ref.t
	}
	return nil
}

// IsStop reports whether p, a value recovered from a panic in a task, is
// the runtime unwinding a task because its carrier stops (Group.Close
// explains which tasks unwind and which get errors). Code that
// recovers panics in a task (a server isolating a handler's panic) must
// re-raise it: the runtime recovers it after the task's deferred functions
// ran.
func IsStop(p any) bool { return p == errStopped }
