package wait

import "time"

// Block waits in the kernel (Target.Block) until I/O, a wake-up or the
// deadline: no CPU is spent waiting, and every wait costs one block-and-wake.
type Block struct{}

// Name returns "block".
func (Block) Name() string { return "block" }

// Wait blocks on t unless work is already there.
func (Block) Wait(t Target, deadline int64) Result {
	if t.Ready() {
		return Result{Kind: KindNone}
	}
	return block(t, Now(), deadline, 0)
}

// block blocks on t from start (when it began waiting) after spun ns of
// spinning, and classifies the outcome.
func block(t Target, start, deadline int64, spun time.Duration) Result {
	begin := Now()
	n := t.Block(deadline)
	end := Now()
	r := Result{Kind: KindBlock, Spun: spun, Blocked: time.Duration(end - begin), Events: n}
	if n == 0 && deadline >= 0 && end >= deadline && !t.Ready() {
		r.Kind = KindTimer
	}
	return r
}

// Busy spins on epoll_wait(0) (Target.Poll) and Target.Ready with no pause
// between checks: the lowest wake latency, and a whole core spent waiting.
type Busy struct{}

// Name returns "busy".
func (Busy) Name() string { return "busy" }

// Wait polls t in a tight loop until work, an event or the deadline.
func (Busy) Wait(t Target, deadline int64) Result {
	if t.Ready() {
		return Result{Kind: KindNone}
	}
	start := Now()
	out, n, end := spin(t, deadline, 1, nil)
	return spinResult(out, n, start, end)
}

// Pause spins on Target.Ready with one PAUSE instruction between checks and
// a Target.Poll every PollEvery of them. PAUSE tells the core it is in a spin
// loop: it yields pipeline resources to an SMT sibling, saves some power and
// avoids the memory-order flush when the watched line changes.
type Pause struct {
	// PollEvery is the number of PAUSE instructions between two polls
	// (see Options.PollEvery).
	PollEvery int
}

// Name returns "pause".
func (*Pause) Name() string { return "pause" }

// Wait spins with PAUSE until work, an event or the deadline.
func (p *Pause) Wait(t Target, deadline int64) Result {
	if t.Ready() {
		return Result{Kind: KindNone}
	}
	start := Now()
	out, n, end := spin(t, deadline, p.PollEvery, pause)
	return spinResult(out, n, start, end)
}

// outcome says why a spin ended.
type outcome uint8

const (
	outReady outcome = iota // Ready became true or Poll handled events
	outUntil                // the time limit passed
)

// spin checks t, then runs step (nil: nothing), polling every pollEvery
// steps, until t is ready, Poll handles an event, or the monotonic time until
// (< 0: none) passes. It reports why it stopped, the events handled and the
// time it stopped.
func spin(t Target, until int64, pollEvery int, step func()) (outcome, int, int64) {
	for i := 1; ; i++ {
		if t.Ready() {
			return outReady, 0, Now()
		}
		if i >= pollEvery {
			i = 0
			if n := t.Poll(); n > 0 {
				return outReady, n, Now()
			}
		}
		if until >= 0 {
			if now := Now(); now >= until {
				return outUntil, 0, now
			}
		}
		if step != nil {
			step()
		}
	}
}

// spinResult is the Result of a wait that only spun from start to end.
func spinResult(out outcome, events int, start, end int64) Result {
	r := Result{Kind: KindSpin, Spun: time.Duration(end - start), Events: events}
	if out == outUntil {
		r.Kind = KindTimer
	}
	return r
}
