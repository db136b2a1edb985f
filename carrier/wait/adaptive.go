package wait

import (
	"sync"
	"time"
)

// Adaptive spins with PAUSE for the threshold its Policy learned, then
// blocks. Every wait's idle length (until work came, whether it spun or
// blocked) is fed back to the policy. A deadline closer than B is spun out
// rather than blocked for, since spinning to it costs less than one
// block-and-wake.
type Adaptive struct {
	// Policy is the learned threshold; read it for telemetry.
	Policy    *Policy
	pollEvery int
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
	return &Adaptive{Policy: NewPolicy(b, o.Trust, o.HalfLife), pollEvery: o.PollEvery}, nil
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
	a.Policy.Observe(r.Spun + r.Blocked)
	return r
}
