package wait

func init() {
	Register(Spec{
		Name: "pause", Order: 30,
		New: func(o Options) (Strategy, error) { return &Pause{PollEvery: o.PollEvery}, nil },
	})
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
