package load

import (
	"fmt"
	"sync"
	"time"

	"github.com/spindle-lab/spindle/latency"
)

// Interval histograms: each load thread records the corrected latency of
// the requests that complete in the current interval into a histogram of
// its own, and at the interval's end (seen by the completion or the
// housekeeping that comes first: within 10 ms) hands it to the collector,
// which merges the threads' histograms of an interval once all have handed
// theirs and calls the sink. Histograms go back to a pool, so that a long
// run allocates none once warm.

// ivPool holds empty interval histograms (latency.NewNs; about 190 kB each).
var ivPool = sync.Pool{New: func() any { return latency.NewNs() }}

// intervalHist is one thread's histogram of interval k.
type intervalHist struct {
	k int64
	h *latency.Histogram
}

// intervals is one thread's interval state. The thread alone uses all but
// mu and done.
type intervals struct {
	length int64 // ns; 0: no interval histograms
	measureAt,
	runEnd int64 // ns: the measured window
	k   int64              // index of the current interval
	end int64              // ns: end of the current interval
	h   *latency.Histogram // the current interval's; nil before start

	mu   sync.Mutex
	done []intervalHist // handed over, not yet collected
}

func (iv *intervals) start(measureAt, runEnd int64) {
	if iv.length == 0 {
		return
	}
	iv.measureAt, iv.runEnd = measureAt, runEnd
	iv.k, iv.end = 0, min(measureAt+iv.length, runEnd)
	iv.h = ivPool.Get().(*latency.Histogram)
}

// rotate hands over the intervals that ended by now. Completions after the
// run's end (the last event batch) stay in the last interval.
func (iv *intervals) rotate(now int64) {
	for now >= iv.end && iv.end < iv.runEnd {
		iv.handOver()
		iv.k++
		iv.end = min(iv.measureAt+(iv.k+1)*iv.length, iv.runEnd)
		iv.h = ivPool.Get().(*latency.Histogram)
	}
}

func (iv *intervals) handOver() {
	iv.mu.Lock()
	iv.done = append(iv.done, intervalHist{iv.k, iv.h})
	iv.mu.Unlock()
	iv.h = nil
}

// finish hands over the last interval, unless the run stopped before the
// measured window.
func (iv *intervals) finish(stopped int64) {
	if iv.h == nil {
		return
	}
	if stopped <= iv.measureAt {
		ivPool.Put(iv.h)
		iv.h = nil
		return
	}
	iv.handOver()
}

// take returns what the thread handed over since the last take.
func (iv *intervals) take(buf []intervalHist) []intervalHist {
	iv.mu.Lock()
	buf = append(buf, iv.done...)
	iv.done = iv.done[:0]
	iv.mu.Unlock()
	return buf
}

// intervalCollector merges the threads' interval histograms and calls the
// sink in interval order.
type intervalCollector struct {
	sink      func(start, end time.Time, h *latency.Histogram) error
	base      time.Time // wall time of clock 0
	length    int64
	measureAt int64
	pending   map[int64][]*latency.Histogram
	next      int64 // the next interval to emit
	err       error
	buf       []intervalHist
}

// collect takes what the workers handed over and emits the intervals that
// every worker has completed; with final (the workers have stopped), every
// interval left. No interval ends after limit (ns).
func (c *intervalCollector) collect(workers []*worker, final bool, limit int64) {
	for _, w := range workers {
		c.buf = w.iv.take(c.buf[:0])
		for _, ih := range c.buf {
			c.pending[ih.k] = append(c.pending[ih.k], ih.h)
		}
	}
	for len(c.pending) > 0 {
		hs, ok := c.pending[c.next]
		switch {
		case ok && (final || len(hs) == len(workers)):
			delete(c.pending, c.next)
			c.emit(c.next, hs, limit)
		case !ok && final: // no thread reached this interval: cannot happen, threads hand over every one
		default:
			return
		}
		c.next++
	}
}

func (c *intervalCollector) emit(k int64, hs []*latency.Histogram, limit int64) {
	merged := ivPool.Get().(*latency.Histogram)
	for _, h := range hs {
		if dropped := merged.Merge(h); dropped > 0 && c.err == nil {
			c.err = fmt.Errorf("interval %d: %d values out of range", k, dropped) // same range: cannot happen
		}
		h.Reset()
		ivPool.Put(h)
	}
	start := c.measureAt + k*c.length
	end := max(min(start+c.length, limit), start)
	if c.err == nil {
		if err := c.sink(c.base.Add(time.Duration(start)), c.base.Add(time.Duration(end)), merged); err != nil {
			c.err = fmt.Errorf("interval sink: %w", err)
		}
	}
	merged.Reset()
	ivPool.Put(merged)
}
