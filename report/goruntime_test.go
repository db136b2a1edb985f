package report

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/internal/rtmetrics"
)

func TestRuntimeFiguresOf(t *testing.T) {
	inf := math.Inf(1)
	// Bounds in seconds: 0, 10 µs, 100 µs, 1 ms, 100 ms, +Inf.
	buckets := []float64{-inf, 0, 10e-6, 100e-6, 1e-3, 100e-3, inf}
	h := func(counts ...uint64) rtmetrics.Histogram {
		return rtmetrics.Histogram{Counts: counts, Buckets: buckets}
	}
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		d    rtmetrics.Snapshot
		want RuntimeFigures
	}{
		{"a GC with a long pause, goroutines that waited",
			rtmetrics.Snapshot{GCPauses: h(0, 0, 99, 0, 1, 0), SchedLatencies: h(0, 990, 9, 1, 0, 0), GCCycles: 3, GCCyclesForced: 1,
				GCCPUSeconds: 0.05, GCAssistCPUSeconds: 0.01, TotalCPUSeconds: 2, GOMAXPROCS: 2},
			RuntimeFigures{GOMAXPROCS: 2, GCCycles: 3, GCCyclesForced: 1, GCCPUShare: 0.025, GCAssistShare: 0.005,
				GCPauseP99Us: 100, GCPauseMaxUs: 100_000, SchedLatencyP99Us: 10, SchedLatencyMaxUs: 1000}},
		{"no GC: no pause figures, shares of 0",
			rtmetrics.Snapshot{SchedLatencies: h(0, 5, 0, 0, 0, 0), TotalCPUSeconds: 1, GOMAXPROCS: 1},
			RuntimeFigures{GOMAXPROCS: 1, GCPauseP99Us: Num(nan), GCPauseMaxUs: Num(nan), SchedLatencyP99Us: 10, SchedLatencyMaxUs: 10}},
		{"no CPU time counted: no shares",
			rtmetrics.Snapshot{GOMAXPROCS: 1},
			RuntimeFigures{GOMAXPROCS: 1, GCCPUShare: Num(nan), GCAssistShare: Num(nan), GCPauseP99Us: Num(nan), GCPauseMaxUs: Num(nan),
				SchedLatencyP99Us: Num(nan), SchedLatencyMaxUs: Num(nan)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RuntimeFiguresOf(tc.d, 2*time.Second)
			tc.want.Window = 2 * time.Second
			same := func(a, b Num) bool {
				return math.IsNaN(float64(a)) && math.IsNaN(float64(b)) || math.Abs(float64(a-b)) <= 1e-9*math.Abs(float64(b))
			}
			if got.Window != tc.want.Window || got.GOMAXPROCS != tc.want.GOMAXPROCS || got.GCCycles != tc.want.GCCycles ||
				got.GCCyclesForced != tc.want.GCCyclesForced || !same(got.GCCPUShare, tc.want.GCCPUShare) ||
				!same(got.GCAssistShare, tc.want.GCAssistShare) || !same(got.GCPauseP99Us, tc.want.GCPauseP99Us) ||
				!same(got.GCPauseMaxUs, tc.want.GCPauseMaxUs) || !same(got.SchedLatencyP99Us, tc.want.SchedLatencyP99Us) ||
				!same(got.SchedLatencyMaxUs, tc.want.SchedLatencyMaxUs) {
				t.Errorf("RuntimeFiguresOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The runtime table: medians over the runs that have figures; a group
// without any says why once ("n/a (reason)", never 0), a figure a window
// had no value for says so.
func TestRuntimeTable(t *testing.T) {
	nan := Num(math.NaN())
	fig := func(cycles uint64, pauseMax Num) *RuntimeFigures {
		return &RuntimeFigures{GOMAXPROCS: 1, GCCycles: cycles, GCCPUShare: 0.02, GCAssistShare: 0.01, GCPauseP99Us: pauseMax,
			GCPauseMaxUs: pauseMax, SchedLatencyP99Us: 40.96, SchedLatencyMaxUs: 327.68}
	}
	run := func(r *RuntimeFigures, na string) Summary {
		s := Summary{Runtime: r}
		if na != "" {
			s.NA = map[string]string{"runtime": na}
		}
		return s
	}
	groups := []*Group{
		{Name: "two runs", Runs: 2, runs: []Summary{run(fig(4, 81.92), ""), run(fig(6, 6553.6), "")}},
		{Name: "no GC", Runs: 1, runs: []Summary{run(fig(0, nan), "")}},
		{Name: "no endpoint", Runs: 1, runs: []Summary{run(nil, "")}, NA: map[string]string{"runtime": "read /debug/runtime: 404 Not Found"}},
		{Name: "older", Runs: 1, runs: []Summary{run(nil, "")}, NA: map[string]string{}},
		{Name: "none passed", NA: map[string]string{}},
	}
	var b strings.Builder
	writeRuntime(&b, groups)
	md := b.String()
	for _, want := range []string{
		"| two runs | 1 | 5 (4–6) | 0 | 2.00 | 1.00 | 3317.8 (81.9–6553.6) | 3317.8 (81.9–6553.6) | 41.0 | 327.7 |\n",
		"| no GC | 1 | 0 | 0 | 2.00 | 1.00 | n/a (no GC pause in the window) | n/a (no GC pause in the window) | 41.0 | 327.7 |\n",
		// Every cell says why, never a bare n/a.
		"| no endpoint |" + strings.Repeat(" n/a (read /debug/runtime: 404 Not Found) |", len(runtimeColumns)) + "\n",
		"| older |" + strings.Repeat(" n/a (not recorded: an older result) |", len(runtimeColumns)) + "\n",
		"| none passed |" + strings.Repeat(" n/a (no complete run) |", len(runtimeColumns)) + "\n",
		"the upper bounds of the runtime's histogram buckets",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("runtime table lacks %q:\n%s", want, md)
		}
	}
}
