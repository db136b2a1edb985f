package load

import "math"

// schedule is one connection's intended send times: request k (k = 0, 1, ...)
// is due at start + k*interval, in nanoseconds of the run's clock. It is a
// pure function of k, so a connection that falls behind keeps its original
// times (corrected latency runs from them) and simply sends as soon as it can
// until it is on time again: no catch-up bursts above the pace it can sustain
// one request at a time, and no drift.
type schedule struct {
	start    int64   // ns: request 0's intended send time
	interval float64 // ns between intended sends
}

// newSchedule spreads conns connections over a total rate (requests/s): each
// connection sends every conns/rate seconds, and connection i of conns starts
// i/rate seconds after t0, so that the aggregate is evenly paced.
func newSchedule(t0 int64, rate float64, i, conns int) schedule {
	interval := 1e9 * float64(conns) / rate
	return schedule{start: t0 + int64(float64(i)*1e9/rate), interval: interval}
}

// at returns request k's intended send time; one past the clock's range
// is its end (math.MaxInt64), never a wrapped, negative time.
func (s schedule) at(k int64) int64 {
	d := float64(k) * s.interval
	if d >= float64(math.MaxInt64-s.start) {
		return math.MaxInt64
	}
	return s.start + int64(d)
}

// maxCount bounds countBefore's answer: 2^53, the largest count a float64
// holds exactly. A count that large (104 days at one request per
// nanosecond, far past what Options.Rate and a duration allow) is beyond
// at's own rounding, so no correction step can make it more exact.
const maxCount = 1 << 53

// countBefore returns how many requests are due strictly before t. It is a
// closed form with at most a few correction steps, whatever the schedule:
// an interval of a fraction of a nanosecond or a t far away (a rate or a
// duration past any bound) cannot make it loop or overflow.
func (s schedule) countBefore(t int64) int64 {
	if t <= s.start {
		return 0
	}
	f := math.Ceil(float64(t-s.start) / s.interval)
	if !(f < maxCount) { // also NaN, +Inf
		return maxCount
	}
	k := int64(f)
	// Guard the float rounding at the boundary: at(k-1) < t <= at(k).
	// Below 2^53 the quotient and at's product are each within one ulp,
	// so k is off by at most two either way.
	for range countSteps {
		if k > 0 && s.at(k-1) >= t {
			k--
		} else if s.at(k) < t {
			k++
		}
	}
	return k
}

// countSteps bounds countBefore's corrections (two each way, and spare).
const countSteps = 8

// sendDelay returns how long to wait before sending request k at time now:
// 0 when it is due (or overdue: send as soon as possible).
func (s schedule) sendDelay(k, now int64) int64 {
	if d := s.at(k) - now; d > 0 {
		return d
	}
	return 0
}
