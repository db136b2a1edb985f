package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/spindle-lab/spindle/cpu"
)

// The checks a complete run must pass before its figures count (Check).
const (
	// MinAchievedShare: a fixed-rate run must achieve 95% of its rate.
	// One that fell further behind ran at another load than the runs it
	// is compared with (the server or the load generator saturated).
	MinAchievedShare = 0.95
	// MaxErrorShare: at most 1% of the requests may fail; beyond, the
	// latency and CPU figures describe failing requests, not the design.
	MaxErrorShare = 0.01
	// MaxOtherCPUs: other work on the machine may take at most half a
	// CPU in the observers' window: on the 2 to 4 CPUs a layout commonly
	// has, that is an eighth to a quarter of the machine taken from the
	// run, more than the differences the findings look for.
	MaxOtherCPUs = 0.5
	// MaxLoadBusy: the load generator may use at most 90% of its CPUs; a
	// saturated load generator makes the run load-bound, measuring the
	// load generator rather than the server.
	MaxLoadBusy = 0.9
	// MaxLoadWaitPct: the load generator's busy threads may wait at most
	// 25% of the time for a CPU (%wait); beyond, it sends late and its
	// own queueing dominates the latency it records.
	MaxLoadWaitPct = 25.0
)

// Check returns why a complete run's figures must not count, "" when it
// passes every check: the fixed rate achieved (except by a sweep's
// points), few errors, little other
// load on the machine, and a load generator with CPU to spare. A check
// whose figure the run lacks (no /proc sampling, no other-load gauge)
// passes; the report says which figures are missing.
func Check(s Summary) string {
	var why []string
	// A sweep point past saturation falls behind by design: it is plotted
	// at what it achieved, and capacity requires the rate achieved.
	if s.Rate > 0 && !IsSweepPhase(s.Phase) && s.Throughput < MinAchievedShare*float64(s.Rate) {
		why = append(why, fmt.Sprintf("achieved %.0f of %d req/s (%.0f%%, under %.0f%%)",
			s.Throughput, s.Rate, 100*s.Throughput/float64(s.Rate), 100*MinAchievedShare))
	}
	if total := s.Requests + s.Errors; total > 0 && float64(s.Errors) > MaxErrorShare*float64(total) {
		why = append(why, fmt.Sprintf("%d errors in %d requests (over %.0f%%)", s.Errors, total, 100*MaxErrorShare))
	}
	if s.OtherCPUs != nil && *s.OtherCPUs > MaxOtherCPUs {
		why = append(why, fmt.Sprintf("other load on the machine %.2f CPUs (over %.1f)", *s.OtherCPUs, MaxOtherCPUs))
	}
	if l := s.Load; l != nil {
		if set, err := cpu.ParseList(s.LoadCPUs); err == nil && len(set) > 0 && l.CPUs > MaxLoadBusy*float64(len(set)) {
			why = append(why, fmt.Sprintf("the load generator used %.2f of its %d CPUs (over %.0f%%): the run is load-bound",
				l.CPUs, len(set), 100*MaxLoadBusy))
		}
		if l.WaitPct > MaxLoadWaitPct {
			why = append(why, fmt.Sprintf("the load generator's threads waited %.0f%% of the time for a CPU (over %.0f%%)",
				l.WaitPct, MaxLoadWaitPct))
		}
	}
	return strings.Join(why, "; ")
}

// LeftOut is a complete run that failed a check (Check): shown, and left
// out of every figure and verdict.
type LeftOut struct {
	Result
	Why string
}

// NearSaturation is the load factor above which a configuration at the
// fixed rate is flagged: above 85% of its own max throughput, queueing
// grows steeply and small changes in capacity move latency a lot.
const NearSaturation = 0.85

// loadFactor is the fixed rate over g's own median max throughput (NaN
// when either is unknown).
func (r *Report) loadFactor(g *Group) float64 {
	m := r.Find(PhaseMax, g.Name)
	if g.Phase != PhaseFixed || g.Rate <= 0 || m == nil || m.Throughput.N == 0 || m.Throughput.Median <= 0 {
		return math.NaN()
	}
	return float64(g.Rate) / m.Throughput.Median
}
