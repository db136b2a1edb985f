package carrier

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/internal/unix"
)

// Task is one unit of work: a closure run as a coroutine on a carrier.
// Its methods may be called only from the task's own coroutine (the fn it
// was started with and what fn calls); a *Task must not be kept after fn
// returns, because the runtime reuses it.
type Task struct {
	fn    func(*Task)
	home  *Carrier
	co    *coro
	state taskState

	hidx int // index in the home carrier's timer heap, -1 when absent

	readyAt int64 // wait.Now when the task last became runnable (submitted, woken, resumed), for submit-to-run telemetry
	ops     int   // I/O operations completed since the task last blocked
	stay    bool  // never handed to another carrier once started (SubmitLocal, accept tasks)
	handed  bool  // handed over by a floating sibling, not yet run by the new carrier
	stopped bool  // its carrier stopped while it waited in park: it runs on in the shutdown
	movedAt int64 // wait.Now when a floating carrier last took it over (0: never)

	owned    []*Conn // conns the task holds: closed if it panics
	accepted *Conn   // the handler's conn: closed when the task ends

	// An accepted connection travelling with an unstarted handler task, so
	// that a thief can register it on its own poller (and the fd is closed
	// if the task is dropped at Close).
	lis   *Listener
	afd   int
	asa   unix.Sockaddr
	panic any // a panic raised by an offloaded function, re-raised in the task

	pinned   uint64 // runs longer than Options.PinnedThreshold (see Pinned)
	handoffs uint64 // runs handed off (see Handoffs)
	// parkArm is how many of the task's next runs get the park watch
	// (armPark): parkArmRuns after a run that came back from a hand-off or
	// park yield, or after a second run of the last eight that waited the
	// Go way (waited), one less after each other run.
	parkArm uint8
	// waited has a bit per run of the task's last eight, newest lowest:
	// set where the run's goroutine left running (gtrackseq).
	waited uint8
	// runs counts the task's runs, up to youngRuns: a young task has no
	// history of its own for the park watch to go by.
	runs uint8
}

var taskPool = sync.Pool{New: func() any { return &Task{hidx: -1, afd: -1} }}

func newTask(fn func(*Task)) *Task {
	t := taskPool.Get().(*Task)
	t.fn = fn
	t.readyAt = wait.Now()
	return t
}

// release returns a finished (or never started) task to the pool.
func (t *Task) release() {
	if t.afd >= 0 { // dropped before it started: nobody else will close it
		unix.Close(t.afd)
	}
	// A conn the task leaves open (a client conn kept in a pool for other
	// tasks) is no one's now: left pointing at t, it would send a later
	// Close to whatever task reuses t from the pool, on any carrier.
	for _, cn := range t.owned {
		cn.owner = nil
	}
	clear(t.owned)
	*t = Task{hidx: -1, afd: -1, owned: t.owned[:0]}
	taskPool.Put(t)
}

// errStopped unwinds a task's coroutine when its carrier stops while the
// task waits in an operation that has no error to return (Sleep, Yield,
// Offload, a wait for a conn's task lock), or waits again after its
// carrier stopped.
var errStopped = errors.New("carrier: stopped")

// ErrCarrierStopped is what a conn's operations return to a task whose
// carrier stopped (Group.Close) while the task waited for the conn's
// readiness, or while the task was handed off: the conn is being closed.
// It wraps net.ErrClosed, so code between a handler and its I/O sees a
// closed connection's error, as under net/http's Server.Close.
var ErrCarrierStopped = fmt.Errorf("carrier stopped: %w", net.ErrClosed)

// ErrNotInTask is returned where an operation must wait on a conn's home
// carrier and no task of it can (a flush of write-behind bytes outside any
// task). Conn's own methods serve any goroutine (foreign.go).
var ErrNotInTask = errors.New("carrier: conn used outside a task of its home carrier")

// Carrier returns the carrier the task runs on. With floating carriers
// (Options.Float) it can change whenever the task parks or yields: look it
// up again rather than keep per-carrier state across those.
func (t *Task) Carrier() *Carrier { return t.home }

// block parks the task until something makes it runnable again. When the
// carrier stops instead, it panics with errStopped, which the task's runner
// recovers after the task's deferred functions ran.
func (t *Task) block() {
	if !t.park() {
		panic(errStopped)
	}
}

// park is block for a wait that has an error to return (a conn's
// readiness: await): it reports false, rather than unwinding the task, when
// the carrier stops while the task waits. The task then runs on, in its
// carrier's shutdown (stopCoro, on the carrier's goroutine, its fds still
// open): a write that has room succeeds, and every later wait ends the
// same way at once (stopped), so the task's code sees errors, as under net/http's
// Server.Close, and no panic that a recover of its own would take for a
// handler's.
func (t *Task) park() bool {
	if t.stopped {
		return false
	}
	t.setState(taskParked)
	t.ops = 0
	if t.co.yield(false) {
		return true
	}
	t.stopped = true
	t.setState(taskRunning) // from runnable: the stop woke it (stopCoro), or it was queued
	return false
}

// suspend switches back to the carrier, leaving the task in state
// (parked, or runnable when it queued itself).
func (t *Task) suspend(state taskState) {
	t.setState(state)
	t.toCarrier()
}

// toCarrier switches back to the carrier, the task's state already set;
// the carrier's run sets it running again before it resumes the task.
func (t *Task) toCarrier() {
	t.ops = 0
	if !t.co.yield(false) {
		panic(errStopped)
	}
}

// Pinned returns how many of the task's runs so far (from a resumption to
// the next park or yield) held the carrier longer than
// Options.PinnedThreshold: the watchdog's count for this task.
func (t *Task) Pinned() uint64 { return t.pinned }

// Handoffs returns how many of the task's runs so far held its carrier
// past Options.HandoffThreshold and were handed off (handoff.go): the
// carrier went on with its other tasks while this one blocked or computed.
// A run still handed off is counted once the task is back on its carrier,
// at its next carrier operation.
func (t *Task) Handoffs() uint64 { return t.handoffs }

// SetNote says what the task is doing, for the report of a hand-off of
// one of its runs (Options.OnHandoff; a server notes the connection and
// its current request). n's String is called from another goroutine, the
// group's monitor, while the task blocks: it must be safe for that. The
// note lasts until the task ends or sets another; nil clears it.
func (t *Task) SetNote(n fmt.Stringer) {
	if n == nil {
		t.co.note.Store(nil)
		return
	}
	t.co.note.Store(&n)
}

// RunningFor returns how long the task has run since it last resumed,
// measured from the carrier's clock reading before it resumed: together
// with Pinned, what a caller checks to see whether code it just called
// blocked the carrier.
func (t *Task) RunningFor() time.Duration {
	defer t.leave(t.enter())
	return time.Duration(wait.Now() - t.home.now)
}

// Time is Now as a time.Time, with its wall clock and monotonic readings:
// the time a server stamps a response with or arms a deadline from, at no
// clock read. Its wall clock follows the monotonic one between readings
// of the system's clock at most wallRebase apart.
func (t *Task) Time() time.Time {
	defer t.leave(t.enter())
	return t.home.clock()
}

// Now returns the carrier's latest clock reading (wait.Now's clock, ns),
// which costs nothing: the carrier took it before it resumed the task, or
// later, so it is at most as old as the task's current run. A request's
// start measured with it includes the parsing that ran since.
func (t *Task) Now() int64 {
	defer t.leave(t.enter())
	return t.home.now
}

// Yield lets the carrier run its other runnable tasks and poll I/O, then
// resumes the task.
func (t *Task) Yield() {
	defer t.leave(t.enter())
	t.home.fifo.push(t)
	t.suspend(taskRunnable)
}

// Sleep parks the task for d on its carrier's timer heap.
func (t *Task) Sleep(d time.Duration) {
	if d <= 0 {
		t.Yield()
		return
	}
	defer t.leave(t.enter())
	c := t.home
	c.timers.add(t, wait.Now()+int64(d))
	t.block()
}

// Go starts another task on the same carrier. It is queued as unstarted
// work, so with stealing on an idle sibling may take it.
func (t *Task) Go(fn func(*Task)) {
	t.home.enqueue(newTask(fn))
}

// Offload runs fn on a plain goroutine, where it may block the Go way
// (channels, mutexes, net, time.Sleep), and parks the task until fn
// returns; the task then resumes on its home carrier. A panic in fn is
// re-raised in the task. Group.Close waits for offloaded functions.
func (t *Task) Offload(fn func()) {
	defer t.leave(t.enter())
	c := t.home
	c.g.offloads.Add(1)
	t.setState(taskOffloaded) // before fn can finish and queue the resumption
	go func() {
		defer c.g.offloads.Done()
		defer func() {
			if p := recover(); p != nil {
				t.panic = p
			}
			c.resume(t)
		}()
		fn()
	}()
	t.toCarrier()
	if p := t.panic; p != nil {
		t.panic = nil
		panic(p)
	}
}

// opDone counts a completed I/O operation and yields when the task has
// used its budget without blocking.
func (t *Task) opDone() {
	t.ops++
	if t.ops >= t.home.g.opts.OpBudget {
		t.Yield()
	}
}

// hold records that t holds cn, so a panic in t closes it.
func (t *Task) hold(cn *Conn) {
	cn.owner = t
	t.owned = append(t.owned, cn)
}

func (t *Task) unhold(cn *Conn) {
	for i, o := range t.owned {
		if o == cn {
			last := len(t.owned) - 1
			t.owned[i] = t.owned[last]
			t.owned[last] = nil
			t.owned = t.owned[:last]
			break
		}
	}
	cn.owner = nil
}

// Release gives up t's hold on cn, a conn t accepted or dialled: the
// runtime no longer closes cn when t returns or panics, and cn stays open,
// polled by its carrier, for whoever uses it next (any goroutine: Conn),
// until its Close or the group's. An HTTP server calls it for a hijacked
// connection. It must be called by t; for a conn t does not hold it does
// nothing.
func (t *Task) Release(cn *Conn) {
	defer t.leave(t.enter())
	if cn.owner == t {
		t.unhold(cn)
	}
	if t.accepted == cn {
		t.accepted = nil
	}
}

// coro is a pooled coroutine: one iter.Pull coroutine runs task after task
// on its carrier's thread, so starting a task allocates nothing once the
// pool is warm.
type coro struct {
	next  func() (bool, bool)
	stop  func()
	yield func(bool) bool
	task  *Task
	// mark: the coroutine marks itself as a task's (markTask), for
	// calledFromTask in floating groups.
	mark bool
	// g is the coroutine's goroutine (getg) while it lives, 0 before and
	// after, where getg is implemented: TaskFromContext compares it with
	// its caller's.
	g atomic.Uintptr
	// phase is the running task's phaseUser, phaseCarrier or
	// phaseDetached (handoff.go): written by the task and, to detach it,
	// by its group's monitor. It lives on the coroutine, which the monitor
	// may look at after the task ended, not on the pooled Task.
	phase atomic.Uint32
	// goid is the coroutine's goroutine id, for the monitor to find its
	// stack when it hands the run off; labels are the pprof labels the
	// goroutine takes on (the carrier), nil for none.
	goid   atomic.Uint64
	labels context.Context
	// note is what the running task says it is doing (Task.SetNote), for
	// the hand-off report; the owner clears it when the task ends.
	note atomic.Pointer[fmt.Stringer]
}

// body is the coroutine's function. It yields false when its task parks
// and true when the task has finished; it then waits for the next task.
func (co *coro) body(yield func(bool) bool) {
	co.yield = yield
	if haveGetg {
		co.g.Store(getg())
		defer co.g.Store(0) // before the runtime may reuse the descriptor
	}
	if co.mark {
		defer markTask()()
	}
	co.goid.Store(curGoid())
	if co.labels != nil {
		pprof.SetGoroutineLabels(co.labels)
	}
	for {
		t := co.task
		if !execute(t) || !yield(true) { // a detached task rejoins before it ends: its carrier's owner finishes it
			return
		}
	}
}

func (c *Carrier) newCoro() *coro {
	co := &coro{mark: c.g.opts.Float, labels: c.labels}
	if c.ho.unlocked { // created unlocked, so that any owner, on any thread, may resume it (handoff.go)
		runtime.UnlockOSThread()
		defer runtime.LockOSThread()
	}
	co.next, co.stop = iter.Pull(co.body)
	c.pool.all[co] = struct{}{}
	return co
}

// closeUnwinding closes cn, held by t, as t ends. A task handed off that
// ends after its carrier stopped cannot rejoin it: its Close unwinds with
// errStopped, which ends the cleanup here (the carrier's shutdown closed
// the fd already); the conn is dropped from t's books all the same.
func closeUnwinding(t *Task, cn *Conn) {
	defer func() {
		if p := recover(); p != nil {
			if p != errStopped {
				panic(p)
			}
			if cn.owner == t {
				t.unhold(cn)
			}
			if t.accepted == cn {
				t.accepted = nil
			}
		}
	}()
	cn.Close()
}

// execute runs t's function in the current coroutine, recovering a panic:
// the panic is counted and the conns the task holds are closed. It reports
// whether t is back on its carrier to be finished (end): a detached task
// rejoins before it touches its books (t.owned, t.accepted), which its
// carrier's owner writes meanwhile (a CloseAsync of its accepted conn);
// false when the carrier stopped (its shutdown closed the fds).
func execute(t *Task) (home bool) {
	defer func() {
		p := recover()
		if home = t.end(); !home {
			return
		}
		if p != nil {
			if p != errStopped {
				add(&t.home.stats.panics, 1) // t.home: a floating task may have moved since it started
			}
			for len(t.owned) > 0 {
				closeUnwinding(t, t.owned[len(t.owned)-1])
			}
		}
		if t.accepted != nil {
			closeUnwinding(t, t.accepted)
		}
	}()
	t.fn(t)
	t.refuseLocked() // before the coroutine switches back: the runtime would throw
	return           // home: set by the deferred function
}
