package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/internal/rtmetrics"
)

// RuntimeFile is the Go runtime's view of the server over the observers'
// window in a result directory: the difference of its /debug/runtime at
// the window's ends (rtmetrics.Snapshot, the histograms' buckets kept)
// and the figures (RuntimeFigures) summary.json holds.
const RuntimeFile = "runtime.json"

// RuntimeFigures are the Go runtime's view of the server process over the
// observers' window, from the difference of its runtime/metrics at the
// window's ends: what a stall's cause shows in (a GC cycle, forced or
// not, the GC's share of the CPU, a stop-the-world pause, goroutines that
// waited to run). Latencies are the upper bounds of the runtime's
// histogram buckets (rtmetrics.Histogram.Quantile): at most 25% over the
// value from 256 ns up. A figure the window has no value for (no GC
// pause) is NaN, null in JSON.
type RuntimeFigures struct {
	// Window is the time between the two snapshots, ns in JSON.
	Window time.Duration `json:"window_ns"`
	// GOMAXPROCS at the window's end.
	GOMAXPROCS int `json:"gomaxprocs"`
	// GCCycles completed in the window; GCCyclesForced of them forced
	// (runtime.GC, debug.FreeOSMemory).
	GCCycles       uint64 `json:"gc_cycles"`
	GCCyclesForced uint64 `json:"gc_cycles_forced"`
	// GCCPUShare is the GC's CPU time (assists, workers, pauses) over all
	// the CPU time GOMAXPROCS made available in the window (the runtime's
	// /cpu/classes/total: GOMAXPROCS × window, idle time included);
	// GCAssistShare the assists' part, taken from the goroutines that
	// allocated.
	GCCPUShare    Num `json:"gc_cpu_share"`
	GCAssistShare Num `json:"gc_assist_share"`
	// GCPauseP99Us and GCPauseMaxUs are the GC's stop-the-world pauses in
	// the window, µs.
	GCPauseP99Us Num `json:"gc_pause_p99_us"`
	GCPauseMaxUs Num `json:"gc_pause_max_us"`
	// SchedLatencyP99Us and SchedLatencyMaxUs are how long goroutines sat
	// runnable before they ran, µs.
	SchedLatencyP99Us Num `json:"sched_latency_p99_us"`
	SchedLatencyMaxUs Num `json:"sched_latency_max_us"`
}

// RuntimeFiguresOf is the figures of d, the difference of two snapshots
// window apart (rtmetrics.Snapshot.Sub).
func RuntimeFiguresOf(d rtmetrics.Snapshot, window time.Duration) RuntimeFigures {
	const usPerS = 1e6
	share := func(cpu float64) Num {
		if d.TotalCPUSeconds <= 0 {
			return Num(math.NaN())
		}
		return Num(cpu / d.TotalCPUSeconds)
	}
	us := func(h rtmetrics.Histogram, q float64) Num { return Num(h.Quantile(q) * usPerS) }
	return RuntimeFigures{
		Window: window, GOMAXPROCS: int(d.GOMAXPROCS), GCCycles: d.GCCycles, GCCyclesForced: d.GCCyclesForced,
		GCCPUShare: share(d.GCCPUSeconds), GCAssistShare: share(d.GCAssistCPUSeconds),
		GCPauseP99Us: us(d.GCPauses, 0.99), GCPauseMaxUs: us(d.GCPauses, 1),
		SchedLatencyP99Us: us(d.SchedLatencies, 0.99), SchedLatencyMaxUs: us(d.SchedLatencies, 1),
	}
}

// runtimeColumns are the runtime table's figures after the configuration:
// heading, decimals, the figure of a run's RuntimeFigures, and why a run
// with figures may lack it ("": it never does). A group without any
// figures says why in every cell.
var runtimeColumns = []struct {
	head  string
	prec  int
	get   func(*RuntimeFigures) float64
	empty string
}{
	{"GOMAXPROCS", 0, func(f *RuntimeFigures) float64 { return float64(f.GOMAXPROCS) }, ""},
	{"GC cycles", 0, func(f *RuntimeFigures) float64 { return float64(f.GCCycles) }, ""},
	{"of them forced", 0, func(f *RuntimeFigures) float64 { return float64(f.GCCyclesForced) }, ""},
	{"GC CPU %", 2, func(f *RuntimeFigures) float64 { return 100 * float64(f.GCCPUShare) }, "no CPU time counted"},
	{"GC assist CPU %", 2, func(f *RuntimeFigures) float64 { return 100 * float64(f.GCAssistShare) }, "no CPU time counted"},
	{"GC pause p99 µs", 1, func(f *RuntimeFigures) float64 { return float64(f.GCPauseP99Us) }, "no GC pause in the window"},
	{"GC pause max µs", 1, func(f *RuntimeFigures) float64 { return float64(f.GCPauseMaxUs) }, "no GC pause in the window"},
	{"sched latency p99 µs", 1, func(f *RuntimeFigures) float64 { return float64(f.SchedLatencyP99Us) }, "no goroutine scheduled"},
	{"sched latency max µs", 1, func(f *RuntimeFigures) float64 { return float64(f.SchedLatencyMaxUs) }, "no goroutine scheduled"},
}

// runtimeNA is why g's runs have no runtime figures: the reason a run
// recorded, else that its results predate them.
func (g *Group) runtimeNA() string {
	switch {
	case g.NA["runtime"] != "":
		return g.NA["runtime"]
	case g.Runs == 0:
		return "no complete run"
	}
	return "not recorded: an older result"
}

// writeRuntime writes a phase's table of the Go runtime's view of the
// server (RuntimeFigures), medians over rounds with (min–max).
func writeRuntime(b *strings.Builder, gs []*Group) {
	b.WriteString("Go runtime of the server (its runtime/metrics over the observers' window, from /debug/runtime): GC cycles " +
		"(forced: runtime.GC, debug.FreeOSMemory), the GC's CPU as a share of the CPU time GOMAXPROCS made available " +
		"(GOMAXPROCS × window, idle included; assists: the part taken from allocating goroutines), its stop-the-world " +
		"pauses, and how long goroutines sat runnable before they ran. Latencies are the upper bounds of the runtime's " +
		"histogram buckets (at most 25% over the value from 256 ns up).\n\n")
	b.WriteString("| configuration |")
	for _, c := range runtimeColumns {
		b.WriteString(" " + c.head + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(runtimeColumns)) + "\n")
	for _, g := range gs {
		fmt.Fprintf(b, "| %s |", g.Name)
		had := g.stat(runtimeFig(func(*RuntimeFigures) float64 { return 1 })).N > 0
		for _, c := range runtimeColumns {
			why := c.empty
			if !had { // every cell says why, as the other tables' do: never a bare n/a
				why = g.runtimeNA()
			}
			fmt.Fprintf(b, " %s |", g.stat(runtimeFig(c.get)).Format(c.prec, why))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// runtimeFig reads a runtime figure of a run, NaN when the run has none.
func runtimeFig(f func(*RuntimeFigures) float64) func(Summary) float64 {
	return func(s Summary) float64 {
		if s.Runtime == nil {
			return math.NaN()
		}
		return f(s.Runtime)
	}
}
