package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/bench"
	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/report"
)

func init() {
	register(command{
		name:    "report",
		summary: "rebuild report.md and its plots from result directories",
		run:     runReport,
		flags:   func() *flagSet { fs, _ := reportFlags(); return fs },
	})
}

type reportArgs struct {
	outDir, title string
	spread        bool
	slo           time.Duration
}

func reportFlags() (*flagSet, *reportArgs) {
	a := &reportArgs{}
	fs := newFlagSet("report", "DIR|LOAD.json...", "Reads the result directories at or under each DIR (those holding summary.json), and each\n"+
		"load result named (spindle load --json FILE; with the load.hlog of --hlog beside it, drawn over time),\n"+
		"and writes report.md with tables, the study's findings and PNG plots.")
	fs.StringVar(&a.outDir, "output-dir", "", "where to write report.md and the plots (default: the first DIR)")
	fs.StringVar(&a.title, "title", "spindle report", "the report's title")
	cliflag.Positive(&a.slo).Var(fs.FlagSet, "slo-p99", report.DefaultSLOP99, "the latency objective of a sweep's capacity figures")
	fs.BoolVar(&a.spread, "spread", false, "with two DIRs, two comparisons of the same configurations on an unchanged machine:\n"+
		"print how far each finding figure's median moved between them (its run-to-run spread) instead of a report")
	fs.example(
		`spindle report results/compare-20261201-120000`,
		`spindle report --output-dir out results/a results/b`,
		`spindle report out/load.json`,
		`spindle report --spread results/compare-a results/compare-b`,
	)
	return fs, a
}

func runReport(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs, a := reportFlags()
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return badInput("report needs at least one result directory")
	}
	if a.spread {
		if len(pos) != 2 {
			return badInput("--spread needs two result directories (got %d)", len(pos))
		}
		return printSpread(pos[0], pos[1], stdout)
	}
	var results []report.Result
	planDirs := append([]string(nil), pos...) // where a compare's plan.json may be
	for _, root := range pos {
		st, err := os.Stat(root)
		if err == nil && st.Mode().IsRegular() { // a lone load result
			r, err := report.LoadResult(root, loadRunName(root))
			if err != nil {
				return badInput("report: %s is not a load result (spindle load --json): %v", root, err)
			}
			results = append(results, r)
			continue
		}
		if err != nil || !st.IsDir() {
			return badInput("%s: not a directory or a load result", root)
		}
		dirs, err := report.Discover(root)
		if err != nil {
			return asBadInput(err)
		}
		for _, d := range dirs {
			planDirs = append(planDirs, ancestors(d, root)...)
			r, err := report.Load(d)
			if err != nil {
				return asBadInput(err)
			}
			results = append(results, r)
		}
	}
	out := a.outDir
	if out == "" {
		out = pos[0]
		if st, err := os.Stat(out); err == nil && !st.IsDir() {
			out = filepath.Dir(out)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	rep, err := report.Write(out, results, report.Options{Title: a.title, Preamble: planDescription(planDirs), SLOP99: a.slo})
	if err != nil {
		return err
	}
	printHeadlines(stdout, rep)
	fmt.Fprintf(stdout, "report: %s (%s)\n", filepath.Join(out, report.File), report.Count(rep.Results, "result directory", "result directories"))
	return nil
}

// loadRunName names a lone load result in the report: the file's name
// without .json, or its directory's name for a "load.json".
func loadRunName(path string) string {
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	if name == "load" {
		if d := filepath.Base(filepath.Dir(path)); d != "." && d != "/" {
			return d
		}
	}
	return name
}

// ancestors returns dir's parent directories up to and including root
// (a compare's result directories lie two levels under its plan.json:
// DIR/max/rR-II-NAME), nearest first.
func ancestors(dir, root string) []string {
	root = filepath.Clean(root)
	var out []string
	for d := filepath.Clean(dir); d != root; {
		p := filepath.Dir(d)
		if p == d { // reached the filesystem root without meeting root
			break
		}
		out = append(out, p)
		d = p
	}
	return out
}

// planDescription returns the description in the plan.json of the first
// directory of dirs that has one ("spindle compare" writes it), with what
// its phases ran (bench.Plan.RoundsNote), or "".
func planDescription(dirs []string) string {
	for _, d := range dirs {
		var p bench.Plan
		if err := latency.ReadJSONFile(filepath.Join(d, bench.PlanFile), &p); err == nil {
			return p.Preamble()
		}
	}
	return ""
}

// loadReport builds the report of the result directories at or under root.
func loadReport(root string) (*report.Report, error) {
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, badInput("%s: not a directory", root)
	}
	dirs, err := report.Discover(root)
	if err != nil {
		return nil, asBadInput(err)
	}
	var results []report.Result
	for _, d := range dirs {
		r, err := report.Load(d)
		if err != nil {
			return nil, asBadInput(err)
		}
		results = append(results, r)
	}
	return report.Build(results)
}

// printSpread prints the run-to-run spread of the finding figures between
// the comparisons under rootA and rootB.
func printSpread(rootA, rootB string, w io.Writer) error {
	a, err := loadReport(rootA)
	if err != nil {
		return err
	}
	b, err := loadReport(rootB)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run-to-run spread of each figure's median between %s and %s\n", rootA, rootB)
	if err := report.WriteSpread(w, report.Spread(a, b)); err != nil {
		return err
	}
	fa, fb := a.Findings(), b.Findings()
	for i := range min(len(fa), len(fb)) {
		fmt.Fprintf(w, "finding %d: %s / %s: %s\n", i+1, fa[i].Grade(), fb[i].Grade(), report.Agreement(fa[i], fb[i]))
	}
	return nil
}
