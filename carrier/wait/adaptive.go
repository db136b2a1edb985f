package wait

import (
	"sync"
	"time"
)

// Adaptive spins with PAUSE for the threshold its Policy learned, then
// blocks. Every wait's idle length (until work came, whether it spun or
// blocked) is fed back to the policy, and so is every measured wake-up
// latency when the target is a WakeStamper (unless Options.FixedB). A
// deadline closer than B is spun out rather than blocked for, since spinning
// to it costs less than one block-and-wake.
type Adaptive struct {
	// Policy is the learned threshold. Like the strategy, it belongs to
	// the waiting thread: read it for telemetry from that thread only.
	Policy    *Policy
	pollEvery int
	learnB    bool // learn B from wake stamps (not Options.FixedB)
}

func init() {
	Register(Spec{Name: "adaptive", Order: 40, New: newAdaptive, Adaptive: true, SharesCore: true})
}

// measuredB caches the process-wide block-and-wake measurement used when
// Options.BlockWake is zero.
var measuredB = sync.OnceValues(func() (time.Duration, error) {
	return MeasureBlockWakeAfter(DefaultMeasureRounds, DefaultMeasureIdle)
})

func newAdaptive(o Options) (Strategy, error) {
	b := o.BlockWake
	if b <= 0 {
		var err error
		if b, err = measuredB(); err != nil {
			return nil, err
		}
	}
	return &Adaptive{Policy: NewPolicy(b, o.Trust, o.HalfLife), pollEvery: o.PollEvery, learnB: !o.FixedB}, nil
}

// Name returns "adaptive".
func (*Adaptive) Name() string { return "adaptive" }

// Wait spins up to the learned threshold, then blocks.
func (a *Adaptive) Wait(t Target, deadline int64) Result {
	if t.Ready() {
		return Result{Kind: KindNone}
	}
	start := Now()
	until := start + int64(a.Policy.Threshold())
	if deadline >= 0 && (deadline < until || deadline-start <= int64(a.Policy.BlockWake())) {
		until = deadline
	}
	out, n, end := spin(t, until, a.pollEvery, pause)
	if out == outReady || (deadline >= 0 && end >= deadline) {
		a.Policy.Observe(time.Duration(end - start))
		return spinResult(out, n, start, end)
	}
	r := block(t, start, deadline, time.Duration(end-start))
	a.Policy.Observe(a.blockedIdle(t, start, Now(), r))
	return r
}

// blockedIdle returns the idle period that a wait which blocked saw: from
// start, when the thread ran out of work, to when work arrived. The wait
// itself lasted longer, by the wake-up latency: feeding that to the policy
// would bias it towards blocking, since a period it blocked through looks
// longer than it was, and where the latency is about B a run of blocks
// makes every short period look worth blocking for (seen on µs bursts,
// where the policy then blocked through 10µs gaps with B = 23µs). So the
// time work arrived is taken from the target's wake stamp when it has one
// within this block, which also gives one measured block-and-wake; without
// a stamp the wake-up is taken to have cost the policy's B. now is when
// the block returned.
func (a *Adaptive) blockedIdle(t Target, start, now int64, r Result) time.Duration {
	waited := r.Spun + r.Blocked
	if r.Kind != KindBlock {
		return waited // the deadline ended it: no work came
	}
	if ws, ok := t.(WakeStamper); ok {
		if sent := ws.WakeSent(); sent > 0 && sent >= now-int64(r.Blocked) && sent <= now {
			if a.learnB {
				a.Policy.ObserveBlockWake(time.Duration(now - sent))
			}
			return time.Duration(sent - start)
		}
	}
	return r.Spun + max(r.Blocked-a.Policy.BlockWake(), 0)
}

// WakeStamper is an optional Target extension that lets the adaptive
// strategy learn B from its own blocks instead of relying only on the
// start-up measurement: B depends on how long a CPU idled and on the host
// (see docs/wait.md).
type WakeStamper interface {
	// WakeSent returns the Now time at which a producer last signalled
	// the target to wake it from Block, taken just before the signal
	// (eventfd write, futex wake); 0 when it never did. The adaptive
	// strategy takes the time from it to its return from Block as one
	// block-and-wake, when it falls within that Block.
	WakeSent() int64
}
