package carrier

import "time"

// coroPool is a carrier's coroutines: every one alive (for shutdown) and
// the idle ones waiting for a task, a stack (the last one idle runs the
// next task: its stack is the warmest). It belongs to the carrier's owner.
type coroPool struct {
	all  map[*coro]struct{}
	idle []*coro
	// idleLow is the fewest coroutines idle since the last trim, and
	// trimAt (wait.Now ns) when the next trim is due: the ones idle for a
	// whole period beyond minIdleCoros are stopped (trim).
	idleLow int
	trimAt  int64
}

// maxIdleCoros bounds the coroutine pool of one carrier: a burst of 10,000
// connections does not keep 10,000 idle goroutine stacks after it ends.
const maxIdleCoros = 1024

// The idle pool shrinks when it is not used: every coroTrimPeriod the
// carrier stops the coroutines that stayed idle the whole period, keeping
// minIdleCoros. A coroutine holds its goroutine's stack (8 KiB, more once a
// task grew it: a carrier-mode connection's holds about 12 KiB), so 1,000
// idle ones kept ~12 MiB after a burst of connections ended (docs/carrier.md).
// The check is one comparison per loop turn; a carrier waiting with a surplus
// wakes once per period until it is trimmed.
const (
	coroTrimPeriod = time.Second
	// minIdleCoros is what the pool keeps however long it is idle: enough
	// for a burst of short tasks without new goroutines, 1 MiB of stacks
	// at most.
	minIdleCoros = 64
)

// take returns an idle coroutine, or nil when none is.
func (p *coroPool) take() *coro {
	k := len(p.idle)
	if k == 0 {
		return nil
	}
	co := p.idle[k-1]
	p.idle[k-1] = nil
	p.idle = p.idle[:k-1]
	p.idleLow = min(p.idleLow, k-1)
	return co
}

// put makes co idle, unless the pool is full: it then forgets co and
// reports false (the caller stops it).
func (p *coroPool) put(co *coro) bool {
	if len(p.idle) < maxIdleCoros {
		p.idle = append(p.idle, co)
		return true
	}
	delete(p.all, co)
	return false
}

// surplusIdle reports whether coroutines beyond minIdleCoros are idle (a
// waiting carrier then wakes for the next trim).
func (p *coroPool) surplusIdle() bool { return len(p.idle) > minIdleCoros }

// trim forgets the coroutines beyond minIdleCoros that stayed idle since
// the last trim and returns them (the caller stops them: their goroutine
// stacks, grown by the tasks they ran, go back to the runtime); it
// schedules the next trim.
func (p *coroPool) trim(now int64) []*coro {
	var gone []*coro
	if surplus := min(p.idleLow, len(p.idle)) - minIdleCoros; surplus > 0 {
		keep := len(p.idle) - surplus
		gone = append(gone, p.idle[:surplus]...) // the oldest: the bottom of the stack
		for _, co := range gone {
			delete(p.all, co)
		}
		p.idle = append(p.idle[:0], p.idle[surplus:]...)
		clear(p.idle[keep : keep+surplus])
		if cap(p.idle) > 4*max(keep, minIdleCoros) {
			p.idle = append([]*coro(nil), p.idle...) // drop the burst's backing array too
		}
	}
	p.idleLow = len(p.idle)
	p.trimAt = now + int64(coroTrimPeriod)
	return gone
}
