package bench

import (
	"reflect"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag/cliflagtest"
	"github.com/spindle-lab/spindle/load"
)

// LoadArgs is "load", the flags that "spindle load" parses back into the
// configuration's load, and the URL last.
func TestLoadArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate int
	}{{"closed loop", 0}, {"fixed rate", 20000}} {
		c := Config{LoadThreads: 3, Connections: 120, Duration: 7 * time.Second, Warmup: 2 * time.Second,
			LoadCPUs: cpu.Set{0, 1}, Rate: tc.rate, ServerPort: 18081}
		a := LoadArgs(c, "r/load.json", "r/load", "r/load.hlog")
		if len(a) < 2 || a[0] != "load" || a[len(a)-1] != "http://127.0.0.1:18081/fruits" {
			t.Fatalf("%s: %q: want load ... URL", tc.name, a)
		}
		got := cliflagtest.Parse(t, (*load.Flags).Register, a[1:len(a)-1])
		want := load.DefaultFlags()
		want.Threads, want.Connections, want.Duration, want.Warmup, want.CPUs = 3, 120, 7*time.Second, 2*time.Second, cpu.Set{0, 1}
		want.Latency, want.JSON, want.Hgrm, want.Hlog = true, "r/load.json", "r/load", "r/load.hlog"
		want.HlogInterval = TimelineInterval
		if tc.rate > 0 {
			want.Rate, want.RateGiven = float64(tc.rate), true
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q parse to %+v, want %+v", tc.name, a, got, want)
		}
	}
}

// HlogInterval is TimelineInterval up to MaxTimelineIntervals of it, then
// the multiple of it that keeps the log within that many intervals.
func TestHlogInterval(t *testing.T) {
	for _, tc := range []struct {
		window, want time.Duration
	}{
		{0, 100 * time.Millisecond},
		{3 * time.Second, 100 * time.Millisecond},
		{time.Minute, 100 * time.Millisecond},
		{time.Minute + time.Millisecond, 200 * time.Millisecond},
		{10 * time.Minute, time.Second},
		{time.Hour, 6 * time.Second},
	} {
		got := HlogInterval(tc.window)
		if got != tc.want {
			t.Errorf("HlogInterval(%v) = %v, want %v", tc.window, got, tc.want)
		}
		if n := tc.window / got; n > MaxTimelineIntervals {
			t.Errorf("HlogInterval(%v) = %v: %d intervals, over %d", tc.window, got, n, MaxTimelineIntervals)
		}
	}
}
