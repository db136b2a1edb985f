package carrier

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
)

// Hand-off of a blocked carrier: Go's handoffp one level up.
//
// A task that blocks the Go way (a mutex, a channel, a WaitGroup,
// time.Sleep) blocks the goroutine of its coroutine, and with it the
// carrier goroutine waiting for the coroutine to yield. The carrier's
// other tasks, parked on its poller, would wait for ever if the blocked
// one waited for one of them (a singleflight follower for its leader). So
// a monitor goroutine per group watches each carrier's current run; one
// that has lasted past Options.HandoffThreshold is handed off: the task is
// marked detached, and the monitor's goroutine becomes the carrier's new
// owner (a fresh monitor watches on): it takes the carrier (its
// poller, queues, timers, conns and telemetry) and goes on with its loop on
// a thread pinned where the carrier was; the blocked thread is moved off
// that CPU. The detached task goes on where it is, and at its next carrier
// operation it rejoins: it yields to the goroutine that resumed it (the
// old owner), which queues it for the new owner and ends.
//
// The ownership protocol (docs/carrier.md, "Hand-off"):
//
//   - Owner. One goroutine at a time owns a carrier and alone touches its
//     state. An owner runs a task by storing the task (cur), the run's
//     start (runStart) and an odd run number (runSeq) and, after the task
//     yields, by moving runSeq on to the next even number with a
//     compare-and-swap: a swap that fails means the monitor took the run.
//   - Task phase. A task is in user code (phaseUser) or in carrier code
//     (phaseCarrier, from the start of a carrier operation to its end,
//     parked time included). Carrier code never blocks the Go way, so a
//     long run is in user code.
//   - Monitor. It takes a run only when two swaps succeed: the running
//     task's phase from user to detached (so the task touches no carrier
//     state from then on: its next carrier operation finds the mark), then
//     the run number from the odd number it read to the next (so the owner
//     learns it lost the carrier, and no later run is taken by mistake: run
//     numbers never repeat). If the second fails the run ended meanwhile
//     and the mark is taken back; a task that saw it in between yields to
//     its owner, which simply runs it again.
//   - Hand-off. The monitor then starts a fresh monitor and becomes the
//     new owner itself; everything the old owner and the task wrote
//     before is visible to it (the swaps order them). The old owner, once the detached task
//     yields to it, queues the task on the carrier's local queue (an MPSC
//     queue any goroutine may push to) and ends without touching anything
//     else.
//   - Rejoin. Every carrier operation starts with Task.enter: a swap of
//     the phase from user to carrier, or, when the task is detached, a
//     yield to its last resumer, which requeues it; the owner that resumes
//     it is then its carrier's, and the operation goes on.
//
// Coroutine switches must happen unlocked: the runtime checks the thread
// lock state at a switch when the coroutine was created on a locked thread
// or the switching goroutine is locked (runtime/coro.go), so an owner
// unlocks its thread around each run (6.5 ns a pair here) and creates its
// coroutines unlocked; any owner may then resume them. A run that blocked
// briefly may end on another thread (the scheduler resumes a woken
// goroutine where it can): the owner notices (getm, one load) and moves to
// that thread, re-pinning it.

// Task phases (Task.phase).
const (
	phaseUser     uint32 = iota // running its own code, or not started
	phaseCarrier                // inside a carrier operation (parked included)
	phaseDetached               // handed off while in user code: rejoins at its next carrier operation
	phaseStopped                // its rejoin found the carrier stopped: every carrier operation unwinds it
)

// errLost unwinds the goroutine of an owner that lost its carrier to a
// hand-off, once it has queued the detached task for the new owner.
var errLost = errors.New("carrier: handed off")

// handoffOn says whether c's runs may be handed off: a positive threshold
// and a working getm. An io_uring carrier that hands off gets a ring
// without SINGLE_ISSUER (setupRing), which would refuse a new owner's
// thread. The readiness-only io_uring poller does not hand off: its poll
// completions need task work, which without DEFER_TASKRUN made an echo
// round trip 5-13 times slower (BenchmarkHandoffCost), where the RECV/SEND
// poller's cost stayed within noise. A floating carrier hands off too: its
// goroutine is not locked, but it waits for the coroutine it resumed as a
// locked one does, and its siblings take over only runnable tasks, not the
// ones parked on its poller that a blocked task may wait for.
func (c *Carrier) handoffOn() bool {
	o := &c.g.opts
	return o.HandoffThreshold > 0 && o.Poller != PollerURingPoll && mOK()
}

// bound says whether c's owner is locked to its thread (the carrier does
// not float): it then unlocks around runs, follows a run to the thread it
// ended on, and pins a new owner's thread.
func (c *Carrier) bound() bool { return !c.g.opts.Float }

// enter begins a carrier operation of t: its phase becomes carrier, or, if
// the monitor detached t, t first rejoins its carrier. It reports whether
// this is the outermost operation (nested ones, a Write that yields, leave
// alone what the outer one set); pass it to leave.
func (t *Task) enter() bool {
	outer, ok := t.tryEnter()
	if !ok { // the task unwinds (its deferred Close of a conn, say): the carrier is gone
		panic(errStopped)
	}
	return outer
}

// tryEnter is enter reporting ok false, instead of panicking, when t was
// handed off and its carrier stopped meanwhile.
func (t *Task) tryEnter() (outer, ok bool) {
	c := t.home
	if c == nil {
		return false, true
	}
	if c.ho.on || c.ho.unlocked { // a parking carrier's task runs unlocked too
		t.refuseLocked()
	}
	if !c.ho.on {
		return false, true
	}
	return t.claim()
}

// claim makes the phase of t, whose carrier hands off, carrier: from user
// (outer), or by rejoining when the monitor detached t (outer); a nested
// operation finds it carrier already. ok is false when t was detached and
// its carrier stopped.
func (t *Task) claim() (outer, ok bool) {
	if t.co.phase.CompareAndSwap(phaseUser, phaseCarrier) {
		return true, true
	}
	switch t.co.phase.Load() {
	case phaseCarrier:
		return false, true
	case phaseStopped:
		return false, false
	}
	return true, t.rejoin()
}

// end is enter for a task whose function returned: a detached one rejoins,
// so that its carrier's owner finishes it. It reports false when the
// carrier stopped meanwhile (the coroutine then just ends).
func (t *Task) end() bool {
	if c := t.home; c == nil || !c.ho.on {
		return true
	}
	_, ok := t.claim()
	return ok
}

// enterIO is enter for a conn's I/O, which has an error to return: a task
// handed off whose carrier stopped meanwhile gets ErrCarrierStopped
// (net.ErrClosed) rather than the panic that unwinds it, so that code
// between its handler and the I/O (a web framework's recover middleware)
// sees a closed connection's error, as under net/http, and not a panic
// it takes for its own. Its other carrier operations, and the conn's
// Close, still unwind it.
func (t *Task) enterIO() (outer bool, err error) {
	outer, ok := t.tryEnter()
	if !ok {
		return false, ErrCarrierStopped
	}
	return outer, nil
}

// leave ends the carrier operation enter began (outer as enter reported).
func (t *Task) leave(outer bool) {
	if outer {
		t.co.phase.Store(phaseUser)
	}
}

// rejoin yields a detached task to the goroutine that resumed it last, an
// owner that has lost the carrier: it queues t for the new owner, whose run
// of t returns here. It reports false when the carrier stopped instead
// (its caller unwinds t with errStopped); the task's phase is then
// stopped, so that no carrier operation of its unwinding touches the
// stopped carrier (which, shut down, no longer orders them).
func (t *Task) rejoin() bool {
	t.setState(taskRejoining)
	ok := t.co.yield(false)
	if !ok {
		t.co.phase.Store(phaseStopped)
		return false
	}
	t.co.phase.Store(phaseCarrier) // running: the owner's run set it
	return true
}

// runOwned resumes t as c's owner when c hands off (see the protocol
// above), until t parks, yields or ends. It reports what next reported; an
// owner that lost the carrier does not return (errLost).
func (c *Carrier) runOwned(t *Task, start int64) (done bool) {
	c.runCo.Store(t.co)
	c.ho.runStart.Store(start)
	seq := c.ho.runSeq.Add(1) // odd: running
	if !c.bound() {
		done, _ = t.co.next()
		if !c.ho.runSeq.CompareAndSwap(seq, seq+1) {
			c.lost(t)
		}
		return done
	}
	runtime.UnlockOSThread()
	if t.parkArm > 0 {
		add(&c.stats.parkWatched, 1)
		c.armPark()
	}
	done, _ = t.co.next()
	if !c.ho.runSeq.CompareAndSwap(seq, seq+1) {
		c.lost(t)
	}
	runtime.LockOSThread()
	c.follow()
	return done
}

// lost is the end of an owner whose run the monitor took: t, detached, has
// yielded to rejoin; it is queued for the new owner, and the goroutine
// unwinds (errLost, recovered by the owner's goroutine). If the carrier
// has stopped, t's coroutine is stopped here instead, once the last owner
// is done with the carrier.
func (c *Carrier) lost(t *Task) {
	t.readyAt = wait.Now()
	if !c.local.push(t) {
		<-c.done
		t.co.stop()
		panic(errLost)
	}
	c.wake()
	panic(errLost)
}

// follow makes the thread the owner's goroutine is on the carrier's (moveTo)
// where it is not the one the carrier was on: after a run or an idle park
// made unlocked (handoffState.unlocked), which the scheduler may have
// resumed on another thread.
func (c *Carrier) follow() {
	if m := getm(); m != c.ho.m {
		c.moveTo(m)
	}
}

// moveTo makes the thread a run ended on (its M m) the carrier's: a task
// that blocked the Go way briefly was resumed by the scheduler on another
// thread, and yielded to the owner there. The thread is named and pinned
// as the carrier's; the one it left is moved off the carrier's CPU.
func (c *Carrier) moveTo(m uintptr) {
	old := int(c.tid.Load())
	c.ho.m = m
	c.tid.Store(int64(unix.Gettid()))
	_ = unix.SetThreadName(fmt.Sprintf("carrier-%d", c.id)) // cosmetic
	_ = unix.SetThreadNameOf(old, processName())            // the old thread is the runtime's again
	if len(c.affinity) > 0 {
		_ = cpu.Pin(c.affinity) // best effort: the carrier runs on, unpinned, if it fails
		_ = cpu.PinThread(old, c.g.offCarrier())
	}
	c.takeThread()
	c.giveThread(old)
	add(&c.stats.threadMoves, 1)
}

// processName is the name of the process's main thread, which the
// runtime's other threads inherit: a thread that no longer serves a
// carrier takes it back.
var processName = sync.OnceValue(func() string {
	b, _ := os.ReadFile("/proc/self/comm")
	return strings.TrimSpace(string(b))
})

// offCarrier is where a thread that leaves a carrier goes: with N+1 the
// CPUs reserved for everything that is not a carrier, as moveOthers moves
// the process's other threads; else the CPUs the process had at New, which
// unpins it (it joins the runtime's pool of threads; narrowing it further
// would narrow every goroutine it runs later, cpu.Allowed included).
func (g *Group) offCarrier() cpu.Set {
	if len(g.reserved) > 0 {
		return g.reserved
	}
	return g.allowed
}

// monitor is the group's hand-off watch: it looks at each carrier's
// current run when it could have lasted the threshold, and hands off the
// carrier of one that has. It ends when stop is closed. report, if not
// nil, is a hand-off to report first (see below).
//
// It sleeps until the next moment a look is due: a run that began at s is
// looked at at s + threshold, so a carrier between runs needs none for a
// threshold (a run starting later crosses it later still), and a run past
// it that is not handed off yet (it computes) is looked at again every
// monitorRelook. A look is at most monitorMinSleep early for the next, so
// the monitor wakes about once a threshold when runs are short, and sees a
// blocked run within microseconds of its threshold. It sleeps on a
// timerfd read through Go's poller (unix.Timer), not on a runtime timer:
// the runtime waits for timers in epoll, whose timeout is in
// milliseconds, so a 500 µs Ticker fired every 1.1 ms here, and a run was
// seen up to a millisecond late (1.5 ms from block to the carrier serving
// again at the median, against 1.2 ms now; BenchmarkHandoffLatency). Nor
// in a sleeping system call (clock_nanosleep), which kept its P until
// sysmon took it back and so kept sysmon at its 20 µs period: seven times
// the context switches, and an echo round trip a fifth dearer on this
// 2-CPU machine (BenchmarkHandoffCost).
//
// At a hand-off the monitor's goroutine becomes the carrier's new owner
// at once, and a fresh monitor watches on (and reports the hand-off, off
// the carrier's path): no goroutine to schedule between the detection and
// the carrier serving again.
func (g *Group) monitor(stop <-chan struct{}, report func()) {
	if report != nil {
		report()
	}
	threshold := int64(g.opts.HandoffThreshold)
	a := &g.alert
	delay := int64(0)
	for {
		select {
		case <-stop:
			g.surge.end()
			g.surge.stopSysmonTimer()
			close(g.monitorDone)
			return
		default:
		}
		if delay > 0 {
			if err := g.monitorSleep(delay); err != nil {
				time.Sleep(time.Duration(delay)) // not expected: a coarser watch rather than none
			}
		}
		now := wait.Now()
		g.surge.look(now)
		lim := a.limit(now, threshold, g.handing)
		relook, minSleep := monitorPeriods(lim)
		next := now + lim
		for _, c := range g.carriers {
			if !c.ho.on {
				continue
			}
			due, co, start, waiting := c.check(now, lim, threshold, relook)
			if co != nil {
				if waiting {
					a.count++
				}
				held := time.Duration(now - start)
				go g.monitor(stop, func() { // the next monitor, off the hand-off's path
					if !waiting {
						g.surge.start(g, c, now)
					}
					g.reportHandoff(c, co, held)
				})
				c.own(co, start, now)
				return
			}
			next = min(next, due)
		}
		delay = max(next-now, minSleep)
		g.surge.boundSysmon(g)
	}
}

// alertState is the monitor's choice of threshold for runs that wait the
// Go way (Group.alert; the one monitor alive uses it). A hand-off of a
// wait spares the carrier's other work what is left of the wait past the
// threshold, but a shorter threshold makes the monitor look more often,
// and on a small machine each look costs (its goroutine's wake-up, and the
// runtime's search for work after it): at a fifth of the default, 200 µs,
// a carrier serving /fruits on one CPU ran at half its rate, with a
// handful of hand-offs. So the monitor shortens it only while waits are
// handed off often enough to be worth it: when, over the last
// alertWindow, hand-offs of waits at alertDivisor's shorter threshold
// would have spared the carriers at least alertShare of their time. A 5%
// mix of 20 ms sleeps then ran 35-60% faster (docs/PERFORMANCE.md).
type alertState struct {
	from  int64 // start of the current window (wait.Now)
	count int   // hand-offs of waits in it
	on    bool  // the short threshold applies (decided at the last window's end)
}

const (
	alertWindow  = 100 * time.Millisecond
	alertDivisor = 5
	alertShare   = 0.05
)

// limit is the threshold of runs that wait the Go way at now: threshold,
// or a fifth of it while on. At each window's end the window's count
// decides on for the next: count hand-offs sparing threshold-short each
// against alertShare of the window on carriers carriers.
func (a *alertState) limit(now, threshold int64, carriers int) int64 {
	short := threshold / alertDivisor
	if now-a.from >= int64(alertWindow) {
		spared := float64(a.count) * float64(threshold-short)
		a.on = spared >= alertShare*float64(now-a.from)*float64(carriers)
		a.from, a.count = now, 0
	}
	if a.on {
		return short
	}
	return threshold
}

// surgeState is the monitor's spare P. Carriers that park idle keep
// GOMAXPROCS at their number (raiseProcs), so that the GC sizes its work
// for the CPUs they have and does it in their idle time. But a run that
// computes holds its carrier's P, and the monitor, which needs a P to look,
// sees it only once the runtime preempts it (10 ms), or when it ends; and a
// run handed off because it computes goes on as a goroutine that competes
// with the carrier for its P. On one CPU, a fast endpoint beside 50 ms
// computations waited behind each (p99 47 ms, against 12 ms with the spare
// P of a blocking carrier), and beside computations that took the whole
// CPU for 1.2-2 s. So where no P is spare, GOMAXPROCS gets one more when
// the monitor hands off a computing run (late: once sysmon preempted it,
// which boundSysmon keeps possible), until it has not for surgeHold: the monitor and the carrier
// then have a P each and the kernel shares the CPU between their threads,
// as for a blocking carrier. The one monitor alive uses it.
type surgeState struct {
	on   bool
	prev int   // GOMAXPROCS before the surge
	seen int64 // wait.Now of the last sign of a run that computes
	// sysmon is the Go timer boundSysmon keeps pending; nil until its
	// first call, and where carriers do not park.
	sysmon *time.Timer
}

// sysmonBound is how far ahead boundSysmon keeps a Go timer pending.
const sysmonBound = 5 * time.Millisecond

// boundSysmon keeps a Go timer pending at most sysmonBound ahead while
// carriers park, so that Go's sysmon sleeps no longer than that. Sysmon
// is what preempts a run past 10 ms, and the only way the monitor gets a
// P while a parking carrier computes on the only one (before the surge).
// But while every P is idle sysmon sleeps deeply, until the next Go timer
// or a system call made through the runtime (entersyscall): a carrier's
// system calls are raw, and the monitor's timerfd is no Go timer, so a
// parked carrier that woke and computed went unpreempted, and unseen, to
// the end of its run, whatever its length (two 50 ms computations in
// three, docs/PERFORMANCE.md, "Fifteenth session"). The monitor resets the
// timer at every look (a timer moved later wakes no thread); it fires, as
// a no-op, only when the monitor was kept from a look that long. Waking
// sysmon at each wake-up of a parked carrier instead (one system call
// through the runtime) cost 9% more CPU per request at 10,000/s.
func (s *surgeState) boundSysmon(g *Group) {
	switch {
	case !g.opts.ParkIdle || g.opts.NPlusOne:
	case s.sysmon == nil:
		s.sysmon = time.AfterFunc(sysmonBound, func() {})
	default:
		s.sysmon.Reset(sysmonBound)
	}
}

// stopSysmonTimer stops boundSysmon's timer, at the monitor's end.
func (s *surgeState) stopSysmonTimer() {
	if s.sysmon != nil {
		s.sysmon.Stop()
	}
}

// surgeHold is how long the spare P outlives the last hand-off of a
// computing run: each change of GOMAXPROCS stops the world. The monitor's
// own lateness is no sign: at saturation a busy carrier leaves no thread
// to poll for its timer, so it wakes 10 ms late all the time, and a surge
// from that (with the monitor then waking every 1 ms on a thread of its
// own, on the carrier's one CPU) cut nethttp-carrier's max from 24.9K to
// 15K req/s.
const surgeHold = time.Second

// start adds the spare P, at a sign at now that a run of c computes, where
// no P is spare (carriers that park, with GOMAXPROCS at their number).
func (s *surgeState) start(g *Group, c *Carrier, now int64) {
	s.seen = now
	if s.on || !g.opts.ParkIdle {
		return
	}
	if cur := runtime.GOMAXPROCS(0); cur <= len(g.carriers) {
		s.on, s.prev = true, cur
		runtime.GOMAXPROCS(cur + 1)
		add(&c.stats.surges, 1)
	}
}

// look ends the surge surgeHold after the last sign of a run that
// computes. A detached run that computes longer is no sign by itself: the
// park watch's tasks, detached while they wait, also run for a moment
// before they rejoin, and would keep the P for good. A detached
// computation that outlives the surge then competes with the carrier for
// the only P as one goroutine among many, as before the surge; the next
// computing run handed off starts a new one.
func (s *surgeState) look(now int64) {
	if s.on && now-s.seen >= int64(surgeHold) {
		s.end()
	}
}

// end gives the spare P back, unless someone changed GOMAXPROCS since.
func (s *surgeState) end() {
	if s.on && runtime.GOMAXPROCS(0) == s.prev+1 {
		runtime.GOMAXPROCS(s.prev)
	}
	s.on = false
}

// monitorPeriods are, for a threshold, how often the monitor looks again
// at a run past the threshold that it did not hand off (a quarter of it),
// and its shortest sleep (an eighth): a run is seen at most that late. Not
// under 20 µs, sysmon's shortest.
func monitorPeriods(threshold int64) (relook, minSleep int64) {
	floor := int64(20 * time.Microsecond)
	return max(threshold/4, floor), max(threshold/8, floor)
}

// check takes c's current run when it began more than lim ns before now
// and waits the Go way, or more than computeFactor thresholds before now
// whatever it does, and its task is in user code (the monitor side of the
// protocol): it returns the run's coroutine and start, whether it waited,
// and the caller becomes the carrier's new owner (own). Otherwise it
// returns when c next needs a look: lim after its run began, or after now
// when it is between runs; relook after now for a run past lim.
func (c *Carrier) check(now, lim, threshold, relook int64) (due int64, taken *coro, start int64, waiting bool) {
	seq := c.ho.runSeq.Load()
	if seq&1 == 0 {
		return now + lim, nil, 0, false // between runs: the next one crosses later
	}
	start = c.ho.runStart.Load()
	if now-start < lim {
		return start + lim, nil, 0, false
	}
	due = now + relook
	co := c.runCo.Load()
	if co == nil {
		return due, nil, 0, false
	}
	waiting = !statusOK() || blockedGoWay(co.g.Load())
	if now-start < computeFactor*threshold && !waiting {
		return due, nil, 0, false // it computes, or was preempted: give it Go's time slice first
	}
	switch c.takeRun(seq, co) {
	case takeBusy:
		return due, nil, 0, false // in carrier code (about to park or yield), or already gone
	case takeEnded:
		return now, nil, 0, false // a new run may have begun: look again soon
	}
	add(&c.stats.handoffs, 1)
	if c.bound() {
		c.leaveThread()
	}
	return 0, co, start, waiting
}

// Outcomes of takeRun.
const (
	takeOK    = iota // the run is the caller's: it becomes the carrier's owner
	takeBusy         // the task is in carrier code (about to park or yield), or already detached
	takeEnded        // the run ended meanwhile
)

// takeRun is the taking side of the protocol, the monitor's and the park
// watch's: the run numbered seq, on co, is detached when both swaps
// succeed, and co is listed as away for its carrier operations to find.
func (c *Carrier) takeRun(seq uint64, co *coro) int {
	if !co.phase.CompareAndSwap(phaseUser, phaseDetached) {
		return takeBusy
	}
	if !c.ho.runSeq.CompareAndSwap(seq, seq+1) {
		co.phase.CompareAndSwap(phaseDetached, phaseUser) // not this one's to take
		return takeEnded
	}
	c.ho.awayMu.Lock()
	c.ho.away = append(c.ho.away, co)
	c.ho.awayMu.Unlock()
	return takeOK
}

// leaveThread moves the thread of a bound carrier's old owner, which a
// taken run holds, off the carrier: off its CPU and out of its name
// (carrier-N is the new owner's: perf, top and the report's per-thread
// figures attribute by name; cosmetic).
func (c *Carrier) leaveThread() {
	old := int(c.tid.Load())
	if len(c.affinity) > 0 {
		_ = cpu.PinThread(old, c.g.offCarrier()) // the blocked thread leaves the carrier's CPU
	}
	c.giveThread(old)
	_ = unix.SetThreadNameOf(old, fmt.Sprintf("handed-off-%d", c.id))
}

// own makes the calling goroutine (the monitor's) c's new owner after a
// hand-off (at wait.Now at) of the run on co that began at start: it binds
// its thread as the carrier's and runs the loop.
func (c *Carrier) own(co *coro, start, at int64) {
	defer c.ownerExit()
	if c.bound() {
		_ = c.bindThread() // a thread it cannot name or pin still serves the carrier, unpinned
		c.ho.m = getm()
	}
	c.ownTaken(co, start, at)
}

// ownTaken is own once the caller's thread is the carrier's: it records
// the taken run and runs the loop.
func (c *Carrier) ownTaken(co *coro, start, at int64) {
	c.cur.Store(nil)
	c.ho.detachedAt[co] = away{start: start, at: at}
	gauge(&c.stats.detached, 1)
	c.loop()
	c.shutdown()
	close(c.done)
}

// ownerExit ends an owner's goroutine: one that lost the carrier unwinds
// with errLost, which ends here; any other panic goes on.
func (c *Carrier) ownerExit() {
	if p := recover(); p != nil && p != errLost {
		panic(p)
	}
}

// rejoined is the new owner's side of a rejoin: t, detached, came back
// through the local queue.
func (c *Carrier) rejoined(t *Task) {
	if a, ok := c.ho.detachedAt[t.co]; ok {
		delete(c.ho.detachedAt, t.co)
		c.ho.awayMu.Lock()
		if i := slices.Index(c.ho.away, t.co); i >= 0 {
			c.ho.away = slices.Delete(c.ho.away, i, i+1)
		}
		c.ho.awayMu.Unlock()
		gauge(&c.stats.detached, -1)
		add(&c.stats.rejoins, 1)
		c.stats.detachedFor.record(uint64(max(0, c.now-a.at)))
		t.handoffs++
		// The run held its task (and its carrier until the hand-off) from
		// its start to here: the watchdog counts it as the run it is.
		if pin := c.pinNs; pin > 0 && c.now-a.start > pin {
			add(&c.stats.pinned, 1)
			t.pinned++
		}
	}
}

// away is a detached task's record: when its run began, and when it was
// handed off (wait.Now ns).
type away struct{ start, at int64 }

// handoffState is a carrier's hand-off bookkeeping (Carrier.ho). on is
// fixed at start (handoffOn); m is the owner's thread (getm), owner-only;
// runSeq and runStart describe the current run for the monitor;
// detachedAt holds the tasks handed off and not back yet, with when
// (owner-only); away are the same tasks' coroutines, for a carrier
// operation of one of them to find its task from its goroutine
// (awayCaller): the monitor adds, the owner removes, under awayMu.
type handoffState struct {
	on    bool
	watch bool // the park watch is on (parkWatchOn), fixed at start
	// youngWaits has a bit per run of the carrier's last eight runs of
	// young tasks (Task.runs under youngRuns), newest lowest: set where
	// the run waited the Go way or came back from a hand-off. Owner-only.
	youngWaits uint8
	// unlocked: the bound owner unlocks its goroutine around runs and idle
	// parks, and creates its coroutines unlocked, so that a run or a park
	// may end on another thread (follow): where it hands off, or parks
	// idle with a working getm. Fixed at New. parkUnlocked: its idle parks
	// are unlocked (Carrier.parkIdle; not with N+1).
	unlocked     bool
	parkUnlocked bool
	m            uintptr
	runSeq       atomic.Uint64
	runStart     atomic.Int64
	detachedAt   map[*coro]away
	awayMu       sync.Mutex
	away         []*coro
	park         chan struct{} // the park watch's (handoff_park.go), owner-only; nil: none started
	parkPending  atomic.Bool   // a watcher was readied and has not run yet
}

// stopCoro stops an idle or parked coroutine (its task unwinds with
// errStopped); a carrier that hands off switches to it unlocked, as to
// every coroutine it created.
func (c *Carrier) stopCoro(co *coro) {
	// The unwinding task's deferred calls (a Close of its conns) are the
	// carrier's own, made on its goroutine: caller must see co as the
	// running coroutine, not take them for a foreign caller's.
	last := c.runCo.Swap(co)
	defer c.runCo.Store(last)
	if t := co.task; t != nil && t.state == taskParked {
		t.setState(taskRunnable) // the stop wakes it: it unwinds, or fails its wait (park)
	}
	if !c.ho.unlocked {
		co.stop()
		return
	}
	runtime.UnlockOSThread()
	co.stop()
	runtime.LockOSThread()
}

// awayCaller returns the detached task of c whose coroutine is the
// goroutine g, or nil: a carrier operation called by a task that the
// monitor handed off, which rejoins before it touches the carrier.
func (c *Carrier) awayCaller(g uintptr) *Task {
	c.ho.awayMu.Lock()
	defer c.ho.awayMu.Unlock()
	for _, co := range c.ho.away {
		if co.g.Load() == g {
			return co.task // the caller's own coroutine: its task, set before the run
		}
	}
	return nil
}

// monitorSleep is the monitor's sleep: on a timerfd in Go's netpoller
// (the thread and P go to other goroutines), or, while the surge gives
// parking carriers a spare P, in a blocking system call, which wakes its
// thread by itself: the netpoller's timers are seen by a thread that
// polls, and while a parking carrier computes on the only busy P none may
// (the monitor then woke 10-50 ms late, past every computing run it was
// to hand off). Without the spare P the system call would keep the only
// P from the carrier while the monitor sleeps.
func (g *Group) monitorSleep(ns int64) error {
	if g.surge.on {
		return unix.BlockingSleep(ns)
	}
	return g.clock.Sleep(ns)
}
