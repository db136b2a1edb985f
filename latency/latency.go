// Package latency records request latencies in HDR histograms
// (github.com/HdrHistogram/hdrhistogram-go) and writes them the way wrk2 does:
// the "Latency Distribution" block, the "Detailed Percentile spectrum" with
// its #[Mean ...]/#[Max ...]/#[Buckets ...] footer, .hgrm files for the
// HdrHistogram plotter, and a lossless JSON form (Summary) that can be read
// back and merged.
//
// Values are recorded in microseconds, from 1 µs to 1 hour, with 3
// significant digits, so that printed values (scaled to milliseconds) match
// wrk2's output.
package latency

import (
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram is an HDR histogram of latencies in microseconds.
type Histogram = hdr.Histogram

const (
	// LowestUs is the smallest latency a histogram tells apart, in µs.
	LowestUs = 1
	// HighestUs is the largest latency a histogram records, in µs (1 hour);
	// larger values are clamped to it.
	HighestUs = int64(time.Hour / time.Microsecond)
	// SigFigs is the number of significant decimal digits kept (0.1% error).
	SigFigs = 3
	// ValueScale converts recorded µs to the milliseconds wrk2 prints.
	ValueScale = 1000.0
)

// New returns an empty latency histogram (µs, 1 µs to 1 h, 3 digits).
func New() *Histogram { return hdr.New(LowestUs, HighestUs, SigFigs) }

// Record adds one latency given in nanoseconds. Values below 1 µs are
// recorded as 1 µs and values above an hour as an hour, so that no sample is
// silently lost.
func Record(h *Histogram, ns int64) {
	us := ns / int64(time.Microsecond)
	if us < LowestUs {
		us = LowestUs
	}
	if us > HighestUs {
		us = HighestUs
	}
	_ = h.RecordValue(us) // cannot fail: us is within the histogram's range
}

// Merge returns a new histogram holding every value of hs (nil entries are
// skipped). It reports an error if a value could not be represented, which
// happens only for histograms with a narrower range than New's.
func Merge(hs ...*Histogram) (*Histogram, error) {
	out := New()
	for _, h := range hs {
		if h == nil {
			continue
		}
		if dropped := out.Merge(h); dropped > 0 {
			return out, fmt.Errorf("merge histograms: %d values out of range", dropped)
		}
	}
	return out, nil
}
