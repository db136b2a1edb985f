package spectrum

import (
	"encoding/json"
	"math"

	"github.com/spindle-lab/spindle/quantile"
)

// Figure is a metric over the repeats of a cell: the median with the
// minimum and maximum, or NA with the reason it cannot be had.
type Figure struct {
	Median, Min, Max float64
	N                int    // repeats that gave a value
	NA               string // "n/a (reason)" when N is 0
	// Inapplicable marks a metric that does not apply to the cell (wake
	// latency without bursts): NA then says "not applicable (why)".
	Inapplicable bool
}

func notApplicable(why string) Figure {
	return Figure{NA: "not applicable (" + why + ")", Inapplicable: true}
}

// MarshalJSON writes {"median","min","max","n"} or {"na": reason}.
func (f Figure) MarshalJSON() ([]byte, error) {
	if f.N == 0 {
		return json.Marshal(struct {
			NA string `json:"na"`
		}{f.NA})
	}
	return json.Marshal(struct {
		Median float64 `json:"median"`
		Min    float64 `json:"min"`
		Max    float64 `json:"max"`
		N      int     `json:"n"`
	}{f.Median, f.Min, f.Max, f.N})
}

// figureOf summarises vals, ignoring NaN (a repeat without the value); na
// is the reason shown when no value is left.
func figureOf(vals []float64, na string) Figure {
	s := quantile.Of(vals)
	if s.N == 0 {
		return Figure{NA: "n/a (" + na + ")"}
	}
	return Figure{Median: s.Median, Min: s.Min, Max: s.Max, N: s.N}
}

// Result is a cell with its figures over the repeats.
type Result struct {
	Cell
	Error string `json:"error,omitempty"`
	// FgMops is foreground throughput, Mop/s (one op: one 16x16 matmul).
	FgMops Figure `json:"fg_mops"`
	// FgRel is FgMops over the baseline's in the same repeat.
	FgRel Figure `json:"fg_rel"`
	// BgMpps is background pseudo packets, millions per second.
	BgMpps Figure `json:"bg_mpps"`
	// BgMops is the matmul background's throughput, Mop/s.
	BgMops Figure `json:"bg_mops"`
	// WakeP50 and WakeP99 are wake latencies in µs: from the driver's flip
	// to busy to the background thread seeing it.
	WakeP50 Figure `json:"wake_p50_us"`
	WakeP99 Figure `json:"wake_p99_us"`
	// BgCPU is background CPU time per thread, percent of one CPU.
	BgCPU Figure `json:"bg_cpu_pct"`
	// CtxSwitches are background context switches per second.
	CtxSwitches Figure `json:"bg_ctx_switches_per_s"`
	// WaitCost is the background's waiting cost per thread, percent of
	// one CPU: CPU time not spent on packets plus B per block-and-wake.
	WaitCost Figure `json:"wait_cost_pct"`
	Watts    Figure `json:"package_watts"`
	GHz      Figure `json:"fg_ghz"`
	// Steal is the share of the cell's CPUs' time the hypervisor took.
	Steal Figure `json:"steal_pct"`
	// DriverLate is the burst driver's mean flip delay, µs.
	DriverLate Figure `json:"driver_late_us"`
	// BusyShare is the share of the run the line was busy as the driver
	// achieved it, percent (the pattern's ratio asks 10, 50 or 90).
	BusyShare Figure `json:"busy_share_pct"`
	// DriverCPU is the burst driver's CPU time, percent of one CPU: what
	// its spin costs the CPU it runs on.
	DriverCPU Figure `json:"driver_cpu_pct"`
	// Rounds are the cell's runs in round order (round i of every cell ran
	// in the same pass), for analysis past the medians, such as the
	// verdict's paired tests.
	Rounds []Sample `json:"rounds,omitempty"`
}

func (r *Result) summarise(ss, base []Sample, e *Env) {
	get := func(f func(Sample) float64) []float64 {
		out := make([]float64, len(ss))
		for i, s := range ss {
			out[i] = f(s)
		}
		return out
	}
	// only returns the figure where cond holds, else "not applicable".
	only := func(cond bool, why string, f func(Sample) float64, na string) Figure {
		if !cond {
			return notApplicable(why)
		}
		return figureOf(get(f), na)
	}
	hasBG := len(r.BG) > 0
	waiting := hasBG && r.Mode != ModeMatmul && r.Mode != ModeWork
	r.FgMops = figureOf(get(func(s Sample) float64 { return s.FgMops }), "no run")
	if r.Mode == "" {
		r.FgRel = notApplicable("this is the baseline")
	} else {
		rel := make([]float64, len(ss))
		for i, s := range ss {
			rel[i] = math.NaN()
			if i < len(base) && base[i].FgMops > 0 {
				rel[i] = s.FgMops / base[i].FgMops
			}
		}
		r.FgRel = figureOf(rel, "the baseline did not run")
	}
	packets := r.Mode == ModeWork || (waiting && r.Pattern != nil)
	r.BgMpps = only(packets, "no packets: no bursts, or a compute background", func(s Sample) float64 { return s.BgMpps }, "")
	r.BgMops = only(r.Mode == ModeMatmul, "not a matmul background", func(s Sample) float64 { return s.BgMops }, "")
	wakes := waiting && r.Pattern != nil
	wakeNA := "no busy period was seen"
	r.WakeP50 = only(wakes, "no bursts to wake for", func(s Sample) float64 { return s.WakeP50 }, wakeNA)
	r.WakeP99 = only(wakes, "no bursts to wake for", func(s Sample) float64 { return s.WakeP99 }, wakeNA)
	r.BgCPU = only(hasBG, "no background", func(s Sample) float64 { return s.BgCPU }, "")
	r.CtxSwitches = only(hasBG, "no background", func(s Sample) float64 { return s.CtxSwitches }, "")
	r.WaitCost = only(waiting, "no waiting background", func(s Sample) float64 { return s.WaitCost }, "")
	r.Watts = figureOf(get(func(s Sample) float64 { return s.Watts }), e.PowerNA)
	r.GHz = figureOf(get(func(s Sample) float64 { return s.GHz }), e.FreqNA)
	r.Steal = figureOf(get(func(s Sample) float64 { return s.Steal }), "no /proc/stat steal for these CPUs")
	r.DriverLate = only(r.Pattern != nil, "no burst driver", func(s Sample) float64 { return float64(s.Late) / 1e3 }, "")
	r.BusyShare = only(r.Pattern != nil, "no burst driver", func(s Sample) float64 { return s.BusyShare }, "no busy period")
	r.DriverCPU = only(r.Pattern != nil, "no burst driver", func(s Sample) float64 { return s.DriverCPU }, "getrusage of the driver thread failed")
}
