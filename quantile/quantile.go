// Package quantile holds spindle's order statistics over small samples: the
// median, minimum and maximum of the figures a configuration got over its
// rounds or repeats (the report's and the spectrum's tables), and the
// nearest-rank percentile of sorted measurements. Latency distributions
// with many values go through HDR histograms (package latency) instead.
package quantile

import (
	"cmp"
	"math"
	"slices"
)

// Summary is the median, smallest and largest of a sample; N is how many
// values it has (0: none, and the other fields are 0).
type Summary struct {
	Median, Min, Max float64
	N                int
}

// Of summarizes xs, skipping NaN values (a run or repeat without the
// figure). xs is not modified.
func Of(xs []float64) Summary {
	v := slices.DeleteFunc(slices.Clone(xs), math.IsNaN)
	if len(v) == 0 {
		return Summary{}
	}
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 { // even count: the mean of the two middle values
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Summary{Median: med, Min: v[0], Max: v[len(v)-1], N: len(v)}
}

// Median is the median of the values of xs that are not NaN; NaN when there
// is none.
func Median(xs []float64) float64 {
	s := Of(xs)
	if s.N == 0 {
		return math.NaN()
	}
	return s.Median
}

// NearestRank returns the p-th percentile (0 <= p <= 100) of sorted
// (ascending) by the nearest-rank method: the smallest value with at least
// p% of the values at or below it; the zero value when sorted is empty.
func NearestRank[T cmp.Ordered](sorted []T, p float64) T {
	var zero T
	if len(sorted) == 0 {
		return zero
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
