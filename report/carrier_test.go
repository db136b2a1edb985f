package report

import (
	"math"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
)

// CarrierFiguresOf gives the ring figures of io_uring carriers and leaves
// them missing (NaN, null in JSON) for epoll ones.
func TestCarrierFiguresRing(t *testing.T) {
	epoll := carrier.Telemetry{IOCycles: 10, IOEvents: 20}
	uring := carrier.Telemetry{IOCycles: 10, RingEnters: 50, RingSubmissions: 100}
	uring.RingCompletions.Buckets[1], uring.RingCompletions.Sum = 30, 30 // 30 passes that reaped 1 CQE each
	tests := []struct {
		name         string
		ts           []carrier.Telemetry
		enters, subs float64 // NaN: missing
	}{
		{"epoll", []carrier.Telemetry{epoll}, math.NaN(), math.NaN()},
		{"io_uring, two carriers", []carrier.Telemetry{uring, uring}, 100 * 5, 2},
	}
	for _, tc := range tests {
		f := CarrierFiguresOf(tc.ts, 2*time.Second)
		got := []float64{float64(f.RingEntersPer10s), float64(f.SubmissionsPerEnter)}
		want := []float64{tc.enters, tc.subs}
		for i := range got {
			if math.IsNaN(want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(want[i]) && got[i] != want[i]) {
				t.Errorf("%s: figure %d = %v, want %v", tc.name, i, got[i], want[i])
			}
		}
		if cpp := float64(f.CompletionsPerPass); math.IsNaN(tc.enters) != math.IsNaN(cpp) || (!math.IsNaN(cpp) && cpp != 1) {
			t.Errorf("%s: completions per pass %v", tc.name, f.CompletionsPerPass)
		}
	}
}
