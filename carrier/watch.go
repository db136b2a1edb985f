package carrier

import (
	"context"
	"sync/atomic"
	"time"
)

// A ContextWatch runs a function in a task of its carrier when a context
// ends, as context.AfterFunc does, for a task that waits for something
// that usually comes first (a backend's answer, whose exchange a
// cancelled request context must end). context.AfterFunc costs five
// allocations and two lock round trips on the context for every wait,
// paid in full although the wait nearly always ends first; on a busy
// carrier a ContextWatch costs neither. The carrier looks at the
// context's Done channel itself, at most watchSweep apart while it runs
// tasks, and registers context.AfterFunc only for the watches still on
// when it is about to wait idle (so that a cancellation wakes it at once)
// or that have lasted watchArmAge (so that the watches it polls stay few).
// A cancellation is therefore noticed within watchSweep plus one drain
// pass while the carrier is busy, and at once otherwise; with floating
// carriers (Options.Float), whose tasks move, Start registers at once.
//
// A ContextWatch is reused, one watch at a time, and belongs to one
// carrier: Start and Stop run in its tasks (as a Conn's operations do).
// The zero value is ready to use.
type ContextWatch struct {
	c     *Carrier
	ctx   context.Context
	done  <-chan struct{}
	f     func()
	since int64 // wait.Now when Start ran (the carrier's reading)
	idx   int   // position in c.watches while polled
	state uint8
	// gen counts the watches: a firing runs f only while the watch it
	// fired for is the current one.
	gen  uint64
	stop func() bool // context.AfterFunc's, while registered
	// The registered function (afterDone, bound once as onDone) runs on
	// whichever goroutine ends the context, maybe after Stop returned
	// false and a later watch began: it reads the carrier and the gen it
	// was registered for from these.
	armedOn  atomic.Pointer[Carrier]
	armedGen atomic.Uint64
	onDone   func()
}

// The states of a ContextWatch.
const (
	watchOff    uint8 = iota // not watching
	watchPolled              // in c.watches, polled by the carrier
	watchArmed               // registered with context.AfterFunc
	watchEnded               // the context ended: f submitted
)

// watchSweep is the longest a busy carrier goes between two looks at the
// Done channels it watches (a look costs a few nanoseconds per watch).
const watchSweep = 200 * time.Microsecond

// watchArmAge is how long a watch is polled before the carrier registers
// it with context.AfterFunc, so that only the watches started in the last
// watchArmAge are looked at (a few hundred at tens of thousands of waits
// per second). It is far above a typical backend's answer time, so that
// on a busy carrier nearly every watch ends before.
const watchArmAge = 10 * time.Millisecond

// Start watches ctx for the task t, which runs it: when ctx ends before
// Stop, f runs in a new task of t's carrier. A context that cannot end
// (Done nil) is not watched. A watch still on is stopped first.
func (w *ContextWatch) Start(t *Task, ctx context.Context, f func()) {
	defer t.leave(t.enter())
	if w.state != watchOff { // the last watch was not stopped: it ends here
		w.Stop()
	}
	w.gen++
	done := ctx.Done()
	if done == nil {
		w.state = watchOff
		return
	}
	c := t.home
	w.c, w.ctx, w.done, w.f = c, ctx, done, f
	add(&c.stats.watches, 1)
	if c.g.opts.Float {
		w.arm()
		return
	}
	select {
	case <-done:
		w.fire()
		return
	default:
	}
	w.since = c.now
	w.state = watchPolled
	w.idx = len(c.watches)
	c.watches = append(c.watches, w)
}

// Stop ends the watch. Like the stop function of context.AfterFunc it
// reports whether it stopped f from running: false when the context ended
// first (f then runs, or no longer will once Stop returned).
func (w *ContextWatch) Stop() bool {
	if w.c != nil {
		if t := w.c.caller(); t != nil {
			defer t.leave(t.enter())
		}
	}
	ok := true
	switch w.state {
	case watchPolled:
		w.c.unwatch(w)
	case watchArmed:
		ok = w.stop()
		w.stop = nil
	case watchEnded:
		ok = false
	}
	w.state = watchOff
	w.gen++
	w.ctx, w.f = nil, nil
	return ok
}

// arm registers the watch with context.AfterFunc.
func (w *ContextWatch) arm() {
	w.state = watchArmed
	add(&w.c.stats.watchesArmed, 1)
	w.armedOn.Store(w.c)
	w.armedGen.Store(w.gen)
	if w.onDone == nil {
		w.onDone = w.afterDone
	}
	w.stop = context.AfterFunc(w.ctx, w.onDone)
}

func (w *ContextWatch) afterDone() { w.submit(w.armedOn.Load(), w.armedGen.Load()) }

// fire runs f for a watch the carrier found ended.
func (w *ContextWatch) fire() {
	w.state = watchEnded
	w.submit(w.c, w.gen)
}

// submit queues f on c, to run if watch gen is still the current one.
func (w *ContextWatch) submit(c *Carrier, gen uint64) {
	c.SubmitLocal(func(*Task) {
		if w.gen == gen && w.f != nil {
			w.f()
		}
	})
}

// unwatch removes w from the watches the carrier polls.
func (c *Carrier) unwatch(w *ContextWatch) {
	last := len(c.watches) - 1
	moved := c.watches[last]
	c.watches[w.idx] = moved
	moved.idx = w.idx
	c.watches[last] = nil
	c.watches = c.watches[:last]
}

// sweepWatches looks at the polled watches: the ended ones fire, and the
// ones older than watchArmAge (all of them with idle: the carrier is about
// to wait) are registered with context.AfterFunc. It reports whether it
// queued work.
func (c *Carrier) sweepWatches(now int64, idle bool) bool {
	c.sweepAt = now + int64(watchSweep)
	fired := false
	for i := 0; i < len(c.watches); {
		w := c.watches[i]
		select {
		case <-w.done:
			c.unwatch(w)
			w.fire()
			fired = true
			continue
		default:
		}
		if idle || now-w.since >= int64(watchArmAge) {
			c.unwatch(w)
			w.arm()
			continue
		}
		i++
	}
	return fired
}
