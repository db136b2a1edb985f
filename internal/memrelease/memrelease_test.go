package memrelease

import (
	"strings"
	"testing"
	"time"
)

// TestWatcher drives a watcher with scripted open counts, one per period,
// and checks which periods collect (c) and free (f).
func TestWatcher(t *testing.T) {
	o := Options{Period: time.Second, Burst: 100, Delay: 2 * time.Second}
	tests := []struct {
		name   string
		counts []int64
		want   string // per period: "." nothing, "c" collect, "f" free; the first collection comes Delay after the period that saw the burst end
	}{
		{"no connections", []int64{0, 0, 0, 0, 0}, "....."},
		{"steady churn never releases", []int64{50, 80, 60, 90, 70, 50, 80, 60}, "........"},
		{"burst ends", []int64{0, 300, 300, 10, 10, 10, 10, 10}, ".....cf."},
		{"fall smaller than Burst", []int64{0, 90, 0, 0, 0, 0}, "......"},
		{"a quarter of the peak still open", []int64{0, 400, 101, 101, 101, 101}, "......"},
		{"down to a quarter", []int64{0, 400, 100, 100, 100, 100, 100}, "....cf."},
		{"two bursts, two releases", []int64{0, 300, 0, 0, 0, 0, 300, 300, 0, 0, 0, 0}, "....cf....cf"},
		{"a burst while releasing is counted after", []int64{0, 300, 0, 300, 0, 0, 0, 0, 0, 0}, "....cf..cf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				i   int
				got strings.Builder
			)
			w := New(func() int64 { return tt.counts[i] }, o)
			w.collect = func() { got.WriteByte('c') }
			w.free = func() { got.WriteByte('f') }
			for i = range tt.counts {
				n := got.Len()
				w.tick()
				if got.Len() == n {
					got.WriteByte('.')
				}
			}
			if got.String() != tt.want {
				t.Errorf("periods %q, want %q", got.String(), tt.want)
			}
			if want := int64(strings.Count(tt.want, "f")); w.Releases() != want {
				t.Errorf("Releases() = %d, want %d", w.Releases(), want)
			}
		})
	}
}

// TestRunStops: Run returns when done closes.
func TestRunStops(t *testing.T) {
	w := New(func() int64 { return 0 }, Options{Period: time.Millisecond})
	done, ended := make(chan struct{}), make(chan struct{})
	go func() { w.Run(done); close(ended) }()
	time.Sleep(5 * time.Millisecond)
	close(done)
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after done closed")
	}
}
