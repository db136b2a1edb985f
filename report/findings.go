package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/cpu"
)

// Verdicts of a finding.
const (
	Confirmed = "confirmed"
	Refuted   = "refuted"
	// Inconclusive is the verdict when the runs do not support the
	// difference the claim is about (see decide): the figures then give the
	// ratio of the medians and both ranges.
	Inconclusive  = "inconclusive"
	NotMeasurable = "not measurable here"
)

// Finding is one claim of the scheduler study checked against the results
// (findings.json holds them).
type Finding struct {
	// Claim is the study's claim, with the study's figures.
	Claim string `json:"claim"`
	// Verdict is Confirmed, Refuted, Inconclusive or NotMeasurable.
	Verdict string `json:"verdict"`
	// Figures are this machine's figures behind the verdict, or why they
	// cannot be had, with the notes of unclear and weak parts.
	Figures string `json:"figures"`
	// Weak marks a verdict the rounds show but with a difference under
	// the figure's run-to-run spread: another comparison may differ.
	Weak bool `json:"weak,omitempty"`
	// DecidedBy names the part that decided a claim of several parts
	// (empty when every part confirms it firmly).
	DecidedBy string `json:"decided_by,omitempty"`
	// Parts are the claim's parts, each with its own verdict.
	Parts []Part `json:"parts,omitempty"`
	// Partial marks a claim judged in part: some part's configuration had
	// no run that passed the checks, and the verdict is the other parts'.
	Partial bool `json:"partial,omitempty"`
}

// finding is the finding of claim from a judgement, figs first in its
// figures.
func finding(claim, figs string, j judgement) Finding {
	return Finding{Claim: claim, Verdict: j.verdict, Figures: figs + j.notes, Weak: j.weak, DecidedBy: j.decided, Parts: j.parts, Partial: j.partial}
}

// Grade renders the verdict with its strength, whether it was judged in
// part, and its deciding part: "refuted (weak; decided by %wait)".
func (f Finding) Grade() string {
	var q []string
	if f.Weak {
		q = append(q, "weak")
	}
	if f.Partial {
		q = append(q, "judged in part")
	}
	if f.DecidedBy != "" {
		q = append(q, "decided by "+f.DecidedBy)
	}
	if len(q) == 0 {
		return f.Verdict
	}
	return f.Verdict + " (" + strings.Join(q, "; ") + ")"
}

// The configurations the findings and the gain split compare, by their names in the compare
// matrix. report cannot import bench (bench writes reports), so report owns
// these names and bench's TestVariantsNameFindings checks that
// bench.Variants has each.
const (
	ConfigBaseline = "nethttp"         // net/http on Go's scheduler
	ConfigUnpinned = "carrier"         // carriers without affinity
	ConfigPinned   = "carrier+pinning" // carriers pinned one per CPU
	// ConfigNetHTTPCarrier is nethttp's code hosted on carriers: with
	// ConfigBaseline and ConfigUnpinned it splits carrier's gain (split.go).
	ConfigNetHTTPCarrier = "nethttp-carrier"
)

// Short names for the findings' code.
const (
	baseline = ConfigBaseline
	unpinned = ConfigUnpinned
	pinned   = ConfigPinned
)

// Findings checks the study's claims (claims). Latency, CPU and
// scheduling claims are the study's at 70% load, so they use the "fixed"
// phase; the throughput claim uses "max".
func (r *Report) Findings() []Finding {
	if len(r.Apps) > 0 { // not the study's experiment
		return []Finding{}
	}
	fs := make([]Finding, 0, len(claims)+1)
	for _, c := range claims {
		fs = append(fs, r.check(c))
	}
	// With a latency–load sweep, the capacity at the objective is a
	// finding of its own.
	if f, ok := r.claimCapacity(r.SLO()); ok {
		fs = append(fs, f)
	}
	return fs
}

// A studyClaim is one of the study's claims and how it is checked: in phase,
// on the groups of configs (need), by judge.
type studyClaim struct {
	// text is the claim, with the study's figures.
	text  string
	phase string
	// configs are the configurations the claim compares, in the order
	// judge gets their groups.
	configs []string
	// judge checks the claim on the groups of configs; sub is what need
	// says of a configuration judged on a substitute ("; ..." or "").
	judge func(r *Report, gs []*Group, sub string) outcome
}

// outcome is what a claim's judge found: the figures and their judgement,
// or (j nil) the figures that say why the claim is not measurable.
type outcome struct {
	figs string
	j    *judgement
}

// judged is the outcome of a claim judged on figs.
func judged(figs string, j judgement) outcome { return outcome{figs, &j} }

// notMeasurable is the outcome of a claim the figures cannot decide, and
// why.
func notMeasurable(why string) outcome { return outcome{figs: why} }

// check is the finding of c.
func (r *Report) check(c studyClaim) Finding {
	gs, sub, missing := r.need(c.text, c.phase, c.configs...)
	if missing != nil {
		return *missing
	}
	o := c.judge(r, gs, sub)
	if o.j == nil {
		return Finding{Claim: c.text, Verdict: NotMeasurable, Figures: o.figs}
	}
	return finding(c.text, o.figs, *o.j)
}

// claims are the study's claims that Findings checks, in its order.
var claims = []studyClaim{
	{"At 70% load the unpinned carrier's p50 is worse than the work-stealing baseline's (study: 3.80 ms vs 1.20 ms)",
		PhaseFixed, []string{unpinned, baseline}, judgeUnpinnedWorse},
	{"Pinning each carrier to its own CPU fixes it: p50 drops below the baseline's (study: 3.80 -> 1.16 ms, nethttp 1.20 ms)",
		PhaseFixed, []string{pinned, unpinned}, judgePinningFixes},
	{"Carriers use fewer context switches and less CPU than the baseline (study: 9,207/s vs 28,169/s; 1.51 vs 1.80 CPUs)",
		PhaseFixed, []string{unpinned, baseline}, judgeFewerSwitches},
	{"Pinning raises I/O cycles and lowers I/O events per cycle and queue depth (study: 247K -> 632K cycles/10s, 4.0 -> 1.6 events, depth 8 -> 1)",
		PhaseFixed, []string{unpinned, pinned}, judgePinningCycles},
	{"The baseline runs more threads, which wait longer for a CPU (study: 5 vs 3 threads; %wait 31% vs 11%)",
		PhaseFixed, []string{baseline, unpinned}, judgeBaselineThreads},
	{"Every carrier variant reaches a higher max throughput than the baseline (study: ~72K vs ~61K req/s, +15%)",
		PhaseMax, []string{baseline}, judgeMaxThroughput},
}

// SLO is the latency objective of the capacity figures (SLOP99 or
// DefaultSLOP99).
func (r *Report) SLO() time.Duration {
	if r.SLOP99 > 0 {
		return r.SLOP99
	}
	return DefaultSLOP99
}

// substitutes are, for a configuration a claim names, the configurations
// it may be judged on when that one has no run that passed the checks, in
// order of preference, each with what it changes: the same unpinned
// carriers with one option more, which the claims' mechanisms do not
// depend on.
var substitutes = map[string][]struct{ name, what string }{
	unpinned: {
		{"carrier+adaptive", "the same unpinned carriers with the adaptive idle wait"},
		{"carrier+ws", "the same unpinned carriers with work stealing"},
		{"carrier+uring", "the same unpinned carriers on io_uring"},
	},
}

// need returns the groups of names in phase, each with runs that passed
// the checks, a configuration without one replaced by its first
// substitute that has one (substitutes) and the replacement said in note
// ("; ..."); or a finding saying which configuration has none.
func (r *Report) need(claim, phase string, names ...string) (gs []*Group, note string, missing *Finding) {
	gs = make([]*Group, len(names))
	for i, n := range names {
		g, why := r.judgeable(phase, n)
		if why == "" {
			gs[i] = g
			continue
		}
		var tried []string
		for _, sub := range substitutes[n] {
			if sg, swhy := r.judgeable(phase, sub.name); swhy == "" {
				gs[i] = sg
				note += fmt.Sprintf("; %s; judged on %s instead (%s)", why, sub.name, sub.what)
				break
			} else if r.Find(phase, sub.name) != nil {
				tried = append(tried, sub.name)
			}
		}
		if gs[i] == nil {
			if len(tried) > 0 {
				why += "; nor did " + orList(tried)
			}
			return nil, "", &Finding{Claim: claim, Verdict: NotMeasurable, Figures: why}
		}
	}
	return gs, note, nil
}

// judgeable returns the group of name in phase when it has runs that
// passed the checks, else why not, naming the configuration.
func (r *Report) judgeable(phase, name string) (*Group, string) {
	g := r.Find(phase, name)
	switch {
	case g != nil && g.Runs > 0:
		return g, ""
	case g != nil && g.LeftOut > 0:
		return nil, fmt.Sprintf("no run of the configuration %s at %s passed the run checks (%d left out: see Runs left out)", name, phaseLabel(phase), g.LeftOut)
	}
	return nil, fmt.Sprintf("no complete run of the configuration %s at %s", name, phaseLabel(phase))
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func phaseLabel(p string) string {
	switch p {
	case PhaseMax:
		return "max throughput"
	case PhaseFixed:
		return "the fixed rate"
	}
	return "phase " + p
}

// ms renders a latency stat.
func ms(s Stat) string { return s.Format(2, "no latency") + " ms" }

func judgeUnpinnedWorse(_ *Report, gs []*Group, sub string) outcome {
	c, b := gs[0], gs[1]
	figs := fmt.Sprintf("p50 %s %s, nethttp %s at %d req/s%s", c.Name, ms(c.P50), ms(b.P50), c.Rate, sub)
	// The claim's mechanism is migration: unpinned carriers moving
	// between CPUs and losing cache affinity. On one server CPU it cannot
	// act, as for claims 2 and 4.
	if why := onePerCarrier(c); why != "" {
		return notMeasurable(figs + "; " + why)
	}
	if c.P50.N == 0 || b.P50.N == 0 {
		return notMeasurable("no latency recorded")
	}
	return judged(figs, judge(expect{c: compare(figP50, c, b, latencyMs("50")), want: higher, study: [2]float64{3.80, 1.20}}))
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

func judgePinningFixes(r *Report, gs []*Group, sub string) outcome {
	p, c := gs[0], gs[1]
	// The part against the baseline is judged where it can be: without a
	// nethttp run the claim is judged in part, on pinning's effect.
	b, bwhy := r.judgeable(PhaseFixed, baseline)
	bp50 := "no run"
	if b != nil {
		bp50 = ms(b.P50)
	}
	figs := fmt.Sprintf("p50 carrier+pinning %s, %s %s, nethttp %s%s", ms(p.P50), c.Name, ms(c.P50), bp50, sub)
	if why := onePerCarrier(c); why != "" {
		return notMeasurable(figs + "; " + why)
	}
	if p.P50.N == 0 || c.P50.N == 0 || (b != nil && b.P50.N == 0) {
		return notMeasurable("no latency recorded")
	}
	// "Below the baseline's": the study's own figures differ by 3%, less
	// than any run-to-run spread, so on par with the baseline counts;
	// only a p50 shown higher than the baseline's refutes that part.
	vsBase := figP50
	vsBase.name = "p50 against nethttp"
	base := expect{missing: bwhy, name: vsBase.name}
	if b != nil {
		base = expect{c: compare(vsBase, p, b, latencyMs("50")), want: lower, orEqual: true}
	}
	return judged(figs, judge(expect{c: compare(figP50, p, c, latencyMs("50")), want: lower, study: [2]float64{1.16, 3.80}}, base))
}

func judgeFewerSwitches(_ *Report, gs []*Group, sub string) outcome {
	c, b := gs[0], gs[1]
	if c.CPUs.N == 0 || b.CPUs.N == 0 || c.ContextSwitches.N == 0 || b.ContextSwitches.N == 0 {
		g := c
		if c.CPUs.N > 0 && c.ContextSwitches.N > 0 {
			g = b
		}
		return notMeasurable(fmt.Sprintf("no CPU or context-switch figures for %s (perf stat: %s; /proc sampling: %s)",
			g.Name, g.naReason("perf-stat"), g.naReason("threads")))
	}
	// Both configurations' figures come from one source: perf stat where
	// both have it, else the /proc sampling.
	src := commonSource(c, b)
	sw := compare(figSwitches, c, b, func(s Summary) float64 { return switchesOf(s, src) })
	cpus := compare(figCPUs, c, b, func(s Summary) float64 { return cpusOf(s, src) })
	figs := fmt.Sprintf("context switches/s %s %s, nethttp %s; CPUs %s %s, nethttp %s (%s)%s",
		c.Name, sw.a.Format(0, ""), sw.b.Format(0, ""), c.Name, cpus.a.Format(2, ""), cpus.b.Format(2, ""), src, sub)
	return judged(figs, judge(expect{c: sw, want: lower, study: [2]float64{9207, 28169}}, expect{c: cpus, want: lower, study: [2]float64{1.51, 1.80}}))
}

func judgePinningCycles(_ *Report, gs []*Group, sub string) outcome {
	c, p := gs[0], gs[1]
	if c.IOCycles.N == 0 || p.IOCycles.N == 0 {
		return notMeasurable("no carrier telemetry (" + c.NA["carrier"] + ")")
	}
	figs := fmt.Sprintf("I/O cycles/10s %s -> %s; events/cycle %s -> %s; queue depth avg %s -> %s%s",
		c.IOCycles.Format(0, ""), p.IOCycles.Format(0, ""), c.EventsPerCycle.Format(2, ""), p.EventsPerCycle.Format(2, ""),
		c.QueueDepthAvg.Format(2, ""), p.QueueDepthAvg.Format(2, ""), sub)
	if why := onePerCarrier(c); why != "" {
		return notMeasurable(figs + "; " + why)
	}
	return judged(figs, judge(
		expect{c: compare(figCycles, p, c, carrierFig(func(f *CarrierFigures) float64 { return float64(f.IOCyclesPer10s) })), want: higher, study: [2]float64{632e3, 247e3}},
		expect{c: compare(figEvents, p, c, carrierFig(func(f *CarrierFigures) float64 { return float64(f.EventsPerCycle) })), want: lower, study: [2]float64{1.6, 4.0}},
		expect{c: compare(figDepth, p, c, carrierFig(func(f *CarrierFigures) float64 { return float64(f.QueueDepthAvg) })), want: lower, study: [2]float64{1, 8}}))
}

func judgeBaselineThreads(_ *Report, gs []*Group, sub string) outcome {
	b, c := gs[0], gs[1]
	if b.ActiveThreads.N == 0 || c.ActiveThreads.N == 0 {
		return notMeasurable("per-thread sampling off (" + b.NA["threads"] + ")")
	}
	figs := fmt.Sprintf("active threads nethttp %s, %s %s; mean %%wait nethttp %s%%, %s %s%%%s",
		b.ActiveThreads.Format(0, ""), c.Name, c.ActiveThreads.Format(0, ""), b.WaitPct.Format(1, ""), c.Name, c.WaitPct.Format(1, ""), sub)
	return judged(figs, judge(
		expect{c: compare(figThreads, b, c, func(s Summary) float64 {
			return threadFig(s, func(t *ThreadFigures) float64 { return float64(t.Active) })
		}), want: higher, study: [2]float64{5, 3}},
		expect{c: compare(figWait, b, c, func(s Summary) float64 {
			return threadFig(s, func(t *ThreadFigures) float64 { return t.WaitPct })
		}), want: higher, study: [2]float64{31, 11}}))
}

func judgeMaxThroughput(r *Report, gs []*Group, _ string) outcome {
	b := gs[0]
	if b.Throughput.N == 0 {
		return notMeasurable("no complete nethttp run at max throughput")
	}
	var parts []string
	var want []expect
	for _, g := range r.Groups {
		if g.Phase != PhaseMax || g.Mode != unpinned {
			continue
		}
		if g.Throughput.N == 0 { // judged in part: the variants with runs
			_, why := r.judgeable(PhaseMax, g.Name)
			want = append(want, expect{missing: why, name: "req/s of " + g.Name})
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s (%+.0f%%)", g.Name, g.Throughput.Format(0, ""),
			100*(g.Throughput.Median/b.Throughput.Median-1)))
		fig := figReqs
		fig.name = "req/s of " + g.Name
		want = append(want, expect{c: compare(fig, g, b, throughput), want: higher, study: [2]float64{72e3, 61e3}})
	}
	if len(parts) == 0 {
		return notMeasurable("no run of any carrier configuration at max throughput passed the run checks")
	}
	return judged(fmt.Sprintf("req/s nethttp %s; %s", b.Throughput.Format(0, ""), strings.Join(parts, ", ")), judge(want...))
}
