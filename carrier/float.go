package carrier

import "sync/atomic"

// Floating mode (Options.Float). Carriers run on goroutines that are not
// locked to threads, so the Go runtime lets any carrier resume a coroutine
// that another created. Work stealing then also moves started tasks:
//
//   - An idle thief that finds no unstarted work asks the sibling with the
//     longer backlog (runnable tasks waiting in its FIFO, counted once the
//     oldest has waited two drain budgets) to hand some over; and a carrier
//     whose backlog builds up offers work to one of two random siblings
//     that is idle (so a thief asleep since before the backlog grew still
//     gets some).
//   - The asked carrier answers at the start of its next drain, on
//     its own goroutine: it takes half of its FIFO's movable tasks off its
//     books (their coroutines and the conns they own: the fds leave its
//     poller and fd table) and queues them on the thief's local queue.
//   - The thief rehomes each one when it runs it: the conns are registered
//     on its poller (edge-triggered, so readiness at the moment of adding is
//     reported), and the task's home, timers and telemetry are the thief's
//     from then on.
//
// Every structure a carrier owns is still touched by its own goroutine only:
// the hand-over is a push onto an MPSC queue. The cost is that the asked
// carrier must be running to answer: a carrier that the kernel has
// descheduled keeps its runnable tasks until it runs again, as in pinned
// mode (only its unstarted work can be stolen meanwhile).
//
// A task stays where it is when it was started by SubmitLocal (an accept
// task, for one: its listening socket is registered on that carrier) or
// when another task is parked on one of its conns (that task, and the
// wake-up, belong to the carrier the conn is registered on).

// minBacklog is the least number of runnable tasks waiting in a carrier's
// FIFO for an idle sibling to ask for some: with one, the hand-over (two
// poller calls per conn, a wake-up) would only move the wait around.
const minBacklog = 2

// A carrier hands work over only when the oldest runnable task in its FIFO
// has waited floatDelayPasses drain budgets: a backlog that the next pass
// clears is cheaper to run than to move. And a carrier hands over at most
// once per Options.FloatSettle, and a task that moved stays that long before it may
// move again, so that two carriers that take turns at being idle do not
// bounce tasks (and their conns) between them.
// Without these, two floating carriers sharing CPUs with the load
// generator in spindle bench handed over 21,000 tasks a second and served
// 12% fewer requests than pinned ones; with a 1ms settle, 10,000 and 4%
// fewer; with 10ms, 2,700 and 4% fewer at a better p99, while a task
// placed badly still moves at once (docs/PERFORMANCE.md, "Floating mode").
const floatDelayPasses = 2

// floatState is a floating carrier's side of the hand-overs (Carrier.fl):
// an idle sibling asks it to hand over started tasks (asked), judging by
// how many runnable tasks wait in its FIFO (backlog, published at each
// drain); lastGave is its clock reading (c.now) at its last hand-over.
type floatState struct {
	asked    atomic.Pointer[Carrier]
	backlog  atomic.Int32
	lastGave int64
}

// ask is called by an idle thief that found no unstarted work at a or b:
// it asks the one with the longer backlog to hand over started tasks. The
// answer comes as tasks on c's local queue (and a wake-up), or never.
func (c *Carrier) ask(a, b *Carrier) {
	v := a
	if b.fl.backlog.Load() > a.fl.backlog.Load() {
		v = b
	}
	if v.fl.backlog.Load() >= minBacklog {
		v.fl.asked.CompareAndSwap(nil, c)
	}
}

// floatRound runs at the start of every drain of a floating carrier: it
// answers a thief's request, or offers work to an idle sibling, and
// publishes its backlog.
func (c *Carrier) floatRound() {
	th := c.fl.asked.Load()
	if th != nil {
		c.fl.asked.Store(nil)
	}
	behind := c.behind()
	if behind >= minBacklog && (c.fl.lastGave == 0 || c.now-c.fl.lastGave >= int64(c.g.opts.FloatSettle)) {
		if th == nil {
			th = c.idleSibling()
		}
		if th != nil {
			c.fl.lastGave = c.now
			c.donate(th)
			c.quota[roundFIFO] = min(c.quota[roundFIFO], c.fifo.n) // the round's FIFO share went with the tasks
			behind = c.behind()
		}
	}
	c.fl.backlog.Store(int32(behind))
}

// behind returns the number of runnable tasks in c's FIFO when the oldest
// of them has waited long enough to be worth moving, else 0.
func (c *Carrier) behind() int {
	h := c.fifo.peek()
	if h == nil || c.now-h.readyAt < floatDelayPasses*int64(c.g.opts.DrainBudget) {
		return 0
	}
	return c.fifo.n
}

// idleSibling returns one of two random siblings in scope that is idle in
// its wait strategy, or nil. A thief asks when it goes idle; this covers a
// backlog that builds up after its siblings went to sleep.
func (c *Carrier) idleSibling() *Carrier {
	k := len(c.siblings)
	if k == 0 {
		return nil
	}
	for range 2 {
		if s := c.siblings[c.rand(k)]; s.waiting.Load() != 0 {
			return s
		}
	}
	return nil
}

// donate moves half of the movable tasks waiting in c's FIFO, oldest
// first, to th; the others keep their order behind them.
func (c *Carrier) donate(th *Carrier) {
	want := c.fifo.n / 2
	moved := 0
	for k := c.fifo.n; k > 0; k-- {
		t := c.fifo.pop()
		if moved == want || !c.movable(t) {
			c.fifo.push(t)
			continue
		}
		c.unhome(t)
		t.handed = true
		if !th.local.push(t) { // th has stopped: the group is closing
			t.handed = false
			c.rehome(t) // back on c's books
			c.fifo.push(t)
			continue
		}
		moved++
	}
	if moved > 0 {
		c.stats.stealsOut.Add(uint64(moved))
		th.wake()
	}
}

// movable reports whether t, runnable in c's FIFO, may be handed over.
func (c *Carrier) movable(t *Task) bool {
	if t.stay || (t.movedAt != 0 && c.now-t.movedAt < int64(c.g.opts.FloatSettle)) {
		return false
	}
	for _, cn := range t.owned {
		if cn.pd.eng.busy(&cn.pd) { // the kernel has a read or write of it, or will (PollerURing)
			return false
		}
		if cn.pd.rl.otherThan(t) || cn.pd.wl.otherThan(t) { // other tasks read or write it, or wait to
			return false
		}
		if cn.pd.foreignUsed.Load() { // foreign callers use it: it stays where they find it
			return false
		}
		if w := cn.pd.rwait; w != nil && w != t {
			return false
		}
		if w := cn.pd.wwait; w != nil && w != t {
			return false
		}
	}
	return true
}

// unhome takes t off c's books: its coroutine and its conns (a runnable
// task holds no timer; the removal is a no-op kept for safety).
func (c *Carrier) unhome(t *Task) {
	c.timers.remove(t)
	if t.co != nil {
		delete(c.pool.all, t.co)
		gauge(&c.stats.tasksLive, -1)
	}
	for _, cn := range t.owned {
		if !cn.pd.gone() {
			c.poll.remove(cn.pd.fd, cn.pd.token(), false)
			c.forget(&cn.pd)
			cn.pd.setState(descMoving)
		}
	}
}

// rehome makes c the home of a started task that another carrier took
// off its books (unhome): its coroutine joins c's, its conns are
// registered on c's poller.
// A conn that cannot be registered is closed (its next operation says so).
// For a task never started there is nothing to rehome: run starts it on c.
func (c *Carrier) rehome(t *Task) {
	if t.co == nil {
		return
	}
	t.home = c
	c.pool.all[t.co] = struct{}{}
	gauge(&c.stats.tasksLive, 1)
	for _, cn := range t.owned {
		pd := &cn.pd
		if pd.closed() {
			continue
		}
		if err := c.register(pd); err != nil {
			pd.c = c
			pd.setState(descShut)
			pd.closeFD()
		}
	}
	for i := len(t.owned) - 1; i >= 0; i-- { // CloseAsync while they were on their way here
		if cn := t.owned[i]; cn.pd.closeReq.Load() && !cn.pd.closed() {
			cn.closeNow()
		}
	}
}
