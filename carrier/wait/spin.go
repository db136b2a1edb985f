package wait

import "time"

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
