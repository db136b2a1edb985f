package carrier

import (
	"maps"
	"sync"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
)

// Batching the process's other threads (Options.NoBatch).
//
// A carrier that blocks in its poller holds its P for good, so GOMAXPROCS
// is one more than the carriers (raiseProcs), and on a server whose CPUs
// are all carriers' the spare P's threads share the carriers' CPUs. At the
// start of each GC cycle the runtime wakes a thread for the spare P, which
// runs the GC's fractional and then idle worker. Under the fair scheduler
// (EEVDF) that thread, waking with lag, preempts the carrier, and the
// carrier, which has used more than its share of the CPU, is not eligible
// again until the worker has run: the stop-the-world that the carrier
// itself began then lasted 0.3-0.6 ms on a one-CPU server, and the
// carrier's p99 at 10,000 req/s was the fasthttp peer's plus that
// (docs/PERFORMANCE.md, "Seventeenth session"). A thread under SCHED_BATCH
// is weighed as a SCHED_NORMAL one but never preempts on wake-up: it runs
// when the carrier sleeps, on an idle CPU, or at the next tick once the
// carrier's slice is over. So every thread of the process but the
// carriers' is put under SCHED_BATCH, and the carriers' threads under
// SCHED_NORMAL.
//
// The Go runtime starts a thread from a thread of the process (or, for a
// goroutine locked to its thread such as a carrier's, from its template
// thread), which the new one inherits the policy of: once every thread
// there is batched, the runtime's later threads are too. A carrier's
// thread is put back under SCHED_NORMAL as it binds, and a thread a
// carrier leaves (a hand-off's) under SCHED_BATCH. The state is the
// process's: several groups batch together, and the last one to close
// puts every thread they batched (and those started meanwhile) back.
var batch struct {
	mu       sync.Mutex
	groups   int          // open groups that batch
	carriers map[int]bool // the threads of their carriers, by tid
	before   map[int]bool // threads under SCHED_BATCH before the first group batched: left so
}

// batches reports whether g batches the process's other threads: its
// carriers block in their pollers on threads of their own, and share
// their CPUs with the other threads (NoBatch).
func (g *Group) batches() bool {
	o := &g.opts
	return !o.NoBatch && !o.Float && !o.ParkIdle && !o.NPlusOne
}

// batchJoin makes g one of the groups that batch, once its carriers are
// bound: their threads are the carriers', every other one is batched.
// Best effort: a thread the kernel will not change runs on as it was.
func (g *Group) batchJoin() {
	batch.mu.Lock()
	defer batch.mu.Unlock()
	if batch.groups == 0 {
		batch.before = map[int]bool{}
		_ = cpu.EachThread(func(tid int) error {
			if on, err := unix.Batch(tid); err == nil && on && !batch.carriers[tid] {
				batch.before[tid] = true
			}
			return nil
		})
	}
	batch.groups++
	g.batchJoined = true
	for _, c := range g.carriers {
		tid := int(c.tid.Load())
		ownThread(tid) // as it bound; again, in case another group's sweep came between
		_, _ = unix.SetBatch(tid, false)
	}
	_ = cpu.EachThread(func(tid int) error {
		if !batch.carriers[tid] {
			_, _ = unix.SetBatch(tid, true)
		}
		return nil
	})
}

// batchLeave ends g's batching; the last group to leave puts the threads
// the groups batched (and those started since) back under SCHED_NORMAL.
func (g *Group) batchLeave() {
	batch.mu.Lock()
	defer batch.mu.Unlock()
	if !g.batchJoined {
		return
	}
	g.batchJoined = false
	for _, c := range g.carriers {
		delete(batch.carriers, int(c.tid.Load()))
	}
	if batch.groups--; batch.groups > 0 {
		return
	}
	_ = cpu.EachThread(func(tid int) error {
		if !batch.before[tid] && !batch.carriers[tid] {
			_, _ = unix.SetBatch(tid, false)
		}
		return nil
	})
	batch.before = nil
}

// batchOwn records thread tid as a carrier's (it binds, or the carrier
// moved to it), so that the groups' sweeps leave it under SCHED_NORMAL,
// which takeThread gives it.
func batchOwn(tid int) {
	batch.mu.Lock()
	defer batch.mu.Unlock()
	ownThread(tid)
}

// ownThread is batchOwn with batch.mu held.
func ownThread(tid int) {
	if batch.carriers == nil {
		batch.carriers = map[int]bool{}
	}
	batch.carriers[tid] = true
}

// batchDrop forgets thread tid as a carrier's (a hand-off's blocked run
// holds it, or the carrier moved on to another) and reports whether it
// goes under SCHED_BATCH, which giveThread gives it: while any group
// batches. The caller's group is one of them, so the answer holds until
// giveThread's change: the last group's batchLeave runs after its
// carriers have stopped.
func batchDrop(tid int) bool {
	batch.mu.Lock()
	defer batch.mu.Unlock()
	delete(batch.carriers, tid)
	return batch.groups > 0
}

// batchCount counts the process's threads that are no batching group's
// carriers' (others) and those of them under SCHED_BATCH (batched), for
// Telemetry: fewer batched than others says the kernel refused some (a
// sandbox's seccomp filter, say), a thread started since the last
// sweep from one that was not batched, or a carrier that moved to another
// thread while the count ran (its new thread not yet counted as its).
func batchCount() (others, batched int) {
	batch.mu.Lock()
	carriers := maps.Clone(batch.carriers) // the walk below runs without the lock, which thread moves take
	batch.mu.Unlock()
	_ = cpu.EachThread(func(tid int) error {
		if carriers[tid] {
			return nil
		}
		on, err := unix.Batch(tid)
		if err != nil { // it ended as we looked
			return nil
		}
		others++
		if on {
			batched++
		}
		return nil
	})
	return others, batched
}
