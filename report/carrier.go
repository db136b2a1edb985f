package report

import (
	"math"
	"time"

	"github.com/spindle-lab/spindle/carrier"
)

// CarrierFiguresOf sums per-carrier window telemetry (the differences of
// /debug/carrier over window) into the study's figures.
func CarrierFiguresOf(ts []carrier.Telemetry, window time.Duration) CarrierFigures {
	const nsPerUs = 1e3
	var tot carrier.Telemetry
	var slice uint64
	batched := math.NaN() // the carriers do not batch
	for _, t := range ts {
		tot = tot.Add(t)
		slice = max(slice, t.SliceNs)
		if t.OtherThreads > 0 && t.BatchedThreads >= 0 {
			batched = float64(t.BatchedThreads) / float64(t.OtherThreads) // the process's figure: the same for every carrier
		}
	}
	sliceUs := math.NaN() // reported by none
	if slice > 0 {
		sliceUs = float64(slice) / nsPerUs
	}
	per10s := func(n uint64) float64 { return float64(n) * (10 * time.Second).Seconds() / window.Seconds() }
	ringEnters, completions := math.NaN(), math.NaN() // epoll: no ring
	if tot.RingEnters > 0 {
		ringEnters, completions = per10s(tot.RingEnters), tot.RingCompletions.Mean()
	}
	return CarrierFigures{
		Carriers:         len(ts),
		IOCyclesPer10s:   Num(per10s(tot.IOCycles)),
		EventsPerCycle:   Num(tot.IOEventsPerCycle()),
		TasksPerDrain:    Num(tot.TasksPerDrain()),
		QueueDepthAvg:    Num(tot.QueueDepth.Mean()),
		QueueDepthP50:    Num(tot.QueueDepth.Quantile(0.5)),
		SubmitToRunP50Us: Num(tot.SubmitToRun.Quantile(0.5) / nsPerUs),
		SubmitToRunP99Us: Num(tot.SubmitToRun.Quantile(0.99) / nsPerUs),
		Steals:           tot.StealsIn,
		Migrations:       tot.MigrationsIn,
		SpunCPUs:         Num(float64(tot.SpunNs) / float64(window)),
		HandoffsPer10s:   Num(per10s(tot.Handoffs)),
		SliceUs:          Num(sliceUs),
		BatchedShare:     Num(batched),

		RingEntersPer10s:    Num(ringEnters),
		SubmissionsPerEnter: Num(tot.SubmissionsPerEnter()),
		CompletionsPerPass:  Num(completions),
	}
}
