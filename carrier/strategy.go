package carrier

import (
	"fmt"

	"spindle/carrier/wait"
)

// newStrategy returns a fresh idle strategy for one carrier.
//
// Until carrier/wait provides wait.New, this shim offers the two
// strategies the runtime cannot do without: block and busy.
func newStrategy(name string) (wait.Strategy, error) {
	switch name {
	case "block":
		return blockWait{}, nil
	case "busy":
		return busyWait{}, nil
	}
	return nil, fmt.Errorf("wait strategy %q: %w here (this build offers block and busy)", name, wait.ErrNotSupported)
}

// blockWait polls once and then blocks in the kernel.
type blockWait struct{}

func (blockWait) Name() string { return "block" }

func (blockWait) Wait(t wait.Target, deadline int64) wait.Result {
	if t.Ready() {
		return wait.Result{Kind: wait.KindNone}
	}
	if n := t.Poll(); n > 0 || t.Ready() {
		return wait.Result{Kind: wait.KindNone, Events: n}
	}
	start := wait.Now()
	n := t.Block(deadline)
	r := wait.Result{Kind: wait.KindBlock, Blocked: durationSince(start), Events: n}
	if n == 0 && !t.Ready() {
		r.Kind = wait.KindTimer
	}
	return r
}

// busyWait polls without blocking until work comes or the deadline passes.
type busyWait struct{}

func (busyWait) Name() string { return "busy" }

func (busyWait) Wait(t wait.Target, deadline int64) wait.Result {
	start := wait.Now()
	for {
		if t.Ready() {
			return wait.Result{Kind: wait.KindSpin, Spun: durationSince(start)}
		}
		if n := t.Poll(); n > 0 {
			return wait.Result{Kind: wait.KindSpin, Spun: durationSince(start), Events: n}
		}
		if deadline >= 0 && wait.Now() >= deadline {
			return wait.Result{Kind: wait.KindTimer, Spun: durationSince(start)}
		}
	}
}
