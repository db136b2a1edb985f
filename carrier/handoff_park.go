package carrier

import (
	"runtime"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
)

// The park watch: a run that waits the Go way for less than the hand-off
// threshold (a driver's round trip on its own net.Conn, about 50-100 µs
// on loopback; an errgroup of backend calls; a Gather of collectors on
// goroutines) holds its carrier for all of its wait, so the carrier's
// other tasks wait behind it, one request at a time: a pgxpool handler on
// one carrier served 5-12K req/s where net/http served 20K, with the
// process mostly idle (docs/PERFORMANCE.md, "Twelfth session"). The
// monitor cannot see such waits: it looks once a threshold, and looking
// more often costs every carrier (alertState).
//
// The watch sees them where they happen, on the carrier's thread. Before
// a run of a task whose last run waited the Go way or came back from a
// hand-off, and its next parkArmRuns runs, the owner readies one of the
// carrier's watcher goroutines with a non-blocking send: the runtime puts
// a goroutine readied from a running one in its P's runnext slot, and the
// coroutine switch to the task does not touch it. If the task parks the
// Go way, its thread's scheduler runs the watch next: it finds the run
// still on and its goroutine waiting, lets the goroutines the task
// readied before it parked run first (one Gosched), and takes the run as
// the monitor does (takeRun: the same two swaps, so the monitor and the
// watch never both take a run); the watch's goroutine becomes the
// carrier's owner on the same thread (no thread to name or pin), and the
// task rejoins at its next carrier operation as a handed-off one does. A
// watcher readied for a run that ended before it parked stays readied (in
// the run queue, parkPending), and looks at whatever run is on when it
// runs: the owner readies no other meanwhile, so short runs do not use
// the watchers up. Where another P ran a watcher while the task still
// runs (an idle P's thread steals a readied goroutine after a few µs), it
// looks again after each Gosched for at most parkSpin, then leaves the run
// to the monitor; but only where the process may run on more CPUs than it
// has carriers (Group.spareCPU): on a server whose carriers have every
// CPU the spin takes a carrier's CPU for every watched run.
//
// Where there is such a spare CPU, the watch also arms after any run that
// held the carrier parkArmAfter or more, as it first did: more watched
// runs keep a watcher readied more often (and the spare CPU's thread
// awake), which served go-redis on one carrier of two CPUs at 1.28x
// net/http's rate against 0.93x with the waited rule alone
// (BenchmarkStandardHandlers, 8 alternated rounds), and the wake-ups run
// on the CPU no carrier has.
//
// A run waited the Go way where its goroutine left running meanwhile: the
// runtime counts each time a goroutine parks or is preempted (gtrackseq),
// not its coroutine switches nor its system calls, so the owner reads the
// count before and after each run (carrier.go, run). A task whose runs
// compute (short of Go's 10 ms time slice, after which it is preempted)
// and one that waits only on the carrier's own conns are never watched
// and cost nothing more: an earlier rule, "the
// last run lasted 25 µs or more", watched nearly every run of
// nethttp-carrier /fruits on one CPU and cost it 1.6x the CPU per request
// (docs/PERFORMANCE.md, "Twelfth session"), which kept the watch off by
// default.
//
// Park yields are not hand-offs of long runs: they are counted apart
// (Telemetry.ParkYields), not reported and not logged.

// parkArmRuns is how many runs of a task stay watched after a rejoin (its
// wait was handed off or taken by the watch): a request is a few runs (its
// read, each exchange on a conn the carrier polls, its write), and a
// handler that waited the Go way is likely to wait in its next requests
// too; one that stops waiting stops costing a wake-up per run a few
// requests later.
const parkArmRuns = 8

// parkArmAfter is how long a run must hold its carrier for the task's next
// runs to be watched where a CPU is not a carrier's (Group.spareCPU): a
// few times an ordinary request's run (parse, handler, write: 5-15 µs on
// the 2-CPU machine of docs/PERFORMANCE.md), under a loopback round trip.
const parkArmAfter = 25 * time.Microsecond

// parkSpin is how long the watch, run by another P while the task still
// runs, keeps looking (yielding its P between looks) before it leaves the
// run to the monitor, where a CPU is not a carrier's (Group.spareCPU).
// Stolen watchers are the rule where a P is idle: go-redis on one carrier
// of two CPUs had 1.2 watched runs per request and 0.37 park yields
// without the spin.
const parkSpin = 50 * time.Microsecond

// parkArmWaits is how many of a task's last eight runs must have waited
// the Go way (its goroutine left running) for its next runs to be
// watched. A run also leaves running when the collector stops the world
// or an assist parks it (nethttp-carrier /fruits: about one run in a
// hundred, a cycle every 25 ms), which says nothing of the task's next
// runs, and seldom twice in eight runs of one task; a handler that waits
// on a driver waits in every request.
const parkArmWaits = 2

// youngRuns is how many runs a task is young for: a task of no history
// of its own (a new connection's, whose handler waits the Go way in its
// first request) gets the watch for its runs while parkArmWaits of the
// carrier's last eight runs of young tasks waited the Go way or came back
// from a hand-off (handoffState.youngWaits). Without it each new
// connection's first wait held its carrier for the hand-off threshold
// (1 ms) before the monitor handed it off: with clients that connect for
// each request, every request did (BenchmarkNewConnWaits).
const youngRuns = 8

// youngWatch turns the young tasks' watch on; only BenchmarkNewConnWaits
// turns it off, to measure what it buys.
var youngWatch = true

// parkWatchers is how many goroutines watch a carrier's runs: the one that
// takes a run becomes the carrier's owner and starts its replacement,
// which runs only once a P is free, so a second one listens meanwhile.
const parkWatchers = 2

// armPark makes sure that one of c's watchers is readied for the run
// about to begin, starting the watchers first if c has none: unless a
// watcher readied for an earlier run has not run yet (it looks at the run
// that is on when it does), it readies one with a send that does not
// block (none is waiting while both are busy: this run goes unwatched).
func (c *Carrier) armPark() {
	if c.ho.park == nil {
		c.ho.park = make(chan struct{})
		for range parkWatchers {
			go c.parkWatch(c.ho.park)
		}
	}
	if c.ho.parkPending.Load() {
		return
	}
	c.ho.parkPending.Store(true)
	select {
	case c.ho.park <- struct{}{}:
	default:
		c.ho.parkPending.Store(false)
	}
}

// stopParkWatch ends c's park watch (at shutdown, by the last owner).
func (c *Carrier) stopParkWatch() {
	if c.ho.park != nil {
		close(c.ho.park)
		c.ho.park = nil
	}
}

// parkWatch is a watcher's goroutine: each time it is readied, it takes
// the run then on if its task parks the Go way, and then serves the
// carrier as its owner until it loses it or the carrier stops.
func (c *Carrier) parkWatch(arm chan struct{}) {
	for range arm {
		c.ho.parkPending.Store(false)
		if c.parkTake(arm) {
			return
		}
	}
}

// parkTake takes the run on once its task waits the Go way, and runs the
// carrier as its new owner; it reports false, having taken nothing, when
// no run is on, the run ends first, the monitor takes it, or its task
// is not parked when the watch looks.
func (c *Carrier) parkTake(arm chan struct{}) bool {
	seq := c.ho.runSeq.Load()
	co := c.runCo.Load()
	if seq&1 == 0 || co == nil || c.ho.runSeq.Load() != seq {
		return false // between runs, or a run began meanwhile: co may not be its coroutine
	}
	// runCo is stored before a run's number and changes only after it
	// moved on: co is run seq's.
	until := wait.Now()
	if c.g.spareCPU {
		until += int64(parkSpin)
	}
	sawWait := false
	for {
		if c.ho.runSeq.Load() != seq {
			return false
		}
		if parkedGoWay(co.g.Load()) {
			if sawWait { // and the goroutines it readied before it parked have had their turn
				break
			}
			sawWait = true
		} else if sawWait = false; wait.Now() > until {
			return false // it runs: not parked, or woken already
		}
		runtime.Gosched()
	}
	start := c.ho.runStart.Load()
	if c.takeRun(seq, co) != takeOK {
		return false
	}
	add(&c.stats.parkYields, 1)
	go c.parkWatch(arm) // this goroutine was a watcher: another takes its place
	c.ownParked(co, start, wait.Now())
	return true
}

// parkWatchOn says whether c has the park watch: its runs are handed
// off, its owner is bound to a thread (a floating carrier's watcher could
// not take its run on the same thread), the options leave it on, and
// gtrackseq passed its check.
func (c *Carrier) parkWatchOn() bool {
	return c.ho.on && c.bound() && !c.g.opts.NoParkWatch && seqOK()
}

// ownParked makes the park watch's goroutine c's owner after it took a run
// on co (begun at start) at at: on the thread the run parked on, which is
// the carrier's already, or, where another P ran the watch, on its own
// thread, bound as a monitor's is.
func (c *Carrier) ownParked(co *coro, start, at int64) {
	defer c.ownerExit()
	runtime.LockOSThread()
	if m := getm(); m != c.ho.m {
		runtime.UnlockOSThread()
		c.leaveThread()
		_ = c.bindThread() // a thread it cannot name or pin still serves the carrier, unpinned
		c.ho.m = getm()
	}
	c.ownTaken(co, start, at)
}

// parkedGoWay reports whether goroutine g is parked (on a channel, a
// mutex, a timer, the netpoller); not in a system call, which goes on on
// its thread, nor waiting for the runtime itself or switched back to its
// carrier (runtimeWait).
func parkedGoWay(g uintptr) bool {
	return g != 0 && statusOK() && gstatus(g)&^gScanBit == gWaiting && !(reasonOK() && runtimeWait(gwaitreason(g)))
}
