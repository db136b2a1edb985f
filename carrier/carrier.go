// Package carrier is spindle's runtime: per-CPU event loops ("carriers")
// that each poll an I/O poller of their own and run handler code as
// coroutines with carrier affinity, the Go form of the scheduler study's
// custom scheduler.
//
// A carrier is a goroutine locked to its OS thread (named carrier-N and
// optionally pinned to one CPU). It owns a poller (an epoll instance or an
// io_uring ring, Options.Poller), an eventfd that producers write only when
// the carrier is asleep, a timer heap and its run queues: a LIFO slot for
// the task just woken by I/O, a local FIFO, and an inject queue for work
// submitted from anywhere. Its loop polls I/O (without blocking while it
// has work), drains runnable tasks under a time budget (at least one task
// per pass), and otherwise waits with its wait.Strategy, for which it is
// the wait.Target.
//
// A task is a closure run as a coroutine from its carrier's pool (built on
// iter.Pull; no allocation per task once warm). Once started, a task stays
// on its carrier. A task that blocks the Go way (a mutex, a channel,
// time.Sleep) or computes for long is handed off (handoff.go): past
// Options.HandoffThreshold the carrier goes on on another thread while the
// task finishes its wait, and the task rejoins its carrier at its next
// carrier operation. Inside a task, Conn offers blocking-style I/O that
// parks the task on its carrier's poller (any other goroutine may use a
// Conn too: foreign.go), and Sleep, Yield, Dial, Go and Offload complete
// the toolkit. Work stealing,
// when enabled, moves only tasks that have not started, except in floating
// mode (Options.Float: carriers not locked to threads), where a busy
// carrier also hands runnable started tasks, with the conns they own, to an
// idle one (float.go).
//
// See docs/carrier.md for the options, what can and cannot be stolen, and
// the telemetry fields.
package carrier

import (
	"context"
	"fmt"
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
)

// eventBatch is how many events one poll returns at most; more ready
// fds are picked up by the next poll, a few microseconds later.
const eventBatch = 256

// Carrier is one event loop on one locked OS thread (or, floating, on a
// goroutine of its own).
type Carrier struct {
	g        *Group
	id       int
	cpu      int     // pinned CPU or -1
	affinity cpu.Set // CPUs the thread is restricted to; empty: unchanged
	poll     poller  // epoll or io_uring (Options.Poller)
	park     *parker // the netpoller wait of a ParkIdle carrier; nil: it blocks in poll
	connEng  engine  // the engine of its conns (engine.go; listeners have readiness)
	efd      int
	strat    wait.Strategy
	tid      atomic.Int64

	// Run queues. lifo, fifo and timers belong to the carrier's thread.
	lifo   *Task
	fifo   ring
	inject injectQ // unstarted tasks from anywhere (stealable)
	local  injectQ // work for this carrier only: Offload resumptions, SubmitLocal (never stolen)
	timers timerHeap

	sleeping atomic.Int32 // 1 while the carrier is (about to be) asleep in its poller (Block)
	poke     atomic.Int32 // 1 when someone wants the carrier's attention (stop, steal hint)
	waiting  atomic.Int32 // 1 while the carrier is idle in its wait strategy
	wakeSent atomic.Int64 // wait.Now just before the last eventfd wake-up (WakeSent)
	stopping atomic.Bool
	word     uint32 // bumped by every push to inject or local (Word)

	cur    atomic.Pointer[Task] // the task whose coroutine is running, nil between tasks (read by the monitor and by conn operations)
	pinNs  int64                // Options.PinnedThreshold in ns; 0: no watchdog
	pool   coroPool             // its coroutines (coropool.go)
	fdt    fdTable              // its registered fds (fdtable.go)
	polled bool                 // I/O was polled since the last drain
	// polledAt is the loop's clock reading (now) at the last poll between
	// drains: with a backlog, I/O is polled again once the round is over
	// or backlogPollGap drain budgets later (pollDue).
	polledAt int64
	// watches are the ContextWatches the carrier polls (watch.go), and
	// sweepAt when it looks at them next.
	watches []*ContextWatch
	sweepAt int64
	// quota is what is left of the current drain round: how many of the
	// tasks that were in each of the queues a round drains when the round
	// began have still to run (see drain).
	quota [roundQueues]int
	// now is the carrier thread's latest clock reading (wait.Now), taken
	// where the loop reads the clock anyway (each turn, after a poll that
	// returned events, after each task in a drain): tasks made runnable on
	// this thread are stamped with it, and submit-to-run is measured
	// against it, so the telemetry adds no clock reads per task.
	now int64
	// wall and wallAt place now on the wall clock without reading it
	// (clock): a time.Now reading and its wait.Now value, taken again once
	// wallRebase has passed, so that a step of the system's clock shows.
	wall   time.Time
	wallAt int64
	// yielded is the task that just yielded: it became runnable when its
	// run ended, so the drain stamps it with the clock reading it takes next.
	yielded *Task

	fl floatState   // floating mode's hand-overs (float.go)
	ho handoffState // hand-off's owner and its runs (handoff.go)
	// runCo is the coroutine of the current run (or the last), for the
	// monitor and to tell a task's call from a foreign one (caller).
	runCo atomic.Pointer[coro]
	// closeSeen is the group's count of CloseAsync requests the loop last
	// acted on (closeRequested).
	closeSeen uint64
	// labels are the pprof labels of the carrier's coroutines (nil when it
	// floats).
	labels context.Context

	siblings []*Carrier // steal candidates in scope
	stealBuf []*Task    // a steal's batch, reused
	rng      uint64     // rand's xorshift state (random siblings to steal from or offer work to)

	stats    stats
	done     chan struct{}
	startErr chan error
}

// ID returns the carrier's index in its group.
func (c *Carrier) ID() int { return c.id }

// PinnedThreshold returns the watchdog's threshold (Options.PinnedThreshold;
// 0 when the watchdog is off).
func (c *Carrier) PinnedThreshold() time.Duration { return time.Duration(c.pinNs) }

// CPU returns the CPU the carrier is pinned to, or -1.
func (c *Carrier) CPU() int { return c.cpu }

// Submit queues fn to run as a new task on this carrier. Any goroutine may
// call it. It fails only when the group is closed.
func (c *Carrier) Submit(fn func(*Task)) error {
	if fn == nil {
		return fmt.Errorf("carrier %d: submit: nil function", c.id)
	}
	return c.submit(newTask(fn))
}

func (c *Carrier) submit(t *Task) error {
	if !c.enqueue(t) {
		return fmt.Errorf("carrier %d: submit: %w", c.id, ErrGroupClosed)
	}
	c.wake()
	return nil
}

// enqueue queues an unstarted task on c's inject queue, where a thief may
// take it, and hints idle siblings when a backlog builds up. It does not
// wake c (a caller on c's own thread needs no wake-up). When c has stopped
// it releases t (closing an accepted fd it carries) and reports false.
func (c *Carrier) enqueue(t *Task) bool {
	if !c.inject.push(t) {
		t.release()
		return false
	}
	c.hintThieves()
	return true
}

// SubmitLocal queues fn to run as a new task on this carrier and nowhere
// else: unlike Submit, the task is never stolen by a sibling. Any goroutine
// may call it.
func (c *Carrier) SubmitLocal(fn func(*Task)) error {
	if fn == nil {
		return fmt.Errorf("carrier %d: submit: nil function", c.id)
	}
	t := newTask(fn)
	t.stay = true
	if !c.local.push(t) {
		t.release()
		return fmt.Errorf("carrier %d: submit: %w", c.id, ErrGroupClosed)
	}
	c.wake()
	return nil
}

// resume queues a parked task whose offloaded function finished.
func (c *Carrier) resume(t *Task) {
	t.readyAt = wait.Now()
	if c.local.push(t) {
		c.wake()
	}
}

// wake makes a sleeping carrier return from its poller's wait. The producer has
// already published its work (a sequentially consistent store); the
// carrier stores sleeping=1 before its last look at the queues. So either
// the carrier sees the work, or the producer sees sleeping=1 and writes
// the eventfd: no wake-up is lost, and none is written to a running carrier.
func (c *Carrier) wake() {
	if c.sleeping.Load() != 0 && c.sleeping.CompareAndSwap(1, 0) {
		c.wakeSent.Store(wait.Now())
		unix.EventfdSignal(c.efd)
	}
}

// WakeSent returns the wait.Now time just before a producer last woke the
// carrier out of Block (0: never). It makes the carrier a wait.WakeStamper,
// so that the adaptive strategy learns the block-and-wake cost B from the
// carrier's own wake-ups. Only the carrier's wait strategy may call it.
func (c *Carrier) WakeSent() int64 { return c.wakeSent.Load() }

// nudge sets the poke flag (seen by Ready, so spinning strategies return)
// and wakes the carrier if it sleeps.
func (c *Carrier) nudge() {
	c.poke.Store(1)
	c.wake()
}

// Ready reports whether the carrier has work: runnable tasks, queued
// submissions or resumptions, or a poke. It makes no system call.
//
// Ready, Poll, Block and Word make the carrier a wait.Target; only the
// carrier's own wait strategy, on the carrier's thread, may call them.
func (c *Carrier) Ready() bool { return c.hasWork() || c.poke.Load() != 0 }

// Poll handles ready I/O without blocking and reports the events handled.
func (c *Carrier) Poll() int { return c.pollIO(0) }

// Block sleeps in the poller (epoll_wait or io_uring_enter) until I/O, a wake-up or the deadline
// (monotonic ns; < 0: none) and reports the events handled.
func (c *Carrier) Block(deadline int64) int {
	c.sleeping.Store(1)
	if c.Ready() {
		c.sleeping.Store(0)
		return 0
	}
	n := c.pollIO(blockTimeout(deadline))
	c.sleeping.Store(0)
	return n
}

// Word returns a word that changes whenever a task is pushed to the
// carrier's inject or local queue (Submit, SubmitLocal, Go, a steal
// hint's target, an Offload finishing), from any goroutine, the carrier's
// own tasks included.
func (c *Carrier) Word() *uint32 { return &c.word }

var (
	_ wait.Target      = (*Carrier)(nil)
	_ wait.WakeStamper = (*Carrier)(nil)
)

// pollIO waits for I/O with a timeout in ns (-1: none, 0: poll) and
// makes the tasks waiting on ready fds runnable.
func (c *Carrier) pollIO(timeoutNs int64) int {
	var n int
	if c.park != nil && timeoutNs != 0 {
		n = c.parkIdle(timeoutNs)
	} else {
		n = c.poll.wait(timeoutNs)
	}
	add(&c.stats.ioCycles, 1)
	c.polled = true
	if n <= 0 {
		return 0
	}
	add(&c.stats.ioEvents, uint64(n))
	c.now = wait.Now() // the time the woken tasks became runnable
	handled := 0
	for i := range n {
		tok, e, op := c.poll.event(i)
		switch {
		case op != nil: // a read or write the poller did completed
			handled++
			op.pd.eng.completed(op)
		case tok == 0:
			c.poll.woken()
		default:
			if pd := c.fdt.lookup(tok); pd != nil {
				handled++
				pd.eng.ready(pd, e)
			}
		}
	}
	return handled
}

// parkIdle waits as a ParkIdle carrier does (park.go). A bound carrier
// unlocks its goroutine for the park, as for a task's run: a parked
// goroutine that is locked stops its thread, so every wake-up would cost a
// hand-off of the P between two threads (3 futex calls and 3 context
// switches per request at 10,000/s: 7-8 µs of CPU per request); unlocked, the
// thread that parked it is the one that finds it ready in the netpoller
// and runs it, as for any goroutine. Where it wakes on another thread,
// that thread becomes the carrier's (moveTo), as after a run.
//
// Meanwhile the thread, pinned to the carrier's CPU, runs whatever the
// scheduler gives it: that is ParkIdle's point (goroutines and the GC in
// the carrier's idle time), but not N+1's, which keeps all non-carrier
// work on its reserved CPU; with NPlusOne the carrier parks locked, and
// pays the hand-off.
func (c *Carrier) parkIdle(timeoutNs int64) int {
	if !c.ho.parkUnlocked {
		return c.park.wait(c.poll, timeoutNs)
	}
	runtime.UnlockOSThread()
	n := c.park.wait(c.poll, timeoutNs)
	runtime.LockOSThread()
	c.follow()
	return n
}

// wakeTask makes a parked task runnable: into the LIFO slot (I/O wake-ups:
// the data is hot in cache) or the FIFO.
func (c *Carrier) wakeTask(t *Task, lifo bool) {
	if t.state != taskParked {
		return
	}
	t.setState(taskRunnable)
	t.readyAt = c.now
	c.timers.remove(t)
	if lifo {
		if c.lifo != nil {
			c.fifo.push(c.lifo)
		}
		c.lifo = t
		return
	}
	c.fifo.push(t)
}

// hasWork reports runnable or queued tasks (Ready without the poke).
func (c *Carrier) hasWork() bool {
	return c.lifo != nil || c.fifo.n > 0 || c.inject.len() > 0 || c.local.len() > 0
}

func (c *Carrier) queued() int {
	n := c.fifo.n + c.inject.len() + c.local.len()
	if c.lifo != nil {
		n++
	}
	return n
}

// loop is the carrier's event loop; it returns when the group closes.
func (c *Carrier) loop() {
	for {
		// The poke is cleared before stopping is read: Close stores
		// stopping, then the poke, so a poke this clears was set after
		// stopping, which the load below then sees. (Read the other way
		// round, a poke cleared after the check was lost, and a spinning
		// strategy, which returns only on Ready, spun on for ever.)
		if c.poke.Load() != 0 { // a load is cheaper than a store on every turn
			c.poke.Store(0)
		}
		if c.stopping.Load() {
			break
		}
		if n := c.g.closeReqs.Load(); n != c.closeSeen { // CloseAsync asked: read after the poke, as stopping
			c.closeSeen = n
			c.closeRequested()
		}
		now := wait.Now()
		c.now = now
		if now >= c.pool.trimAt {
			c.trimCoros(now)
		}
		c.fireTimers(now)
		if len(c.watches) > 0 && now >= c.sweepAt {
			c.sweepWatches(now, false)
		}
		if c.hasWork() {
			if !c.polled && c.pollDue(now) { // the strategy may just have polled
				c.polledAt = now
				c.pollIO(0)
			}
			c.polled = false
			c.drain(now)
			continue
		}
		if c.g.opts.Steal && c.steal() {
			continue
		}
		// About to wait: the watches' contexts get context.AfterFunc, so
		// that a cancellation wakes the carrier.
		if len(c.watches) > 0 && c.sweepWatches(now, true) {
			continue
		}
		c.waiting.Store(1)
		r := c.strat.Wait(c, c.wakeAt())
		c.waiting.Store(0)
		if int(r.Kind) < wait.NumKinds {
			add(&c.stats.waits[r.Kind], 1)
		}
		add(&c.stats.spunNs, uint64(r.Spun))
		add(&c.stats.blockedNs, uint64(r.Blocked))
	}
}

// pollDue reports whether the loop polls I/O before its next drain pass:
// when the last pass finished its round (the tasks queued when the round
// began), and otherwise (a backlog: the pass ran out of budget mid-round)
// once Options.BacklogPollGap drain budgets have passed since the last
// poll. Timers are looked at before every pass.
func (c *Carrier) pollDue(now int64) bool {
	o := &c.g.opts
	return c.quota == [roundQueues]int{} || now-c.polledAt >= int64(o.BacklogPollGap)*int64(o.DrainBudget)
}

// wallRebase is how long the carrier's wall clock (clock) follows the
// monotonic clock before it reads the system's clock again.
const wallRebase = int64(time.Second)

// clock returns c.now as a time.Time (Task.Time), reading the wall clock
// only when its last reading is wallRebase old; the caller holds the
// carrier's state (its thread, or a task that entered).
func (c *Carrier) clock() time.Time {
	if c.wallAt == 0 || c.now-c.wallAt >= wallRebase {
		c.wall = time.Now()
		c.wallAt, _ = wait.Mono(c.wall)
	}
	return c.wall.Add(time.Duration(c.now - c.wallAt))
}

// wakeAt is the deadline of an idle wait: the next timer, or the next trim
// while coroutines beyond minIdleCoros are idle (-1: none).
func (c *Carrier) wakeAt() int64 {
	at := c.timers.peek()
	if c.pool.surplusIdle() && (at < 0 || c.pool.trimAt < at) {
		at = c.pool.trimAt
	}
	return at
}

// trimCoros stops the coroutines beyond minIdleCoros that stayed idle
// since the last trim (their goroutine stacks, grown by the tasks they ran,
// go back to the runtime) and schedules the next trim.
func (c *Carrier) trimCoros(now int64) {
	if gone := c.pool.trim(now); len(gone) > 0 {
		for _, co := range gone {
			c.stopCoro(co)
		}
		add(&c.stats.corosTrimmed, uint64(len(gone)))
	}
}

func (c *Carrier) fireTimers(now int64) {
	for t := c.timers.popDue(now); t != nil; t = c.timers.popDue(now) {
		c.wakeTask(t, false)
	}
}

// drain runs runnable tasks until none is left or the budget is spent,
// always at least one. It works in rounds: each round runs what was queued
// when it began (the local FIFO, the local queue and the inject queue, in
// that order), so a task that yields or is woken during a round waits
// behind everything that was queued before it. A drain whose budget runs
// out mid-round leaves the rest of the round (c.quota) to the next drain,
// so no queue starves another however much work the others hold: a new
// submission waits for at most one round. The LIFO slot (the task just
// woken by I/O) runs first in every pass, and the round then gets at least
// one task even when the LIFO task spent the budget.
func (c *Carrier) drain(start int64) {
	c.stats.queueDepth.record(uint64(c.queued()))
	budget := int64(c.g.opts.DrainBudget)
	n := uint64(0)
	spent := func() bool { // c.run read the clock (c.now) when its task stopped
		if t := c.yielded; t != nil {
			t.readyAt = c.now
			c.yielded = nil
		}
		return c.stopping.Load() || c.now-start >= budget
	}
	if c.g.opts.Float {
		c.floatRound()
	}
rounds:
	for {
		if c.quota == [roundQueues]int{} { // the last round is done: begin one with what is queued now
			c.quota = [roundQueues]int{roundFIFO: c.fifo.n, roundLocal: c.local.len(), roundInject: c.inject.len()}
			if c.lifo == nil && c.quota == [roundQueues]int{} {
				break
			}
		}
		if t := c.lifo; t != nil {
			c.lifo = nil
			c.run(t)
			n++
			// The LIFO slot alone does not end a pass that has round work:
			// a task woken by I/O at every poll that overran the budget
			// each time would otherwise keep the round from moving.
			if spent() && c.quota == [roundQueues]int{} {
				break
			}
		}
		for q := range roundQueue(roundQueues) {
			for c.quota[q] > 0 {
				c.quota[q]--
				t := c.popFrom(q)
				if t == nil { // thieves took the rest of the inject queue, or a thief the FIFO's
					c.quota[q] = 0
					break
				}
				c.run(t)
				n++
				if spent() {
					break rounds
				}
			}
		}
	}
	add(&c.stats.drains, 1)
	add(&c.stats.tasksRun, n)
}

// roundQueue names the queues a drain round takes tasks from, in the
// round's order.
type roundQueue int

const (
	roundFIFO   roundQueue = iota // the local FIFO: woken and yielded tasks
	roundLocal                    // the local queue: Offload resumptions, SubmitLocal
	roundInject                   // the inject queue: submissions from anywhere (stealable)
	roundQueues                   // how many
)

// popFrom pops a task from queue q.
func (c *Carrier) popFrom(q roundQueue) *Task {
	switch q {
	case roundFIFO:
		return c.fifo.pop()
	case roundLocal:
		return c.local.pop()
	}
	return c.inject.pop()
}

// run resumes t (starting it on a pooled coroutine if it is new) until it
// parks or finishes.
func (c *Carrier) run(t *Task) {
	if t.handed { // handed over by a sibling (Float)
		t.handed, t.movedAt = false, c.now
		add(&c.stats.stealsIn, 1)
		if t.co != nil {
			c.rehome(t)
			add(&c.stats.migrationsIn, 1)
		}
	}
	if t.co == nil {
		co := c.pool.take()
		if co == nil {
			co = c.newCoro()
		}
		co.task = t
		co.phase.Store(phaseUser)
		t.co = co
		t.home = c
		gauge(&c.stats.tasksLive, 1)
	}
	back := t.state == taskRejoining
	if back {
		c.rejoined(t)
	}
	c.stats.submitToRun.record(uint64(max(0, c.now-t.readyAt)))
	t.setState(taskRunning)
	c.cur.Store(t)
	start := c.now
	// The park watch (handoff_park.go) watches the next runs of a task
	// whose run waited the Go way (its goroutine left running: gtrackseq)
	// or came back from a hand-off.
	var g uintptr
	var seq uint8
	young := false
	if c.ho.watch {
		if g = t.co.g.Load(); g != 0 {
			seq = gtrackseq(g)
		}
		if young = t.runs < youngRuns; young && t.parkArm == 0 && youngWatch && bits.OnesCount8(c.ho.youngWaits) >= parkArmWaits {
			t.parkArm = 1 // this run: the carrier's young tasks have been waiting
		}
	}
	var done bool
	switch {
	case c.ho.on:
		done = c.runOwned(t, start)
	case c.ho.unlocked: // a parking carrier's coroutines are unlocked (parkIdle)
		c.runCo.Store(t.co)
		runtime.UnlockOSThread()
		done, _ = t.co.next()
		runtime.LockOSThread()
		c.follow()
	default:
		c.runCo.Store(t.co)
		done, _ = t.co.next()
	}
	c.cur.Store(nil)
	c.now = wait.Now()
	if c.ho.watch {
		waited := g != 0 && gtrackseq(g) != seq
		t.waited <<= 1
		if waited {
			t.waited |= 1
		}
		if young {
			t.runs++
			c.ho.youngWaits <<= 1
			if waited || back {
				c.ho.youngWaits |= 1
			}
		}
		switch {
		case back, waited && bits.OnesCount8(t.waited) >= parkArmWaits,
			c.g.spareCPU && c.now-start >= int64(parkArmAfter):
			t.parkArm = parkArmRuns
		case t.parkArm > 0:
			t.parkArm--
		}
	}
	if pin := c.pinNs; pin > 0 && c.now-start > pin { // the watchdog: it held the carrier too long
		add(&c.stats.pinned, 1)
		if !done {
			t.pinned++
		}
	}
	switch {
	case done:
		c.finish(t)
	case t.state == taskRejoining: // marked detached by a run the monitor did not take: ours still
		t.setState(taskRunnable)
		c.fifo.push(t)
		c.yielded = t
	case t.state == taskRunnable: // it yielded
		c.yielded = t
	}
}

func (c *Carrier) finish(t *Task) {
	co := t.co
	co.task = nil
	if co.note.Load() != nil {
		co.note.Store(nil)
	}
	if !c.pool.put(co) {
		c.stopCoro(co)
	}
	gauge(&c.stats.tasksLive, -1)
	c.timers.remove(t)
	t.release()
}

// start runs on the carrier's own goroutine: it binds the thread (unless
// the carrier floats), starts the poller (an io_uring ring accepts
// submissions from this thread from then on), reports the outcome on startErr and runs the loop.
func (c *Carrier) start() {
	defer c.ownerExit() // this goroutine may lose the carrier to a hand-off
	var err error
	if !c.g.opts.Float {
		err = c.bindThread()
		c.ho.m = getm()
	}
	if err == nil {
		err = c.poll.start()
	}
	if err != nil {
		c.startErr <- fmt.Errorf("carrier %d: %w", c.id, err)
		c.shutdown()
		close(c.done)
		return
	}
	c.startErr <- nil
	c.loop()
	c.shutdown()
	close(c.done)
}

// bindThread locks the carrier's goroutine to its thread, names the thread
// and pins it. The thread is never unlocked: when the goroutine ends the
// runtime discards the thread, with the name and affinity given to it here.
func (c *Carrier) bindThread() error {
	runtime.LockOSThread()
	c.tid.Store(int64(unix.Gettid()))
	err := unix.SetThreadName(fmt.Sprintf("carrier-%d", c.id))
	if err == nil && len(c.affinity) > 0 {
		err = cpu.Pin(c.affinity)
	}
	c.takeThread()
	c.readSlice()
	return err
}

// takeThread gives the calling thread, the carrier's now (c.tid), the
// carrier's scheduling in one sched_setattr: Options.Slice where set, and
// SCHED_NORMAL where the group batches the others (batch.go).
// giveThread undoes it for a thread the carrier left.
func (c *Carrier) takeThread() {
	f := unix.Fair{SetSlice: c.g.opts.Slice > 0, Slice: uint64(max(c.g.opts.Slice, 0))}
	if c.g.batches() {
		batchOwn(int(c.tid.Load()))
		f.SetBatch = true // off: SCHED_NORMAL
	}
	_, _ = unix.SetFair(0, f) // best effort: the carrier runs on as the kernel left it
}

// giveThread gives thread tid, the carrier's no longer, the scheduling of
// the process's other threads in one sched_setattr: the kernel's default
// slice where Options.Slice gave it another, and SCHED_BATCH where the
// group batches them (best effort: it only runs Go code less eagerly, or
// preempts a carrier, if it fails).
func (c *Carrier) giveThread(tid int) {
	f := unix.Fair{SetSlice: c.g.opts.Slice > 0}
	if c.g.batches() {
		f.SetBatch, f.Batch = true, batchDrop(tid)
	}
	_, _ = unix.SetFair(tid, f)
}

// readSlice records the slice the kernel reports for the calling thread,
// the carrier's (Telemetry.SliceNs; 0 where it reports none). Threads a
// carrier moves to later get the same slice (moveTo).
func (c *Carrier) readSlice() {
	ns, err := unix.Slice(0)
	if err != nil {
		ns = 0
	}
	c.stats.sliceNs.Store(ns)
}

// shutdown stops every coroutine (parked tasks unwind with errStopped and
// close their conns), drops queued tasks and closes every registered fd.
func (c *Carrier) shutdown() {
	c.stopParkWatch()
	for _, t := range c.inject.close() {
		t.release()
	}
	for _, t := range c.local.close() {
		if t.state == taskRejoining {
			c.rejoined(t) // back: its coroutine is stopped below
		}
		switch {
		case t.co == nil: // a SubmitLocal task that never started
			t.release()
		case t.handed: // a started task handed over by a sibling and not run yet
			c.rehome(t) // so that its coroutine is stopped and its conns closed below
		} // else a resumption: its coroutine is stopped below
	}
	c.lifo = nil
	for t := c.fifo.pop(); t != nil; t = c.fifo.pop() {
		if t.co == nil {
			t.release()
		}
	}
	for co := range c.pool.all {
		t := co.task
		if _, away := c.ho.detachedAt[co]; away {
			continue // running elsewhere: stopped by its old owner when it rejoins (lost)
		}
		c.stopCoro(co)
		if t != nil {
			gauge(&c.stats.tasksLive, -1)
			c.timers.remove(t)
		}
	}
	clear(c.pool.all)
	c.pool.idle = nil
	for _, pd := range c.fdt.fds {
		if pd != nil {
			pd.shut()
		}
	}
	c.timers.reset()
	c.poll.quiesce()
	// The poller and eventfd are closed by Group.Close once this carrier is
	// done, so that no other goroutine can signal a reused fd number.
}
