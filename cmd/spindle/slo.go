package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spindle-lab/spindle/bench"
	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/report"
	"github.com/spindle-lab/spindle/slo"
)

// sloFlag is --slo of bench and compare: thresholds parsed before any
// child starts, checked against the runs' load.json at the end.
type sloFlag struct {
	text       string
	thresholds []slo.Threshold
}

func (f *sloFlag) register(fs *flagSet) {
	fs.StringVar(&f.text, "slo", "", "check `THRESHOLDS` at the end, per configuration (\"p99<=10ms,errors<=0.1%,rps>=20000\"); exit 3 when any fails")
}

// parse parses the thresholds (bad ones exit 2).
func (f *sloFlag) parse(cmd string) error {
	if f.text == "" {
		return nil
	}
	ts, err := slo.Parse(f.text)
	if err != nil {
		return badInput("%s: --slo: %v", cmd, err)
	}
	f.thresholds = ts
	return nil
}

// check checks the thresholds against results (bench.CheckSLO), prints
// every outcome and returns an error that exits 3 when any failed.
func (f *sloFlag) check(w io.Writer, cmd string, results []report.Result) error {
	if f.thresholds == nil {
		return nil
	}
	checks, err := bench.CheckSLO(results, f.thresholds)
	if err != nil {
		return err
	}
	failed, total := 0, 0
	for _, c := range checks {
		title := "SLO"
		if len(checks) > 1 {
			title = fmt.Sprintf("SLO %s %s (%s)", c.Phase, c.Name, report.Count(c.Runs, "run", "runs"))
		}
		failed += printSLO(w, title, c.Outcomes)
		total += len(c.Outcomes)
	}
	return sloFailure(cmd, failed, total)
}

// printSLO prints outcomes under title and returns how many failed.
func printSLO(w io.Writer, title string, outcomes []slo.Outcome) (failed int) {
	fmt.Fprintf(w, "%s:\n", title)
	for _, o := range outcomes {
		fmt.Fprintf(w, "  %s\n", o)
		if !o.Pass {
			failed++
		}
	}
	return failed
}

// sloFailure is the error of a run that failed thresholds (exit 3), nil
// when none failed.
func sloFailure(cmd string, failed, total int) error {
	if failed == 0 {
		return nil
	}
	return &sloError{fmt.Sprintf("%s: %d of %d slo thresholds failed", cmd, failed, total)}
}

// writeJSONOut writes v as JSON with its schema_version to path, or to
// stdout when path is "-".
func writeJSONOut(path string, stdout io.Writer, v any) error {
	b, err := latency.MarshalJSON(v)
	if err != nil {
		return err
	}
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
