package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// DefaultSLOP99 is the latency objective of the capacity figure: the
// highest offered rate at which a configuration's p99 stays under 10 ms.
const DefaultSLOP99 = 10 * time.Millisecond

// CurvePoint is one configuration at one offered rate, over its rounds.
type CurvePoint struct {
	Phase string
	// Rate is the offered rate, req/s.
	Rate int
	// Throughput is the achieved rate; P50 and P99 the corrected
	// latency, ms.
	Throughput, P50, P99 Stat
	group                *Group
}

// Curve is one configuration's latency against load: its fixed-rate
// points (the fixed phase and the sweep's), by offered rate.
type Curve struct {
	Name   string
	Points []CurvePoint
	// Capacity is the highest offered rate at which p99 stays under the
	// objective at that rate and every lower one, by round (0 when it
	// exceeds it at the lowest rate); N is 0 when no round has points.
	Capacity Stat
}

// Curves returns the latency–load curve of each configuration with
// fixed-rate points in at least two phases (a sweep), in report order,
// and their capacity at slo (p99). None without a sweep.
func (r *Report) Curves(slo time.Duration) []Curve {
	var cs []Curve
	for _, g := range r.Groups {
		if g.Phase != PhaseFixed && !IsSweepPhase(g.Phase) || g.Rate <= 0 || g.Runs == 0 {
			continue
		}
		i := slices.IndexFunc(cs, func(c Curve) bool { return c.Name == g.Name })
		if i < 0 {
			cs = append(cs, Curve{Name: g.Name})
			i = len(cs) - 1
		}
		cs[i].Points = append(cs[i].Points, CurvePoint{Phase: g.Phase, Rate: g.Rate,
			Throughput: g.Throughput, P50: g.P50, P99: g.P99, group: g})
	}
	cs = slices.DeleteFunc(cs, func(c Curve) bool { return len(c.Points) < 2 })
	for i := range cs {
		c := &cs[i]
		slices.SortFunc(c.Points, func(a, b CurvePoint) int { return a.Rate - b.Rate })
		c.Capacity = capacity(c.Points, slo)
	}
	return cs
}

// capacity is, for each round, the highest offered rate whose run
// achieved it (MinAchievedShare) with p99 under slo, and every lower
// rate's run too, over rounds. A
// rate the round has no run for (incomplete or left out) is skipped.
func capacity(points []CurvePoint, slo time.Duration) Stat {
	rounds := map[int]bool{}
	for _, p := range points {
		for r := range p.group.byRound {
			rounds[r] = true
		}
	}
	limit := float64(slo.Microseconds()) / 1000 // ms
	var caps []float64
	for round := range rounds {
		best := 0.0
		for _, p := range points {
			s, ok := p.group.byRound[round]
			if !ok {
				continue
			}
			v := latencyMs("99")(s)
			if math.IsNaN(v) || v >= limit || s.Throughput < MinAchievedShare*float64(p.Rate) {
				break // over the objective, or the rate not sustained
			}
			best = float64(p.Rate)
		}
		caps = append(caps, best)
	}
	return statOf(caps)
}

// sloLabel renders an objective: "p99 < 10 ms".
func sloLabel(slo time.Duration) string {
	return fmt.Sprintf("p99 < %s ms", trimFloat(float64(slo.Microseconds())/1000))
}

// trimFloat renders v with up to 3 decimals and no trailing zeros.
func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// claimCapacity is the finding of the sweep: every carrier variant
// sustains a higher rate than the baseline within the latency objective.
func (r *Report) claimCapacity(slo time.Duration) (Finding, bool) {
	cs := r.Curves(slo)
	if len(cs) == 0 {
		return Finding{}, false
	}
	claim := fmt.Sprintf("Every carrier variant sustains a higher rate than the baseline with %s (capacity from the latency–load sweep)", sloLabel(slo))
	var base *Curve
	for i := range cs {
		if cs[i].Name == baseline {
			base = &cs[i]
		}
	}
	if base == nil {
		return Finding{Claim: claim, Verdict: NotMeasurable, Figures: "no nethttp sweep"}, true
	}
	fig := metric{name: "capacity", prec: 0, spread: minSpread}
	var parts []string
	var want []expect
	for _, c := range cs {
		if c.Name == baseline || r.modeOf(c.Name) != unpinned {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s", c.Name, c.Capacity.Format(0, "")))
		f := fig
		f.name = "capacity of " + c.Name
		cmp := compared{fig: f, aName: c.Name, bName: baseline, a: c.Capacity, b: base.Capacity,
			paired: pairedCapacity(c, *base, slo)}
		cmp.order, cmp.weak, cmp.why = decide(f, cmp.a, cmp.b, cmp.paired)
		want = append(want, expect{c: cmp, want: higher})
	}
	if len(want) == 0 {
		return Finding{Claim: claim, Verdict: NotMeasurable, Figures: "no carrier sweep"}, true
	}
	figs := fmt.Sprintf("capacity req/s nethttp %s; %s", base.Capacity.Format(0, ""), strings.Join(parts, ", "))
	return finding(claim, figs, judge(want...)), true
}

// pairedCapacity is the per-round ratio of two curves' capacities.
func pairedCapacity(a, b Curve, slo time.Duration) Stat {
	var vs []float64
	for round := range a.Points[0].group.byRound {
		ca := capacity(onlyRound(a.Points, round), slo)
		cb := capacity(onlyRound(b.Points, round), slo)
		if ca.N > 0 && cb.N > 0 && cb.Median > 0 {
			vs = append(vs, ca.Median/cb.Median)
		}
	}
	return statOf(vs)
}

// onlyRound keeps round's run in each point.
func onlyRound(ps []CurvePoint, round int) []CurvePoint {
	out := make([]CurvePoint, len(ps))
	for i, p := range ps {
		g := *p.group
		g.byRound = map[int]Summary{}
		if s, ok := p.group.byRound[round]; ok {
			g.byRound[round] = s
		}
		p.group = &g
		out[i] = p
	}
	return out
}

// modeOf is the server mode of a configuration name.
func (r *Report) modeOf(name string) string {
	for _, g := range r.Groups {
		if g.Name == name {
			return g.Mode
		}
	}
	return ""
}
