package wait

func init() {
	Register(Spec{
		Name: "busy", Order: 20,
		New: func(Options) (Strategy, error) { return Busy{}, nil },
	})
}

// Busy spins on Target.Poll (a carrier's poll of its poller without a
// wait) and Target.Ready with no pause between checks: the lowest wake
// latency, and a whole core spent waiting.
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
