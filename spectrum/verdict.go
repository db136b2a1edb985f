package spectrum

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Verdict compares, for one burst pattern, the adaptive strategy with the
// fixed ones (busy, pause, block, and tpause/umwait where they ran), by the
// waiting cost of DESIGN.md: background CPU time spent waiting plus B for
// every block-and-wake.
type Verdict struct {
	Pattern string `json:"pattern"`
	// Adaptive is adaptive's waiting cost, percent of one CPU per thread.
	Adaptive Figure `json:"adaptive_cost_pct"`
	// Best is the fixed strategy with the lowest median cost, and BestCost
	// that cost.
	Best     string `json:"best_fixed"`
	BestCost Figure `json:"best_fixed_cost_pct"`
	// Ratio is adaptive's cost over the cheapest fixed strategy's in the
	// same round (interleaved), median with min and max over the rounds.
	Ratio Figure `json:"cost_ratio"`
	// WorstP99 and WorstCPU name the strategies with the highest median p99
	// wake latency and background CPU among all, adaptive included.
	WorstP99 string `json:"worst_p99"`
	WorstCPU string `json:"worst_bg_cpu"`
}

// CostTarget is the bound on Verdict.Ratio: adaptive within 1.2x
// of the best fixed strategy.
const CostTarget = 1.2

// fixedModes are the strategies adaptive is compared with.
var fixedModes = []string{"busy", "pause", "block", "tpause", "umwait"}

// Verdicts compares adaptive with the fixed strategies on every bursty
// pattern where adaptive and at least one fixed strategy ran.
func Verdicts(res []Result) []Verdict {
	var patterns []string
	byPattern := map[string]map[string]*Result{}
	for i := range res {
		r := &res[i]
		if r.Preset != PresetBursty || r.Mode == "" || r.FgMops.N == 0 {
			continue
		}
		if byPattern[r.PatternS] == nil {
			byPattern[r.PatternS] = map[string]*Result{}
			patterns = append(patterns, r.PatternS)
		}
		byPattern[r.PatternS][r.Mode] = r
	}
	var out []Verdict
	for _, p := range patterns {
		m := byPattern[p]
		a, ok := m["adaptive"]
		if !ok {
			continue
		}
		v := Verdict{Pattern: p, Adaptive: a.WaitCost}
		bestMed := math.Inf(1)
		for _, f := range fixedModes {
			if r, ok := m[f]; ok && r.WaitCost.N > 0 && r.WaitCost.Median < bestMed {
				v.Best, v.BestCost, bestMed = f, r.WaitCost, r.WaitCost.Median
			}
		}
		if v.Best == "" {
			continue
		}
		ratios := make([]float64, len(a.samples))
		for round, s := range a.samples {
			best := math.Inf(1)
			for _, f := range fixedModes {
				if r, ok := m[f]; ok && round < len(r.samples) {
					best = min(best, r.samples[round].WaitCost)
				}
			}
			ratios[round] = math.NaN()
			if best > 0 && !math.IsInf(best, 1) {
				ratios[round] = s.WaitCost / best
			}
		}
		v.Ratio = figureOf(ratios, "no round with a fixed strategy's cost above zero")
		v.WorstP99 = worst(m, func(r *Result) Figure { return r.WakeP99 })
		v.WorstCPU = worst(m, func(r *Result) Figure { return r.BgCPU })
		out = append(out, v)
	}
	return out
}

// worst names the modes with the highest median of a metric (ties named
// together).
func worst(m map[string]*Result, get func(*Result) Figure) string {
	hi := math.Inf(-1)
	var names []string
	for mode, r := range m {
		f := get(r)
		switch {
		case f.N == 0:
		case f.Median > hi:
			hi, names = f.Median, []string{mode}
		case f.Median == hi:
			names = append(names, mode)
		}
	}
	slices.Sort(names)
	return strings.Join(names, "=")
}

// WriteVerdicts prints the comparison as a table.
func WriteVerdicts(w io.Writer, vs []Verdict) error {
	if len(vs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "== adaptive against the best fixed strategy (waiting cost = CPU spent waiting + B per block-and-wake; target ratio <= %.1f) ==\n", CostTarget)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pattern\tadaptive cost %\tbest fixed\tits cost %\tratio (per round)\t<= target\tworst p99\tworst bg CPU")
	for _, v := range vs {
		ok := "n/a"
		if v.Ratio.N > 0 {
			ok = yes(v.Ratio.Median <= CostTarget)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Pattern, cellText(v.Adaptive, "%.2f"), v.Best,
			cellText(v.BestCost, "%.2f"), cellText(v.Ratio, "%.2f"), ok, v.WorstP99, v.WorstCPU)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The table's "n/a" ratios, with their reasons.
	for _, v := range vs {
		if v.Ratio.N == 0 {
			fmt.Fprintf(w, "  %s: ratio %s\n", v.Pattern, v.Ratio.NA)
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
