package latency

import (
	"fmt"
	"time"
)

// MergeIntervals merges interval logs recorded together on several hosts
// whose intervals are aligned (the same start and length, as load
// generators started on a common instant record them): interval i of the
// result holds every value of interval i of each log (HDR add, lossless),
// from the earliest start to the latest end among them. shift[k] is added
// to log k's times (its clock's offset from the reader's, negated), so the
// result is in the reader's clock. A log shorter than another (its host
// stopped earlier) just has nothing in the later intervals.
func MergeIntervals(logs [][]Interval, shift []time.Duration) ([]Interval, error) {
	if len(shift) != len(logs) {
		return nil, fmt.Errorf("merge interval logs: %d logs, %d shifts", len(logs), len(shift))
	}
	n := 0
	for _, l := range logs {
		n = max(n, len(l))
	}
	out := make([]Interval, n)
	for i := range out {
		out[i].Histogram = NewNs()
		for k, l := range logs {
			if i >= len(l) {
				continue
			}
			iv := l[i]
			start, end := iv.Start.Add(shift[k]), iv.End.Add(shift[k])
			if out[i].Start.IsZero() || start.Before(out[i].Start) {
				out[i].Start = start
			}
			if end.After(out[i].End) {
				out[i].End = end
			}
			if dropped := out[i].Histogram.Merge(iv.Histogram); dropped > 0 {
				return nil, fmt.Errorf("merge interval logs: interval %d: %d values out of range", i+1, dropped)
			}
		}
	}
	return out, nil
}
