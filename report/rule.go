package report

import (
	"fmt"
	"math"
	"strings"
)

// metric is one figure a claim compares, with its run-to-run spread.
type metric struct {
	name string // as named in the finding
	prec int    // decimals
	// spread is how far one configuration's median of this figure moves
	// between two comparisons on an unchanged machine: relative (0.30 is
	// 30%) unless absolute, then in the figure's own units (percentage
	// points of %wait). A difference smaller than it is weak evidence:
	// the next comparison may well show the opposite.
	spread   float64
	absolute bool
	unit     string // of an absolute figure: "points"
	// stat reads the figure of a group (for Spread).
	stat func(*Group) Stat
}

// The figures of the claims. A figure's spread here is the part of the
// run-to-run spread that one comparison cannot see: how far a
// configuration's median moves between two comparisons, beyond the
// rounds' own variation (which decide measures in each comparison, see
// noise). Each is the largest shift "spindle report --spread" measured
// between two back-to-back quick comparisons on the quiet 2-vCPU
// development machine (16 configuration-phase pairs, docs/PERFORMANCE.md,
// "Findings that hold up"), rounded up: a difference smaller than what two
// identical comparisons showed is graded weak (issue 12's busy-machine runs
// moved nethttp's %wait 4.6 points, under the 5.9 measured quietly);
// active threads keep their resolution, one thread.
var (
	figP50      = metric{name: "p50", prec: 2, spread: 0.45, stat: func(g *Group) Stat { return g.P50 }}
	figSwitches = metric{name: "context switches/s", prec: 0, spread: 0.60, stat: func(g *Group) Stat { return g.ContextSwitches }}
	figCPUs     = metric{name: "CPUs", prec: 2, spread: 0.35, stat: func(g *Group) Stat { return g.CPUs }}
	figCycles   = metric{name: "I/O cycles/10s", prec: 0, spread: 0.30, stat: func(g *Group) Stat { return g.IOCycles }}
	figEvents   = metric{name: "events/cycle", prec: 2, spread: 0.15, stat: func(g *Group) Stat { return g.EventsPerCycle }}
	figDepth    = metric{name: "queue depth avg", prec: 2, spread: 0.95, stat: func(g *Group) Stat { return g.QueueDepthAvg }}
	figThreads  = metric{name: "active threads", prec: 0, spread: 1, absolute: true, unit: "threads", stat: func(g *Group) Stat { return g.ActiveThreads }}
	figWait     = metric{name: "%wait", prec: 1, spread: 5.9, absolute: true, unit: "points", stat: func(g *Group) Stat { return g.WaitPct }}
	figReqs     = metric{name: "req/s", prec: 0, spread: 0.25, stat: func(g *Group) Stat { return g.Throughput }}
)

// claimFigures lists the figures the claims compare, for Spread.
var claimFigures = []metric{figP50, figSwitches, figCPUs, figCycles, figEvents, figDepth, figThreads, figWait, figReqs}

// minSpread is the smallest relative spread a figure is given: 5%, the
// size of what changes between back-to-back runs of one configuration
// even on a quiet machine.
const minSpread = 0.05

// order is what the runs say about one figure of configuration a against
// the same figure of configuration b.
type order int

const (
	unclear order = iota // the runs do not support a difference
	lower                // a is lower than b
	higher               // a is higher than b
)

// effect is the difference of two medians in the figure's terms: for a
// relative figure the factor by which the larger exceeds the smaller,
// less 1 (0.5 is "1.5 times"); for an absolute one, the difference in its
// units. It is +Inf when a relative figure's smaller median is 0.
func (f metric) effect(a, b float64) float64 {
	if f.absolute {
		return math.Abs(a - b)
	}
	lo, hi := min(a, b), max(a, b)
	if lo <= 0 {
		return math.Inf(1)
	}
	return hi/lo - 1
}

// floor is how far a difference between two configurations' medians can
// move between comparisons: each median may move by the figure's spread
// (at least minSpread for a relative figure), and in opposite directions,
// so a ratio by up to (1+spread)^2 and a difference by twice the spread.
func (f metric) floor() float64 {
	s := f.medianSpread()
	if f.absolute {
		return 2 * s
	}
	return (1+s)*(1+s) - 1
}

// medianSpread is how far one configuration's median moves between
// comparisons: the figure's spread, at least minSpread when relative.
func (f metric) medianSpread() float64 {
	if f.absolute {
		return f.spread
	}
	return max(f.spread, minSpread)
}

// noise is the run-to-run spread a difference of the medians of a and b
// must exceed, and where it comes from: the larger of the figure's floor
// (between comparisons) and this comparison's own spread. With paired
// rounds that is the spread of the per-round ratios (the paired test: a
// drift of the machine moves both runs of a round and cancels in their
// ratio); without, the wider of the two [min, max] ranges.
func (f metric) noise(a, b, paired Stat) (float64, string) {
	n, src := f.floor(), "between comparisons"
	var r float64
	var rsrc string
	if paired.N >= 2 {
		rsrc = "of the per-round ratios"
		r = math.Inf(1)
		if paired.Min > 0 {
			r = paired.Max/paired.Min - 1
		}
		if f.absolute { // the ratios' spread, in the figure's units at b's median
			r *= b.Median
		}
	} else {
		rsrc = "over rounds"
		r = max(f.effect(a.Min, a.Max), f.effect(b.Min, b.Max))
	}
	if r > n {
		n, src = r, rsrc
	}
	return n, src
}

// formatEffect renders an effect: "2.64x" or "1.4 points".
func (f metric) formatEffect(e float64) string {
	if f.absolute {
		return fmt.Sprintf("%.*f %s", f.prec, e, f.unit)
	}
	if math.IsInf(e, 1) {
		return "against 0"
	}
	return fmt.Sprintf("%.2fx", 1+e)
}

// decide is the findings' rule, a paired test over rounds with an effect
// size. a and b are one figure of two configurations over their rounds,
// paired the per-round ratios a/b of the rounds both completed (the runs
// of one round ran back to back). The runs show an order when the rounds
// agree on it: with two or more paired rounds, every per-round ratio lies
// on the same side of 1 as the ratio of the medians; without, with two or
// more runs of each, the [min, max] ranges do not overlap. A single run of
// either shows an order only as weak evidence, when the difference exceeds
// the run-to-run spread (noise): with no rounds to agree, it is the size
// alone that speaks. An order shown is
// weak when the difference of the medians (the effect) is smaller than
// the figure's run-to-run spread (see noise): two comparisons on an
// unchanged machine may then show opposite orders, and one of them says
// so.
//
// Otherwise the order is unclear and why says which condition failed.
func decide(f metric, a, b, paired Stat) (o order, weak bool, why string) {
	if a.N == 0 || b.N == 0 {
		return unclear, false, "no figures to compare"
	}
	if a.Median == b.Median {
		return unclear, false, "equal medians"
	}
	want := higher
	if a.Median < b.Median {
		want = lower
	}
	switch {
	case paired.N >= 2:
		if !((want == lower && paired.Max < 1) || (want == higher && paired.Min > 1)) {
			return unclear, false, "the per-round ratios are not all on one side of 1"
		}
	case a.N >= 2 && b.N >= 2:
		if !((want == lower && a.Max < b.Min) || (want == higher && a.Min > b.Max)) {
			return unclear, false, "the ranges over rounds overlap"
		}
	default:
		// A single run of either side cannot show that rounds agree; a
		// difference beyond what two comparisons of one configuration
		// differ by (and beyond the other side's own range) is still
		// evidence: an order, graded weak.
		e := f.effect(a.Median, b.Median)
		n, src := f.noise(a, b, paired)
		if e <= n {
			return unclear, false, fmt.Sprintf("a single run, and the difference (%s) is within the %s run-to-run spread (%s %s)",
				f.formatEffect(e), f.name, f.formatEffect(n), src)
		}
		return want, true, fmt.Sprintf("a single run cannot show the rounds agree, but the difference (%s) exceeds the %s run-to-run spread (%s %s)",
			f.formatEffect(e), f.name, f.formatEffect(n), src)
	}
	e := f.effect(a.Median, b.Median)
	if n, src := f.noise(a, b, paired); e < n {
		return want, true, fmt.Sprintf("the difference (%s) is under the %s run-to-run spread (%s %s)",
			f.formatEffect(e), f.name, f.formatEffect(n), src)
	}
	return want, false, ""
}

// compared is one figure of two configurations and what decide makes of it.
type compared struct {
	fig          metric
	aName, bName string
	a, b, paired Stat
	order        order
	weak         bool
	why          string // when unclear or weak
}

// compare applies decide to the figure fig, read from runs by f (NaN
// where a run lacks it), of groups a and b, summarized from their runs and
// paired by round.
func compare(fig metric, a, b *Group, f func(Summary) float64) compared {
	c := compared{fig: fig, aName: a.Name, bName: b.Name,
		a: a.stat(f), b: b.stat(f), paired: a.Ratio(b, f)}
	c.order, c.weak, c.why = decide(fig, c.a, c.b, c.paired)
	return c
}

// figures renders both sides and their ratio: "carrier 9106 (7691–9885),
// nethttp 3455 (2072–4665); carrier/nethttp 2.64 (per round 2.1–3.0)".
func (c compared) figures() string {
	prec := c.fig.prec
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s, %s %s", c.aName, c.a.Format(prec, ""), c.bName, c.b.Format(prec, ""))
	if c.a.N == 0 || c.b.N == 0 || c.b.Median == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "; %s/%s %.2f", c.aName, c.bName, c.a.Median/c.b.Median)
	if c.paired.N > 0 {
		lo, hi := fmt.Sprintf("%.2f", c.paired.Min), fmt.Sprintf("%.2f", c.paired.Max)
		if lo != hi {
			lo += "–" + hi
		}
		fmt.Fprintf(&b, " (per round %s)", lo)
	}
	return b.String()
}

// note says why the comparison is unclear or weak, with the figures:
// "p50 inconclusive: carrier 1.20 (1.10–1.35), nethttp ...: the per-round
// ratios are not all on one side of 1". It is "" when the runs decide
// firmly.
func (c compared) note() string {
	switch {
	case c.order == unclear && (c.a.N == 0 || c.b.N == 0):
		return fmt.Sprintf("%s inconclusive: %s", c.fig.name, c.why)
	case c.order == unclear:
		return fmt.Sprintf("%s inconclusive: %s: %s", c.fig.name, c.figures(), c.why)
	case c.weak:
		return fmt.Sprintf("%s weak: %s", c.fig.name, c.why)
	}
	return ""
}

// expect is one part of a claim: the order the claim states for a
// comparison. With orEqual the part holds unless the runs show the
// opposite order ("not worse than").
type expect struct {
	c       compared
	want    order
	orEqual bool
	// study is the study's own pair of figures for this part (a's, b's;
	// zero: none): when the rounds show no order but none comes near the
	// study's difference (shortOf), the part is refuted, weakly.
	study [2]float64
	// missing, when set, is why the part cannot be judged (its
	// configuration has no run that passed the checks): the claim is
	// judged in part, on the others, and the part named name is listed
	// "not measurable here".
	missing, name string
}

// Part is one part of a claim ("context switches/s" of "fewer context
// switches and less CPU") and its own verdict.
type Part struct {
	// Name is the figure compared.
	Name string `json:"name"`
	// Verdict is Confirmed, Refuted or Inconclusive; Weak marks one shown
	// by the rounds but smaller than the figure's run-to-run spread.
	Verdict string `json:"verdict"`
	Weak    bool   `json:"weak,omitempty"`
	// Figures are both configurations' figures and their ratio.
	Figures string `json:"figures"`
	// Why says why the part is inconclusive or weak.
	Why string `json:"why,omitempty"`
}

// verdict is the part's verdict.
func (p expect) verdict() Part {
	if p.missing != "" {
		return Part{Name: p.name, Verdict: NotMeasurable, Why: p.missing}
	}
	pt := Part{Name: p.c.fig.name, Figures: p.c.figures(), Why: p.c.why}
	switch p.c.order {
	case p.want:
		pt.Verdict, pt.Weak = Confirmed, p.c.weak
	case unclear:
		pt.Verdict = Inconclusive
		if p.orEqual {
			// "Not worse than" holds when no difference shows.
			pt.Verdict, pt.Why = Confirmed, "no difference shown, as the claim allows: "+p.c.why
		} else if short := p.shortOf(); short != "" {
			pt.Verdict, pt.Weak, pt.Why = Refuted, true, short
		}
	default:
		pt.Verdict, pt.Weak = Refuted, p.c.weak
	}
	return pt
}

// shortOf says, for a part whose rounds show no order, that even its most
// favourable round falls short of the study's difference: with paired
// rounds the per-round ratio furthest in the claimed direction, without
// them the ranges' ends furthest apart that way. A difference the size the
// study found would have shown; what the rounds allow is smaller, so the
// study's finding does not reproduce here, though a smaller difference in
// its direction may be hidden in the spread: a weak refutation. "" when the
// part has no study figures or the rounds allow the study's difference.
func (p expect) shortOf() string {
	c := p.c
	sa, sb := p.study[0], p.study[1]
	if sa == sb || c.a.N == 0 || c.b.N == 0 {
		return ""
	}
	want := p.want
	study := c.fig.effect(sa, sb)
	var best float64 // the most favourable round's effect in the claimed direction (<= 0: against it)
	var from string
	switch {
	case c.paired.N >= 2 && c.b.Median > 0:
		r := c.paired.Max // a/b per round
		if want == lower {
			r = c.paired.Min
		}
		from = fmt.Sprintf("the per-round ratios (%.2f–%.2f)", c.paired.Min, c.paired.Max)
		switch {
		case c.fig.absolute:
			best = (r - 1) * c.b.Median
			if want == lower {
				best = -best
			}
		case want == higher:
			best = r - 1
		case r > 0:
			best = 1/r - 1
		default:
			return ""
		}
	default:
		hi, lo := c.a.Max, c.b.Min // a above b as far as the ranges allow
		if want == lower {
			hi, lo = c.b.Max, c.a.Min
		}
		from = "the ranges over rounds"
		if hi <= lo {
			best = 0
		} else {
			best = c.fig.effect(hi, lo)
		}
	}
	if math.IsInf(study, 0) || best >= study {
		return ""
	}
	return fmt.Sprintf("the rounds show no order, and %s allow at most %s in the claimed direction, short of the study's %s: its difference does not reproduce here",
		from, c.fig.formatEffect(max(0, best)), c.fig.formatEffect(study))
}

// rank orders part verdicts by how much they decide a claim: a firm
// refutation decides it, then an unclear part, then a weak refutation,
// then a weak confirmation; firm confirmations of every part confirm it.
func rank(p Part) int {
	switch {
	case p.Verdict == Refuted && !p.Weak:
		return 4
	case p.Verdict == Inconclusive:
		return 3
	case p.Verdict == Refuted:
		return 2
	case p.Weak:
		return 1
	}
	return 0
}

// judgement is a claim's verdict from its parts.
type judgement struct {
	verdict string
	weak    bool
	decided string // the part that decided the verdict, "" for one part or when all confirm firmly
	parts   []Part
	notes   string // the unclear or weak parts' notes, "; " first
	// partial is set when a part could not be judged (expect.missing):
	// the verdict is the judged parts'.
	partial bool
}

// judge turns the parts of a claim into its verdict: the verdict of the
// part that ranks highest (see rank), weak when that part is weak, and
// the name of that part when there are several.
func judge(parts ...expect) judgement {
	var j judgement
	top := -1
	var b strings.Builder
	judged := 0
	for _, p := range parts {
		pt := p.verdict()
		j.parts = append(j.parts, pt)
		if p.missing != "" {
			b.WriteString(fmt.Sprintf("; %s not judged: %s", p.name, p.missing))
			continue
		}
		judged++
		switch n := p.c.note(); {
		case p.c.order == unclear && pt.Verdict == Refuted: // short of the study's difference
			b.WriteString(fmt.Sprintf("; %s weak: %s: %s", pt.Name, p.c.figures(), pt.Why))
		case n != "" && !(p.orEqual && p.c.order == unclear):
			b.WriteString("; " + n)
		}
		if r := rank(pt); r > top {
			top = r
			j.verdict, j.weak = pt.Verdict, pt.Weak
			if len(parts) > 1 {
				j.decided = pt.Name
			}
		}
	}
	j.partial = judged < len(parts)
	if judged == 0 {
		j.verdict = NotMeasurable
	}
	if top == 0 {
		j.decided = "" // every part confirms firmly: none decided alone
	}
	j.notes = b.String()
	return j
}
