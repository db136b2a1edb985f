package report

import (
	"fmt"
	"strings"

	"spindle/cpu"
)

// Verdicts of a finding.
const (
	Confirmed     = "confirmed"
	Refuted       = "refuted"
	NotMeasurable = "not measurable here"
)

// Finding is one claim of the scheduler study checked against the results.
type Finding struct {
	// Claim is the study's claim, with the study's figures.
	Claim string
	// Verdict is Confirmed, Refuted or NotMeasurable.
	Verdict string
	// Figures are this machine's figures behind the verdict, or why they
	// cannot be had.
	Figures string
}

// Names of the configurations the findings compare (as in bench.Variants).
const (
	baseline = "nethttp"
	unpinned = "carrier"
	pinned   = "carrier+pinning"
)

// Findings checks the study's claims. Latency, CPU and scheduling claims
// are the study's at 70% load, so they use the "fixed" phase; the
// throughput claim uses "max".
func (r *Report) Findings() []Finding {
	return []Finding{
		r.claimUnpinnedWorse(),
		r.claimPinningFixes(),
		r.claimFewerSwitches(),
		r.claimPinningCycles(),
		r.claimBaselineThreads(),
		r.claimMaxThroughput(),
	}
}

// need returns the groups of names in phase, or a finding saying which is
// missing.
func (r *Report) need(claim, phase string, names ...string) ([]*Group, *Finding) {
	gs := make([]*Group, len(names))
	for i, n := range names {
		gs[i] = r.Find(phase, n)
		if gs[i] == nil || gs[i].Runs == 0 {
			return nil, &Finding{Claim: claim, Verdict: NotMeasurable,
				Figures: fmt.Sprintf("no complete %s run at %s", n, phaseLabel(phase))}
		}
	}
	return gs, nil
}

func phaseLabel(p string) string {
	switch p {
	case "max":
		return "max throughput"
	case "fixed":
		return "the fixed rate"
	}
	return "phase " + p
}

// ms renders a latency stat.
func ms(s Stat) string { return s.Format(2, "no latency") + " ms" }

// verdict is Confirmed when ok, else Refuted.
func verdict(ok bool) string {
	if ok {
		return Confirmed
	}
	return Refuted
}

// overlap notes when two stats' ranges over rounds overlap: the ordering of
// medians may then be noise.
func overlap(a, b Stat) string {
	if a.N > 1 && b.N > 1 && a.Min <= b.Max && b.Min <= a.Max {
		return "; the ranges over rounds overlap"
	}
	return ""
}

func (r *Report) claimUnpinnedWorse() Finding {
	claim := "At 70% load the unpinned carrier's p50 is worse than the work-stealing baseline's (study: 3.80 ms vs 1.20 ms)"
	gs, f := r.need(claim, "fixed", unpinned, baseline)
	if f != nil {
		return *f
	}
	c, b := gs[0], gs[1]
	if c.P50.N == 0 || b.P50.N == 0 {
		return Finding{claim, NotMeasurable, "no latency recorded"}
	}
	return Finding{claim, verdict(c.P50.Median > b.P50.Median),
		fmt.Sprintf("p50 carrier %s, nethttp %s at %d req/s%s", ms(c.P50), ms(b.P50), c.Rate, overlap(c.P50, b.P50))}
}

// serverCPUs counts the CPUs of a group's server set (0 if unknown).
func serverCPUs(g *Group) int {
	s, err := cpu.ParseList(g.ServerCPUs)
	if err != nil {
		return 0
	}
	return len(s)
}

// onePerCarrier explains why pinning cannot be measured: with one server
// CPU, unpinned carriers have nowhere to migrate.
func onePerCarrier(g *Group) string {
	if n := serverCPUs(g); n < 2 {
		return fmt.Sprintf("the server has %d CPU (%s), so unpinned carriers cannot migrate and pinning changes nothing", n, g.ServerCPUs)
	}
	return ""
}

func (r *Report) claimPinningFixes() Finding {
	claim := "Pinning each carrier to its own CPU fixes it: p50 drops below the baseline's (study: 3.80 -> 1.16 ms, nethttp 1.20 ms)"
	gs, f := r.need(claim, "fixed", pinned, unpinned, baseline)
	if f != nil {
		return *f
	}
	p, c, b := gs[0], gs[1], gs[2]
	figs := fmt.Sprintf("p50 carrier+pinning %s, carrier %s, nethttp %s", ms(p.P50), ms(c.P50), ms(b.P50))
	if why := onePerCarrier(c); why != "" {
		return Finding{claim, NotMeasurable, figs + "; " + why}
	}
	if p.P50.N == 0 || c.P50.N == 0 || b.P50.N == 0 {
		return Finding{claim, NotMeasurable, "no latency recorded"}
	}
	return Finding{claim, verdict(p.P50.Median < c.P50.Median && p.P50.Median <= b.P50.Median), figs + overlap(p.P50, c.P50)}
}

func (r *Report) claimFewerSwitches() Finding {
	claim := "Carriers use fewer context switches and less CPU than the baseline (study: 9,207/s vs 28,169/s; 1.51 vs 1.80 CPUs)"
	gs, f := r.need(claim, "fixed", unpinned, baseline)
	if f != nil {
		return *f
	}
	c, b := gs[0], gs[1]
	if c.CPUs.N == 0 || b.CPUs.N == 0 || c.ContextSwitches.N == 0 || b.ContextSwitches.N == 0 {
		g := c
		if c.CPUs.N > 0 && c.ContextSwitches.N > 0 {
			g = b
		}
		return Finding{claim, NotMeasurable, fmt.Sprintf("no CPU or context-switch figures for %s (perf stat: %s; /proc sampling: %s)",
			g.Name, g.naReason("perf-stat"), g.naReason("threads"))}
	}
	figs := fmt.Sprintf("context switches/s carrier %s, nethttp %s; CPUs carrier %s, nethttp %s (%s)",
		c.ContextSwitches.Format(0, ""), b.ContextSwitches.Format(0, ""),
		c.CPUs.Format(2, ""), b.CPUs.Format(2, ""), c.CPUSource)
	return Finding{claim, verdict(c.ContextSwitches.Median < b.ContextSwitches.Median && c.CPUs.Median < b.CPUs.Median), figs}
}

func (r *Report) claimPinningCycles() Finding {
	claim := "Pinning raises I/O cycles and lowers I/O events per cycle and queue depth (study: 247K -> 632K cycles/10s, 4.0 -> 1.6 events, depth 8 -> 1)"
	gs, f := r.need(claim, "fixed", unpinned, pinned)
	if f != nil {
		return *f
	}
	c, p := gs[0], gs[1]
	if c.IOCycles.N == 0 || p.IOCycles.N == 0 {
		return Finding{claim, NotMeasurable, "no carrier telemetry (" + c.NA["carrier"] + ")"}
	}
	figs := fmt.Sprintf("I/O cycles/10s %s -> %s; events/cycle %s -> %s; queue depth avg %s -> %s",
		c.IOCycles.Format(0, ""), p.IOCycles.Format(0, ""), c.EventsPerCycle.Format(2, ""), p.EventsPerCycle.Format(2, ""),
		c.QueueDepthAvg.Format(2, ""), p.QueueDepthAvg.Format(2, ""))
	if why := onePerCarrier(c); why != "" {
		return Finding{claim, NotMeasurable, figs + "; " + why}
	}
	ok := p.IOCycles.Median > c.IOCycles.Median && p.EventsPerCycle.Median < c.EventsPerCycle.Median &&
		p.QueueDepthAvg.Median < c.QueueDepthAvg.Median
	return Finding{claim, verdict(ok), figs}
}

func (r *Report) claimBaselineThreads() Finding {
	claim := "The baseline runs more threads, which wait longer for a CPU (study: 5 vs 3 threads; %wait 31% vs 11%)"
	gs, f := r.need(claim, "fixed", baseline, unpinned)
	if f != nil {
		return *f
	}
	b, c := gs[0], gs[1]
	if b.ActiveThreads.N == 0 || c.ActiveThreads.N == 0 {
		return Finding{claim, NotMeasurable, "per-thread sampling off (" + b.NA["threads"] + ")"}
	}
	figs := fmt.Sprintf("active threads nethttp %s, carrier %s; mean %%wait nethttp %s%%, carrier %s%%",
		b.ActiveThreads.Format(0, ""), c.ActiveThreads.Format(0, ""), b.WaitPct.Format(1, ""), c.WaitPct.Format(1, ""))
	ok := b.ActiveThreads.Median > c.ActiveThreads.Median && b.WaitPct.Median > c.WaitPct.Median
	return Finding{claim, verdict(ok), figs}
}

func (r *Report) claimMaxThroughput() Finding {
	claim := "Every carrier variant reaches a higher max throughput than the baseline (study: ~72K vs ~61K req/s, +15%)"
	b := r.Find("max", baseline)
	if b == nil || b.Throughput.N == 0 {
		return Finding{claim, NotMeasurable, "no complete nethttp run at max throughput"}
	}
	var parts []string
	ok, n := true, 0
	for _, g := range r.Groups {
		if g.Phase != "max" || g.Mode != unpinned || g.Throughput.N == 0 {
			continue
		}
		n++
		parts = append(parts, fmt.Sprintf("%s %s (%+.0f%%)", g.Name, g.Throughput.Format(0, ""),
			100*(g.Throughput.Median/b.Throughput.Median-1)))
		ok = ok && g.Throughput.Median > b.Throughput.Median
	}
	if n == 0 {
		return Finding{claim, NotMeasurable, "no complete carrier run at max throughput"}
	}
	return Finding{claim, verdict(ok), fmt.Sprintf("req/s nethttp %s; %s", b.Throughput.Format(0, ""), strings.Join(parts, ", "))}
}
