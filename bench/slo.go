package bench

import (
	"fmt"
	"path/filepath"

	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/report"
	"github.com/spindle-lab/spindle/slo"
)

// SLOCheck is the --slo outcome of one configuration in one phase.
type SLOCheck struct {
	// Phase and Name identify the configuration ("max", "carrier").
	Phase, Name string
	// Runs counts the complete runs whose figures were checked.
	Runs int
	// Outcomes has one entry per threshold, in the order given.
	Outcomes []slo.Outcome
}

// NoCompleteRun is the measured figure of a threshold that could not be
// checked because its configuration has no complete run; it fails.
const NoCompleteRun = "no complete run"

// CheckSLO checks ts against every configuration of results (grouped by
// phase and name, in the order they first appear): the figures of each
// group's complete runs are read from their load.json and taken together
// (load.SLOFiguresOf: histograms merged, errors summed, the mean rate). A
// group without a complete run fails every threshold.
func CheckSLO(results []report.Result, ts []slo.Threshold) ([]SLOCheck, error) {
	type key struct{ phase, name string }
	var order []key
	runs := map[key][]*load.Result{}
	for _, r := range results {
		k := key{r.Summary.Phase, r.Summary.Name}
		if _, seen := runs[k]; !seen {
			order = append(order, k)
			runs[k] = nil
		}
		if !r.Summary.Complete {
			continue
		}
		lr, err := load.ReadResult(filepath.Join(r.Dir, LoadJSON))
		if err != nil {
			return nil, fmt.Errorf("slo: %w", err)
		}
		runs[k] = append(runs[k], lr)
	}
	out := make([]SLOCheck, 0, len(order))
	for _, k := range order {
		c := SLOCheck{Phase: k.phase, Name: k.name, Runs: len(runs[k])}
		if c.Runs == 0 {
			for _, t := range ts {
				c.Outcomes = append(c.Outcomes, slo.Outcome{Threshold: t, Measured: NoCompleteRun})
			}
			out = append(out, c)
			continue
		}
		f, err := load.SLOFiguresOf(runs[k]...)
		if err != nil {
			return nil, fmt.Errorf("slo: %s %s: %w", k.phase, k.name, err)
		}
		c.Outcomes = slo.Check(ts, f)
		out = append(out, c)
	}
	return out, nil
}
