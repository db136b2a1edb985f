package report

import (
	"fmt"
	"math"
	"strings"
)

// MinEffect is the smallest relative difference between two
// configurations' medians that a finding calls a difference: 5%. Below
// it, even rounds that all agree are reported as inconclusive, since a
// few percent is the size of what changes between back-to-back runs of
// one configuration on a shared machine (the other-load column measures
// it), not a property of the design.
const MinEffect = 0.05

// order is what the runs say about one figure of configuration a against
// the same figure of configuration b.
type order int

const (
	unclear order = iota // the runs do not support a difference
	lower                // a is lower than b
	higher               // a is higher than b
)

// decide is the findings' rule. a and b are one figure of two
// configurations over their rounds, paired the per-round ratios a/b of the
// rounds both completed (their runs ran back to back). a is lower (or
// higher) than b only when both hold:
//
//  1. the ratio of the medians a.Median/b.Median is at least MinEffect
//     away from 1;
//  2. the rounds agree: with two or more paired rounds, every per-round
//     ratio lies on the same side of 1 as the ratio of the medians;
//     without, with two or more runs of each, the [min, max] ranges do not
//     overlap. A single run of either has no spread to judge a difference
//     against.
//
// Otherwise the order is unclear and why says which condition failed.
func decide(a, b, paired Stat) (o order, why string) {
	if a.N == 0 || b.N == 0 {
		return unclear, "no figures to compare"
	}
	if a.Median == b.Median {
		return unclear, "equal medians"
	}
	want := higher
	if a.Median < b.Median {
		want = lower
	}
	// b.Median is 0 only when a's is above it: the ratio is then +Inf,
	// which is a difference of any size.
	if ratio := a.Median / b.Median; math.Abs(ratio-1) < MinEffect {
		return unclear, fmt.Sprintf("medians within %.0f%% of each other", 100*MinEffect)
	}
	switch {
	case paired.N >= 2:
		if (want == lower && paired.Max < 1) || (want == higher && paired.Min > 1) {
			return want, ""
		}
		return unclear, "the per-round ratios are not all on one side of 1"
	case a.N >= 2 && b.N >= 2:
		if (want == lower && a.Max < b.Min) || (want == higher && a.Min > b.Max) {
			return want, ""
		}
		return unclear, "the ranges over rounds overlap"
	}
	return unclear, "a single run has no spread to judge a difference against"
}

// compared is one figure of two configurations and what decide makes of it.
type compared struct {
	what         string // the figure, as named in the finding
	aName, bName string
	prec         int // decimals of the figure
	a, b, paired Stat
	order        order
	why          string // when unclear
}

// compare applies decide to the figure f (NaN where a run lacks it) of
// groups a and b, both summarized from their runs and paired by round.
func compare(what string, prec int, a, b *Group, f func(Summary) float64) compared {
	c := compared{what: what, aName: a.Name, bName: b.Name, prec: prec,
		a: a.stat(f), b: b.stat(f), paired: a.Ratio(b, f)}
	c.order, c.why = decide(c.a, c.b, c.paired)
	return c
}

// note says why the comparison is unclear, with the ratio of the medians
// (and the per-round ratios' range where rounds pair) and both ranges:
// "p50 inconclusive: carrier/nethttp 1.04 (per round 0.97–1.10); carrier
// 1.10–1.35, nethttp 1.05–1.30: the per-round ratios are not all on one
// side of 1". It is "" when the runs decide.
func (c compared) note() string {
	if c.order != unclear {
		return ""
	}
	if c.a.N == 0 || c.b.N == 0 {
		return fmt.Sprintf("%s inconclusive: %s", c.what, c.why)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s inconclusive: %s/%s %.2f", c.what, c.aName, c.bName, c.a.Median/c.b.Median)
	if c.paired.N > 0 {
		lo, hi := fmt.Sprintf("%.2f", c.paired.Min), fmt.Sprintf("%.2f", c.paired.Max)
		if lo != hi {
			lo += "–" + hi
		}
		fmt.Fprintf(&b, " (per round %s)", lo)
	}
	fmt.Fprintf(&b, "; %s %.*f–%.*f, %s %.*f–%.*f: %s", c.aName, c.prec, c.a.Min, c.prec, c.a.Max,
		c.bName, c.prec, c.b.Min, c.prec, c.b.Max, c.why)
	return b.String()
}

// expect is one part of a claim: the order the claim states for a
// comparison. With orEqual the part holds unless the runs show the
// opposite order ("not worse than").
type expect struct {
	c       compared
	want    order
	orEqual bool
}

// judge turns the parts of a claim into its verdict: Refuted when the runs
// support the opposite order in any part, else Inconclusive when a part
// is unclear, else Confirmed. notes are the unclear parts' notes, "; "
// first, to append to the figures.
func judge(parts ...expect) (verdict, notes string) {
	refuted, unsure := false, false
	var b strings.Builder
	for _, p := range parts {
		switch p.c.order {
		case p.want:
		case unclear:
			if !p.orEqual {
				unsure = true
				b.WriteString("; " + p.c.note())
			}
		default:
			refuted = true
		}
	}
	switch {
	case refuted:
		return Refuted, b.String()
	case unsure:
		return Inconclusive, b.String()
	}
	return Confirmed, ""
}
