// Package rtmetrics is the Go runtime's own view of a process over a
// window, for a latency hunt: a Snapshot of the runtime/metrics that tell
// a stall's cause (the scheduling latencies and the GC's stop-the-world
// pauses as histograms, the GC cycles, the GC's and all CPU time,
// GOMAXPROCS), its JSON form (the server's /debug/runtime), the
// difference of two snapshots (Sub) and the quantiles of a histogram's
// difference (Histogram.Quantile).
package rtmetrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/metrics"
	"slices"
)

// The runtime/metrics names a Snapshot holds (their meaning is
// runtime/metrics' documentation).
const (
	// SchedLatencies: how long goroutines sat runnable before they ran.
	SchedLatencies = "/sched/latencies:seconds"
	// GCPauses: the GC's stop-the-world pauses.
	GCPauses = "/gc/pauses:seconds"
	// GCCycles and GCCyclesForced: completed GC cycles, and those of them
	// forced by the program (runtime.GC, debug.FreeOSMemory).
	GCCycles       = "/gc/cycles/total:gc-cycles"
	GCCyclesForced = "/gc/cycles/forced:gc-cycles"
	// GCCPU, GCAssistCPU and TotalCPU: the CPU time the GC took (assists
	// by allocating goroutines, dedicated and idle workers, pauses), the
	// assists alone, and all the CPU time GOMAXPROCS made available (an
	// integral of GOMAXPROCS over time, idle time included): the runtime's
	// estimates, to compare with one another, not with the kernel's.
	GCCPU       = "/cpu/classes/gc/total:cpu-seconds"
	GCAssistCPU = "/cpu/classes/gc/mark/assist:cpu-seconds"
	TotalCPU    = "/cpu/classes/total:cpu-seconds"
	// GOMAXPROCS: the current GOMAXPROCS.
	GOMAXPROCS = "/sched/gomaxprocs:threads"
)

// Snapshot is the runtime's metrics at one moment, or (from Sub) their
// change over a window. Its JSON members are the runtime/metrics names.
type Snapshot struct {
	SchedLatencies     Histogram `json:"/sched/latencies:seconds"`
	GCPauses           Histogram `json:"/gc/pauses:seconds"`
	GCCycles           uint64    `json:"/gc/cycles/total:gc-cycles"`
	GCCyclesForced     uint64    `json:"/gc/cycles/forced:gc-cycles"`
	GCCPUSeconds       float64   `json:"/cpu/classes/gc/total:cpu-seconds"`
	GCAssistCPUSeconds float64   `json:"/cpu/classes/gc/mark/assist:cpu-seconds"`
	TotalCPUSeconds    float64   `json:"/cpu/classes/total:cpu-seconds"`
	// GOMAXPROCS is a gauge: a difference keeps the later value.
	GOMAXPROCS uint64 `json:"/sched/gomaxprocs:threads"`
}

// field is one metric of a Snapshot: its name and where its value goes
// (one of u, f, h).
type field struct {
	name string
	u    *uint64
	f    *float64
	h    *Histogram
}

// fields are s's metrics, in the order of Snapshot's.
func (s *Snapshot) fields() []field {
	return []field{
		{name: SchedLatencies, h: &s.SchedLatencies},
		{name: GCPauses, h: &s.GCPauses},
		{name: GCCycles, u: &s.GCCycles},
		{name: GCCyclesForced, u: &s.GCCyclesForced},
		{name: GCCPU, f: &s.GCCPUSeconds},
		{name: GCAssistCPU, f: &s.GCAssistCPUSeconds},
		{name: TotalCPU, f: &s.TotalCPUSeconds},
		{name: GOMAXPROCS, u: &s.GOMAXPROCS},
	}
}

// ErrUnsupported is returned by Read when the running Go lacks a metric
// (or gives it another kind).
var ErrUnsupported = errors.New("not supported by this Go runtime")

// Read takes a snapshot of this process's runtime metrics.
func Read() (Snapshot, error) {
	var s Snapshot
	fs := s.fields()
	samples := make([]metrics.Sample, len(fs))
	for i, f := range fs {
		samples[i].Name = f.name
	}
	metrics.Read(samples)
	for i, f := range fs {
		v := samples[i].Value
		switch k := v.Kind(); {
		case f.u != nil && k == metrics.KindUint64:
			*f.u = v.Uint64()
		case f.f != nil && k == metrics.KindFloat64:
			*f.f = v.Float64()
		case f.h != nil && k == metrics.KindFloat64Histogram:
			h := v.Float64Histogram() // the runtime's memory: copy it
			*f.h = Histogram{Counts: slices.Clone(h.Counts), Buckets: slices.Clone(h.Buckets)}
		default:
			return Snapshot{}, fmt.Errorf("runtime metric %s: %w", f.name, ErrUnsupported)
		}
	}
	return s, nil
}

// Sub is s's change since before, an earlier snapshot of the same
// process: the counters' and histograms' differences, s's GOMAXPROCS. A
// counter that went down or histograms of other buckets mean before is
// not an earlier snapshot of this process (it restarted): an error.
func (s Snapshot) Sub(before Snapshot) (Snapshot, error) {
	d := s
	df, bf := d.fields(), before.fields()
	for i, f := range df {
		var err error
		switch {
		case f.name == GOMAXPROCS: // a gauge
		case f.h != nil:
			*f.h, err = f.h.Sub(*bf[i].h)
		case f.u != nil:
			if *f.u < *bf[i].u {
				err = fmt.Errorf("went down from %d to %d", *bf[i].u, *f.u)
			}
			*f.u -= *bf[i].u
		case f.f != nil:
			if *f.f < *bf[i].f {
				err = fmt.Errorf("went down from %g to %g", *bf[i].f, *f.f)
			}
			*f.f -= *bf[i].f
		}
		if err != nil {
			return Snapshot{}, fmt.Errorf("runtime metric %s: %w (not an earlier snapshot of the same process)", f.name, err)
		}
	}
	return d, nil
}

// Histogram is a runtime/metrics Float64Histogram: Counts[i] values fell
// in [Buckets[i], Buckets[i+1]); len(Buckets) is len(Counts)+1, the first
// boundary may be -Inf and the last +Inf (null in JSON, which has no
// infinities). The zero Histogram is empty.
type Histogram struct {
	Counts  []uint64
	Buckets []float64
}

// histogramJSON is Histogram's JSON form; a nil bound is an infinity.
type histogramJSON struct {
	Counts  []uint64   `json:"counts"`
	Buckets []*float64 `json:"buckets"`
}

// MarshalJSON writes {"counts": [...], "buckets": [...]}, the infinite
// boundaries as null.
func (h Histogram) MarshalJSON() ([]byte, error) {
	j := histogramJSON{Counts: h.Counts, Buckets: make([]*float64, len(h.Buckets))}
	if j.Counts == nil {
		j.Counts = []uint64{}
	}
	for i := range h.Buckets {
		if !math.IsInf(h.Buckets[i], 0) {
			j.Buckets[i] = &h.Buckets[i]
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads MarshalJSON's form: null is -Inf as the first
// boundary and +Inf as the last, and nowhere else; boundaries must rise
// and number one more than the counts (or none, without counts).
func (h *Histogram) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*h = Histogram{}
		return nil
	}
	var j histogramJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if len(j.Buckets) != len(j.Counts)+1 && (len(j.Buckets) > 0 || len(j.Counts) > 0) {
		return fmt.Errorf("histogram: %d boundaries for %d counts (want %d)", len(j.Buckets), len(j.Counts), len(j.Counts)+1)
	}
	out := Histogram{Counts: j.Counts, Buckets: make([]float64, len(j.Buckets))}
	for i, p := range j.Buckets {
		switch {
		case p != nil:
			out.Buckets[i] = *p
		case i == 0:
			out.Buckets[i] = math.Inf(-1)
		case i == len(j.Buckets)-1:
			out.Buckets[i] = math.Inf(1)
		default:
			return fmt.Errorf("histogram: boundary %d of %d is null (only the first and the last may be infinite)", i, len(j.Buckets))
		}
		if i > 0 && !(out.Buckets[i] > out.Buckets[i-1]) {
			return fmt.Errorf("histogram: boundary %d (%g) is not above the one before (%g)", i, out.Buckets[i], out.Buckets[i-1])
		}
	}
	if len(out.Counts) == 0 {
		out = Histogram{}
	}
	*h = out
	return nil
}

// Sub is h's change since before, a histogram of the same buckets with no
// count above h's; an empty before is no change.
func (h Histogram) Sub(before Histogram) (Histogram, error) {
	if len(before.Counts) == 0 {
		return h, nil
	}
	if !slices.Equal(h.Buckets, before.Buckets) {
		return Histogram{}, fmt.Errorf("histogram buckets changed (%d boundaries, were %d)", len(h.Buckets), len(before.Buckets))
	}
	d := Histogram{Counts: make([]uint64, len(h.Counts)), Buckets: h.Buckets}
	for i, n := range h.Counts {
		if n < before.Counts[i] {
			return Histogram{}, fmt.Errorf("histogram bucket %d went down from %d to %d", i, before.Counts[i], n)
		}
		d.Counts[i] = n - before.Counts[i]
	}
	return d, nil
}

// Total is the number of values in h.
func (h Histogram) Total() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile is the q-quantile (0 < q <= 1; 1 is the max) of h's values as
// the upper bound of the bucket that holds it, a value it does not pass
// (from 256 ns up, the runtime's time buckets are at most 25% wider than
// their lower bound); the last bucket's lower bound where that bucket is
// open (+Inf). NaN when h is empty or q is outside (0, 1].
func (h Histogram) Quantile(q float64) float64 {
	total := h.Total()
	if total == 0 || !(q > 0 && q <= 1) {
		return math.NaN()
	}
	// The rank-th smallest value, from 1; the epsilon keeps a product
	// such as 0.07*100 (7.000000000000001 in binary) from a rank too high.
	rank := uint64(math.Ceil(q*float64(total) - 1e-9))
	rank = min(max(rank, 1), total)
	var seen uint64
	for i, c := range h.Counts {
		if seen += c; seen >= rank {
			if upper := h.Buckets[i+1]; !math.IsInf(upper, 1) {
				return upper
			}
			return h.Buckets[i]
		}
	}
	return math.NaN() // not reached: seen ends at total
}
