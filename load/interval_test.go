package load

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/latency"
)

// TestIntervalSink: the sink gets every interval of the measured window, in
// order, contiguous, and their counts add up to the corrected histogram's.
func TestIntervalSink(t *testing.T) {
	srv := startServer(t, answerOK)
	type got struct {
		start, end time.Time
		count      int64
	}
	for _, rate := range []float64{0, 400} {
		var ivs []got
		const interval = 100 * time.Millisecond
		r, err := Run(context.Background(), Options{
			URL: srv.url(), Threads: 2, Connections: 4, Duration: 550 * time.Millisecond, Warmup: 50 * time.Millisecond,
			Rate: rate, Timeout: time.Second, Interval: interval,
			IntervalSink: func(start, end time.Time, h *latency.Histogram) error {
				ivs = append(ivs, got{start, end, h.TotalCount()})
				return nil
			},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkAccounting(t, r)
		if len(ivs) != 6 {
			t.Fatalf("rate %g: %d intervals, want 6 (550 ms in 100 ms intervals): %+v", rate, len(ivs), ivs)
		}
		var total int64
		for i, iv := range ivs {
			total += iv.count
			length := iv.end.Sub(iv.start)
			if i < 5 && length != interval || i == 5 && (length <= 0 || length > 50*time.Millisecond) {
				t.Errorf("rate %g: interval %d is %s long", rate, i, length)
			}
			if i > 0 && !iv.start.Equal(ivs[i-1].end) {
				t.Errorf("rate %g: interval %d starts at %s, the previous ended at %s", rate, i, iv.start, ivs[i-1].end)
			}
		}
		if want := r.Start.Add(50 * time.Millisecond); ivs[0].start.Sub(want).Abs() > time.Microsecond {
			t.Errorf("rate %g: first interval starts %s, want the end of the warm-up %s", rate, ivs[0].start, want)
		}
		if total != r.Corrected.Count {
			t.Errorf("rate %g: intervals hold %d latencies, the corrected histogram %d", rate, total, r.Corrected.Count)
		}
	}
}

func TestIntervalSinkError(t *testing.T) {
	srv := startServer(t, answerOK)
	boom := errors.New("disk full")
	calls := 0
	r, err := Run(context.Background(), Options{
		URL: srv.url(), Threads: 1, Connections: 1, Duration: 300 * time.Millisecond, Rate: 100,
		Timeout: time.Second, Interval: 50 * time.Millisecond,
		IntervalSink: func(time.Time, time.Time, *latency.Histogram) error { calls++; return boom },
	}, nil)
	if !errors.Is(err, boom) || r == nil || calls != 1 {
		t.Errorf("sink error: result %v, error %v, %d calls; want the result, the error, one call", r != nil, err, calls)
	}
	if r != nil {
		checkAccounting(t, r)
	}
	o := Options{URL: srv.url(), Threads: 1, Connections: 1, Duration: time.Second, Timeout: time.Second, Interval: time.Microsecond}
	if err := o.Validate(); !errors.Is(err, ErrBadOptions) {
		t.Errorf("a 1 µs interval: %v, want ErrBadOptions", err)
	}
}
