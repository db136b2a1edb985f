package spectrum

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/quantile"
)

// Verdict compares, for one burst pattern, the adaptive strategy with the
// fixed ones (every strategy whose wait.Spec is not Adaptive, where it ran), by the
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
	// WorstP99 and WorstCPU name the strategy with the highest p99 wake
	// latency and background CPU among all, adaptive included, or those
	// that cannot be told apart from it, joined by "≈" (see worst).
	WorstP99 string `json:"worst_p99"`
	WorstCPU string `json:"worst_bg_cpu"`
	// WorstP99Ties and WorstCPUTies say, for each strategy named with the
	// worst, how often the worst was higher over the paired rounds.
	WorstP99Ties []string `json:"worst_p99_ties,omitempty"`
	WorstCPUTies []string `json:"worst_bg_cpu_ties,omitempty"`
}

// CostTarget is the bound on Verdict.Ratio: adaptive within 1.2x
// of the best fixed strategy.
const CostTarget = 1.2

// fixedModes are the strategies adaptive is compared with: the registry's
// fixed ones.
var fixedModes = wait.NamesWhere(func(s wait.Spec) bool { return !s.Adaptive })

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
		ratios := make([]float64, len(a.Rounds))
		for round, s := range a.Rounds {
			best := math.Inf(1)
			for _, f := range fixedModes {
				if r, ok := m[f]; ok && round < len(r.Rounds) {
					best = min(best, r.Rounds[round].WaitCost)
				}
			}
			ratios[round] = math.NaN()
			if best > 0 && !math.IsInf(best, 1) {
				ratios[round] = s.WaitCost / best
			}
		}
		v.Ratio = figureOf(ratios, "no round with a fixed strategy's cost above zero")
		v.WorstP99, v.WorstP99Ties = worst(m, func(s Sample) float64 { return s.WakeP99 })
		v.WorstCPU, v.WorstCPUTies = worst(m, func(s Sample) float64 { return s.BgCPU })
		out = append(out, v)
	}
	return out
}

// signLevel is the one-sided significance level of the signed-rank test by
// which worst tells the worst strategy from another.
const signLevel = 0.05

// worst names the strategy with the highest median of a metric over its
// rounds. Every other strategy is compared with it round by round (the
// rounds are interleaved, so round i of each ran at about the same time):
// the top one is worse than another only if it was higher in every round
// they both measured, or if a one-sided Wilcoxon signed-rank test on the
// paired differences rejects "no difference" at signLevel (it weighs how
// much higher, not only how often: a strategy with a 50µs p99 in seven
// rounds is worse than one at 1µs that had two bad rounds). Strategies it
// cannot be told from are named with it, sorted and joined by "≈": where
// two strategies wait alike (adaptive blocking as block does on long idle
// periods), which has the higher median is noise, and calling one the worst
// would be a finding the data do not support. ties says, for each of them,
// the medians, in how many paired rounds the top one was higher, and the
// test's p.
func worst(m map[string]*Result, get func(Sample) float64) (names string, ties []string) {
	vals := map[string][]float64{} // per mode, per round
	meds := map[string]float64{}
	top, hi := "", math.Inf(-1)
	for mode, r := range m {
		v := make([]float64, len(r.Rounds))
		for i, s := range r.Rounds {
			v[i] = get(s)
		}
		med := quantile.Median(v)
		if math.IsNaN(med) {
			continue // nothing measured: never named
		}
		vals[mode], meds[mode] = v, med
		if med > hi || (med == hi && mode < top) {
			top, hi = mode, med
		}
	}
	if top == "" {
		return "", nil
	}
	named := []string{top}
	tv := vals[top]
	for mode, v := range vals {
		if mode == top {
			continue
		}
		var diffs []float64 // top minus mode, paired rounds that differ
		wins := 0
		for i, x := range v {
			if i < len(tv) && !math.IsNaN(x) && !math.IsNaN(tv[i]) && x != tv[i] {
				diffs = append(diffs, tv[i]-x)
				if tv[i] > x {
					wins++
				}
			}
		}
		n, p := len(diffs), signedRankTail(diffs)
		if n == 0 || (wins < n && p > signLevel) {
			named = append(named, mode)
			ties = append(ties, fmt.Sprintf("%s %.3g against %s %.3g (medians): higher in %d of %d paired rounds, signed-rank p = %.2f",
				top, hi, mode, meds[mode], wins, n, p))
		}
	}
	slices.Sort(named)
	slices.Sort(ties)
	return strings.Join(named, "≈"), ties
}

// signedRankTail is the exact one-sided p-value of the Wilcoxon signed-rank
// test that the paired differences d (none zero) lean positive: the chance,
// were each difference's sign a fair coin, of a sum of the ranks of the
// positive ones at least as large as observed. Tied magnitudes share their
// average rank (ranks are doubled to keep them integers). 1 for no
// differences.
func signedRankTail(d []float64) float64 {
	n := len(d)
	if n == 0 {
		return 1
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(math.Abs(d[a]), math.Abs(d[b])) })
	rank2 := make([]int, n) // doubled average ranks
	for i := 0; i < n; {
		j := i
		for j+1 < n && math.Abs(d[idx[j+1]]) == math.Abs(d[idx[i]]) {
			j++
		}
		for k := i; k <= j; k++ {
			rank2[idx[k]] = i + j + 2 // 2 × the average of ranks i+1..j+1
		}
		i = j + 1
	}
	observed, total := 0, 0
	for i, r := range rank2 {
		total += r
		if d[i] > 0 {
			observed += r
		}
	}
	// ways[s]: sign assignments whose positive doubled ranks sum to s.
	ways := make([]float64, total+1)
	ways[0] = 1
	for _, r := range rank2 {
		for s := total; s >= r; s-- {
			ways[s] += ways[s-r]
		}
	}
	tail := 0.0
	for s := observed; s <= total; s++ {
		tail += ways[s]
	}
	return tail / math.Exp2(float64(n))
}

// adaptiveWorst says whether adaptive is the worst strategy named by worst:
// "yes" alone, "tied" among strategies that cannot be told apart, "no".
func adaptiveWorst(names string) string {
	parts := strings.Split(names, "≈")
	switch {
	case !slices.Contains(parts, "adaptive"):
		return "no"
	case len(parts) == 1:
		return "yes"
	}
	return "tied"
}

// WriteVerdicts prints the comparison as a table.
func WriteVerdicts(w io.Writer, vs []Verdict) error {
	if len(vs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "== adaptive against the best fixed strategy (waiting cost = CPU spent waiting + B per block-and-wake; target ratio <= %.1f) ==\n", CostTarget)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pattern\tadaptive cost %\tbest fixed\tits cost %\tratio (per round)\t<= target\tworst p99\tadaptive worst\tworst bg CPU\tadaptive worst")
	for _, v := range vs {
		ok := "n/a"
		if v.Ratio.N > 0 {
			ok = yes(v.Ratio.Median <= CostTarget)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Pattern, cellText(v.Adaptive, "%.2f"), v.Best,
			cellText(v.BestCost, "%.2f"), cellText(v.Ratio, "%.2f"), ok, v.WorstP99, adaptiveWorst(v.WorstP99),
			v.WorstCPU, adaptiveWorst(v.WorstCPU))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "worst: highest median, unless another strategy was higher in some round and a one-sided Wilcoxon signed-rank test over the paired rounds finds no difference at %g; those are named together with ≈\n", signLevel)
	for _, v := range vs {
		for _, t := range v.WorstP99Ties {
			fmt.Fprintf(w, "  %s, p99 wake µs: %s\n", v.Pattern, t)
		}
		for _, t := range v.WorstCPUTies {
			fmt.Fprintf(w, "  %s, bg CPU %%: %s\n", v.Pattern, t)
		}
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
