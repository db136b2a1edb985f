package carrier

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
)

// ErrGroupClosed is wrapped by operations on a closed group.
var ErrGroupClosed = errors.New("carrier group closed")

// Group is a set of carriers started together.
type Group struct {
	opts         Options
	carriers     []*Carrier
	rr           atomic.Uint32
	closed       atomic.Bool
	closeOnce    sync.Once
	offloads     sync.WaitGroup
	searching    atomic.Int32
	maxSearching int32

	mu        sync.Mutex
	listeners map[*Listener]struct{}
	reserved  cpu.Set // with NPlusOne: the CPUs other threads were moved to
	origMask  cpu.Set // with NPlusOne: the mask to give them back at Close
	procs     int     // GOMAXPROCS set by New; 0: unchanged
	prevProcs int     // GOMAXPROCS before New raised it

	// allowed are the CPUs the process could use at New: where a thread
	// that leaves a carrier goes (offCarrier). stopMonitor and monitorDone
	// stop and await the hand-off monitor (nil without one).
	allowed  cpu.Set
	spareCPU bool // the process may run on more CPUs than it has carriers: the park watch may use one (handoff_park.go)
	// batchJoined is whether the group is one of those that batch the
	// process's other threads (batch.go; under batch.mu).
	batchJoined bool
	stopMonitor chan struct{}
	monitorDone chan struct{}
	clock       *unix.Timer // the monitor's sleep
	alert       alertState  // the monitor's threshold for waits
	surge       surgeState  // the monitor's spare P for detached runs that compute
	handing     int         // carriers that hand off
	// lastHandoffLog and handoffsUnlogged pace the default hand-off
	// report (reportHandoff); the monitor alone uses them.
	lastHandoffLog   time.Time
	handoffsUnlogged int
	// closeReqs counts CloseAsync requests: a carrier whose last look saw
	// another count looks for its conns to close.
	closeReqs atomic.Uint64
	// connEng is the engine of the group's conns (every carrier's is of the
	// same kind), for foreign callers to ask what it allows.
	connEng engine
}

// New starts a group of carriers: each on its own locked OS thread named
// carrier-N, pinned as o.Pin says. It raises GOMAXPROCS to at least one
// more than the number of carriers (Close restores it): each carrier keeps
// its P for good, and goroutines need one more (with ParkIdle, to the
// number of carriers: see raiseProcs).
func New(o Options) (*Group, error) {
	o = o.withDefaults()
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("carrier: %w", err)
	}
	if err := CheckPoller(o.Poller); err != nil {
		return nil, fmt.Errorf("carrier: %s poller: %w", o.Poller, err)
	}
	p, err := plan(o)
	if err != nil {
		return nil, fmt.Errorf("carrier: place carriers: %w", err)
	}
	g := &Group{opts: o, listeners: map[*Listener]struct{}{}}
	g.maxSearching = int32(max(1, p.n/2))
	for i := 0; i < p.n; i++ {
		c, err := g.newCarrier(i, p)
		if err != nil {
			g.closeUnstarted()
			return nil, err
		}
		g.carriers = append(g.carriers, c)
	}
	g.connEng = g.carriers[0].connEng // every carrier has the same poller
	for i, sib := range siblings(p.cluster, o.StealScope) {
		for _, j := range sib {
			g.carriers[i].siblings = append(g.carriers[i].siblings, g.carriers[j])
		}
	}
	g.allowed, _ = cpu.ProcessAllowed()
	g.spareCPU = len(g.allowed) > len(g.carriers)
	g.raiseProcs()
	for i, c := range g.carriers {
		go c.start()
		if err := <-c.startErr; err != nil {
			for _, later := range g.carriers[i+1:] {
				later.closeFDs()
			}
			g.carriers = g.carriers[:i+1]
			g.Close()
			return nil, err
		}
	}
	if o.NPlusOne {
		g.reserved = p.reserved
		if g.origMask, err = cpu.ProcessAllowed(); err == nil {
			err = g.moveOthers(p.reserved, nil)
		}
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("carrier: n+1: %w", err)
		}
	}
	if g.batches() {
		g.batchJoin()
	}
	if slices.ContainsFunc(g.carriers, func(c *Carrier) bool { return c.ho.on }) {
		if g.clock, err = unix.NewTimer(); err != nil {
			g.Close()
			return nil, fmt.Errorf("carrier: hand-off monitor: %w", err)
		}
		for _, c := range g.carriers {
			if c.ho.on {
				g.handing++
			}
		}
		g.alert.from = wait.Now()
		g.stopMonitor, g.monitorDone = make(chan struct{}), make(chan struct{})
		go g.monitor(g.stopMonitor, nil)
	}
	return g, nil
}

func (g *Group) newCarrier(i int, p placement) (*Carrier, error) {
	strat, err := newStrategy(g.opts.Wait, g.opts.WaitOptions)
	if err != nil {
		return nil, fmt.Errorf("carrier: %w", err)
	}
	c := &Carrier{
		g: g, id: i, cpu: p.cpus[i], affinity: p.affinity[i], strat: strat,
		pool:     coroPool{all: map[*coro]struct{}{}},
		rng:      uint64(i)*0x9e3779b97f4a7c15 + 1, // distinct non-zero xorshift seeds
		done:     make(chan struct{}),
		startErr: make(chan error, 1),
		efd:      -1,
		pinNs:    max(0, int64(g.opts.PinnedThreshold)), // negative: off
		ho:       handoffState{detachedAt: map[*coro]away{}},
	}
	c.ho.on = c.handoffOn()
	c.ho.watch = c.parkWatchOn()
	if !g.opts.Float { // a floating carrier's coroutines move between carriers: no label would stay true
		c.labels = pprof.WithLabels(context.Background(), pprof.Labels("carrier", strconv.Itoa(i)))
	}
	c.inject.word, c.local.word = &c.word, &c.word
	if c.efd, err = unix.Eventfd(); err != nil {
		return nil, fmt.Errorf("carrier %d: %w", i, err)
	}
	// A parked carrier's thread sleeps in the runtime, not in the ring:
	// like a carrier that moves, it must not leave completion work queued
	// to itself (setupRing).
	moves := g.opts.Float || c.ho.on || g.opts.ParkIdle
	if c.poll, err = newPoller(g.opts.Poller, c.efd, moves, &c.stats); err != nil {
		c.closeFDs()
		return nil, fmt.Errorf("carrier %d: %s poller: %w", i, g.opts.Poller, err)
	}
	if g.opts.ParkIdle {
		if c.park, err = newParker(c.poll); err != nil {
			c.closeFDs()
			return nil, fmt.Errorf("carrier %d: %w", i, err)
		}
	}
	// A bound carrier parks unlocked (parkIdle) unless N+1 keeps other work
	// off its CPU, and where getm works, which following it needs.
	c.ho.parkUnlocked = c.bound() && c.park != nil && !g.opts.NPlusOne && mOK()
	c.ho.unlocked = c.bound() && (c.ho.on || c.ho.parkUnlocked)
	c.connEng = connEngineFor(c.poll)
	return c, nil
}

func (c *Carrier) closeFDs() {
	if c.park != nil {
		c.park.close()
	}
	if c.poll != nil {
		c.poll.close()
	}
	if c.efd >= 0 {
		unix.Close(c.efd)
	}
}

// closeUnstarted releases carriers created but not started.
func (g *Group) closeUnstarted() {
	for _, c := range g.carriers {
		c.closeFDs()
	}
	g.carriers = nil
}

// siblings lists, for each carrier, the carriers it may steal from: all
// others, or with ScopeCluster those in the same L3 cluster.
func siblings(cluster []int, scope Scope) [][]int {
	out := make([][]int, len(cluster))
	for i := range cluster {
		for j := range cluster {
			if j != i && (scope == ScopeGlobal || cluster[j] == cluster[i]) {
				out[i] = append(out[i], j)
			}
		}
	}
	return out
}

// moveOthers gives every thread of the process that is not a carrier the
// mask to; with from set, only the threads whose mask is exactly from. At
// New it moves everything else onto the reserved CPUs (Go creates later
// threads from a template thread, or from another non-carrier thread, so
// they inherit the reserve); at Close it gives the reserved threads, also
// those created meanwhile, their original mask back.
func (g *Group) moveOthers(to, from cpu.Set) error {
	carriers := map[int]bool{}
	for _, c := range g.carriers {
		carriers[int(c.tid.Load())] = true
	}
	return cpu.PinThreads(to, func(tid int) bool {
		if carriers[tid] {
			return false
		}
		if from == nil {
			return true
		}
		cur, err := cpu.ThreadAffinity(tid)
		return err == nil && slices.Equal(cur, from) // else exited meanwhile, or not ours to restore
	})
}

// raiseProcs makes GOMAXPROCS at least one more than the carriers. A
// carrier that blocks in its poller never returns to the Go scheduler, so
// it holds its P for good; without a spare P, goroutines (offloaded
// functions, the GC's workers, timers) would wait for sysmon to preempt a
// carrier, every 10ms or so (an Offload round trip measured 29ms with one
// carrier and GOMAXPROCS=1, 0.4ms with GOMAXPROCS=2). Carriers that park
// (ParkIdle) give their P up while idle: they need no spare, except the
// reserved CPU's with NPlusOne.
func (g *Group) raiseProcs() {
	need := len(g.carriers) + 1
	if g.opts.ParkIdle && !g.opts.NPlusOne {
		need--
	}
	if cur := runtime.GOMAXPROCS(0); cur < need {
		g.prevProcs = runtime.GOMAXPROCS(need)
		g.procs = need
	}
}

// restoreProcs undoes raiseProcs unless someone changed GOMAXPROCS since.
func (g *Group) restoreProcs() {
	if g.procs > 0 && runtime.GOMAXPROCS(0) == g.procs {
		runtime.GOMAXPROCS(g.prevProcs)
	}
}

// Len returns the number of carriers.
func (g *Group) Len() int { return len(g.carriers) }

// Carrier returns carrier i (0 <= i < Len()).
func (g *Group) Carrier(i int) *Carrier { return g.carriers[i] }

// Go submits fn as a new task. Policy: carriers are chosen round-robin, so
// a burst of submissions from one goroutine spreads evenly; with stealing
// on, idle carriers rebalance what piles up.
func (g *Group) Go(fn func(*Task)) error {
	n := uint32(len(g.carriers))
	return g.carriers[(g.rr.Add(1)-1)%n].Submit(fn)
}

// Snapshot returns each carrier's telemetry.
func (g *Group) Snapshot() []Telemetry {
	out := make([]Telemetry, len(g.carriers))
	others, batched := -1, -1
	if g.batches() {
		others, batched = batchCount()
	}
	for i, c := range g.carriers {
		out[i] = c.stats.snapshot(c.id, c.cpu)
		out[i].OtherThreads, out[i].BatchedThreads = others, batched
	}
	return out
}

// ErrCloseInTask is returned by Close called from a task of the group,
// which would wait for its own carrier to stop (with Float, from a task of
// any group: floating carriers have no thread to recognise).
var ErrCloseInTask = errors.New("carrier: Group.Close called from one of its tasks")

// Close stops every carrier, closing every conn and listener, waits for
// offloaded functions to return, and restores the affinity of threads moved
// by NPlusOne and GOMAXPROCS. A task parked waiting for a conn's
// readiness gets ErrCarrierStopped (net.ErrClosed) from that operation and
// runs on, on its carrier's goroutine, until it ends: its conns are still
// open (a Write that has room is sent) and every later wait fails the
// same way at once. Close waits for it. A task parked where no error can
// be returned (Sleep, Yield, Offload), or waiting for an io_uring read or
// write the kernel holds, and a queued task, unwind instead (IsStop).
// A task handed off (it blocked the Go way or computed, on a thread of its
// own) is not waited for: its conns' Read, Write and CloseWrite return
// ErrCarrierStopped from then on, its other carrier operations unwind it,
// and it ends when its code returns to one of them or to its end. No fd of
// the group, and no goroutine of its own, survives it.
// Closing twice is harmless. It must not be called from the group's tasks
// (use Offload).
func (g *Group) Close() error {
	if g.onCarrierThread() {
		return ErrCloseInTask
	}
	g.closeOnce.Do(func() {
		g.closed.Store(true)
		for _, c := range g.carriers {
			c.stopping.Store(true)
			c.poke.Store(1)
			unix.EventfdSignal(c.efd)
		}
		// The monitor watches on until every carrier is done: a carrier
		// whose task blocks the Go way stops only once it is handed off.
		for _, c := range g.carriers {
			<-c.done
		}
		if g.stopMonitor != nil {
			close(g.stopMonitor)
			<-g.monitorDone
		}
		if g.clock != nil {
			g.clock.Close()
		}
		for _, c := range g.carriers {
			c.closeFDs()
		}
		g.offloads.Wait()
		g.mu.Lock()
		for l := range g.listeners {
			l.closeUnregistered()
		}
		clear(g.listeners)
		g.mu.Unlock()
		if g.reserved != nil && g.origMask != nil {
			g.moveOthers(g.origMask, g.reserved)
		}
		g.batchLeave()
		g.restoreProcs()
	})
	return nil
}

// onCarrierThread reports whether the caller runs on one of g's carriers
// (inside a task), where waiting for a carrier would deadlock. Floating
// carriers have no thread of their own: there it reports whether the
// caller is a task of any floating group, from the mark its coroutine set
// (calledFromTask; this runs only when a group or listener closes).
func (g *Group) onCarrierThread() bool {
	if g.opts.Float {
		return calledFromTask()
	}
	tid := int64(unix.Gettid())
	for _, c := range g.carriers {
		// A carrier that hands off or parks idle runs its tasks, and
		// parks, with its thread unlocked, so the thread may run any
		// goroutine meanwhile: the caller is one of its tasks when it is the
		// running task's coroutine or a detached task's (caller), whatever
		// thread it is on.
		if c.ho.unlocked && c.caller() != nil || !c.ho.unlocked && c.tid.Load() == tid {
			return true
		}
	}
	return false
}
