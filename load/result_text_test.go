package load

import (
	"strings"
	"testing"

	"spindle/latency"
)

// WriteText prints wrk2's layout; a run in which no request completed has
// no latency to print, and says so instead of printing zeros.
func TestWriteText(t *testing.T) {
	empty, err := latency.Summarize(latency.New())
	if err != nil {
		t.Fatal(err)
	}
	h := latency.New()
	for _, us := range []int64{800, 1000, 1200} {
		h.RecordValue(us)
	}
	full, err := latency.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		r        Result
		want     []string
		wantNone []string
	}{
		{"no request completed",
			Result{Corrected: empty, Uncorrected: empty, InFlight: 100, Intended: 100, DurationS: 3},
			[]string{"Latency   " + latency.NoLatency, "  " + latency.NoLatency, "Unfinished: 100 in flight", "0 requests in 3.00s"},
			[]string{"0.00us", "50.000%"}},
		{"three requests",
			Result{Corrected: full, Uncorrected: full, Completed: 3, Intended: 3, DurationS: 3},
			[]string{"    Latency     1.00ms", " 50.000%    1.00ms", "3 requests in 3.00s"},
			[]string{latency.NoLatency, "Unfinished"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := tc.r.WriteText(&b, true, true); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantNone {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}
