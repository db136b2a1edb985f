package report

import (
	"fmt"
	"github.com/spindle-lab/spindle/quantile"
	"io"
	"math"
	"slices"
)

// SpreadRow is the run-to-run spread of one figure between two
// comparisons of the same configurations on an unchanged machine.
type SpreadRow struct {
	// Figure is the figure's name, as in the findings.
	Figure string `json:"figure"`
	// Absolute is true when the shifts are in the figure's units (Unit),
	// false when relative (0.3 is 30%).
	Absolute bool   `json:"absolute"`
	Unit     string `json:"unit,omitempty"`
	// Median and Max are the median and the largest shift of one
	// configuration's median between the comparisons, over the
	// configurations (and phases) both have the figure for; N counts them.
	Median, Max float64
	N           int
	// Used is the spread the findings use for this figure.
	Used float64 `json:"used"`
}

// Spread measures each claim figure's run-to-run spread between two
// comparisons a and b: for every configuration and phase both have the
// figure for, how far its median moved.
func Spread(a, b *Report) []SpreadRow {
	var rows []SpreadRow
	for _, f := range claimFigures {
		var shifts []float64
		for _, ga := range a.Groups {
			gb := b.Find(ga.Phase, ga.Name)
			if gb == nil {
				continue
			}
			sa, sb := f.stat(ga), f.stat(gb)
			if sa.N == 0 || sb.N == 0 {
				continue
			}
			if e := f.effect(sa.Median, sb.Median); !math.IsInf(e, 0) {
				shifts = append(shifts, e)
			}
		}
		row := SpreadRow{Figure: f.name, Absolute: f.absolute, Unit: f.unit, Used: f.medianSpread(), N: len(shifts)}
		if len(shifts) > 0 {
			row.Median, row.Max = quantile.Median(shifts), slices.Max(shifts)
		}
		rows = append(rows, row)
	}
	return rows
}

// WriteSpread writes the spread table as text.
func WriteSpread(w io.Writer, rows []SpreadRow) error {
	if _, err := fmt.Fprintf(w, "%-20s %8s %8s %8s %s\n", "figure", "median", "max", "used", "(configurations)"); err != nil {
		return err
	}
	for _, r := range rows {
		f := func(v float64) string {
			if r.Absolute {
				return fmt.Sprintf("%.1f", v)
			}
			return fmt.Sprintf("%.0f%%", 100*v)
		}
		med, mx := "n/a", "n/a"
		if r.N > 0 {
			med, mx = f(r.Median), f(r.Max)
		}
		unit := ""
		if r.Absolute {
			unit = " " + r.Unit
		}
		if _, err := fmt.Fprintf(w, "%-20s %8s %8s %8s (%d)%s\n", r.Figure, med, mx, f(r.Used), r.N, unit); err != nil {
			return err
		}
	}
	return nil
}

// Agreement says whether two comparisons' findings of one claim agree, the
// issue-12 test of a rule: "same" (the same verdict), "differs, one not firm"
// (different verdicts, one of them weak, inconclusive or not measurable:
// the report did say the evidence was not firm), or "differs" (two firm verdicts
// disagree: the rule failed on this machine).
func Agreement(a, b Finding) string {
	switch {
	case a.Verdict == b.Verdict:
		return "same"
	case a.Weak || b.Weak || a.Verdict == Inconclusive || b.Verdict == Inconclusive ||
		a.Verdict == NotMeasurable || b.Verdict == NotMeasurable:
		return "differs, one not firm"
	}
	return "differs"
}
