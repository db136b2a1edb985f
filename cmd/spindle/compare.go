package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/bench"
	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/observe"
	"github.com/spindle-lab/spindle/report"
	"github.com/spindle-lab/spindle/server"
)

func init() {
	register(command{
		name:    "compare",
		summary: "compare the server designs on this machine (the scheduler study's matrix) and write report.md",
		run:     runCompare,
		flags:   func() *flagSet { fs, _ := compareFlags(); return fs },
	})
}

type compareArgs struct {
	rounds           int
	full, ioBound    bool
	only             string
	reference        string
	warmup, duration time.Duration
	connections      int
	outDir           string
	strict           bool
	perfSched        bool
	noPerfStat       bool
	sweep            bool
	rates            string
	slo              time.Duration
	ports            portFlags
	objectives       sloFlag
	jsonPath         string
	hosts            hostFlags
	budget           time.Duration
	budgetGiven      bool
	blocking         string
	blockingShare    int
	app              appFlags
}

func compareFlags() (*flagSet, *compareArgs) {
	a := &compareArgs{}
	fs := newFlagSet("compare", "", "Runs the scheduler study's comparison on this machine's CPUs, one configuration per\n"+
		"server design (--only picks some):\n"+variantsHelp()+"\n"+
		"first at max throughput, then at "+percent(bench.FixedRateShare)+" of the lowest mode's max throughput (or --reference's), interleaved\n"+
		"over rounds, with the CPU-bound case (think time "+bench.DefaultThinkTime.String()+", "+strconv.Itoa(bench.DefaultConnections)+" connections).\n"+
		"The layout is derived from the CPUs available and printed. Writes one result directory\n"+
		"per run and report.md with plots.\n"+
		"The default takes under 5 minutes on 2 CPUs; --full uses the study's durations.")
	cliflag.AtLeast(&a.rounds, 1).Var(fs.FlagSet, "rounds", bench.DefaultRounds, "rounds; each runs every configuration once")
	fs.BoolVar(&a.full, "full", false, fmt.Sprintf("the study's durations: %v warm-up, %v window", bench.DefaultWarmup, bench.DefaultDuration))
	fs.BoolVar(&a.ioBound, "io-bound", false, fmt.Sprintf("the I/O-bound preset: think time %v, %d connections, %d carriers, %v warm-up, %v window",
		bench.IOThinkTime, bench.IOConnections, bench.IOCarriers, bench.IOWarmup, bench.IODuration))
	fs.StringVar(&a.blocking, "blocking", "", fmt.Sprintf("send --blocking-share of every run's requests to the server's blocking endpoint instead of /fruits:\n"+
		"GET /block?kind=`KIND`&d=%v, a handler that blocks the Go way (%s); report.md then has each target's latency",
		bench.BlockingHold, strings.Join(server.BlockKinds, ", ")))
	cliflag.Within(&a.blockingShare, 1, 50).Var(fs.FlagSet, "blocking-share", bench.DefaultBlockingShare, "with --blocking, the percentage of requests sent to /block")
	fs.StringVar(&a.only, "only", "", "comma-separated configurations to run (default: all the layout allows)")
	fs.StringVar(&a.reference, "reference", "", "the configuration whose median max throughput the fixed rate and --sweep's shares are of\n"+
		"(one of those that run; default: the lowest configuration's)")
	// The defaults below are the presets', which depend on --full and
	// --io-bound: 0 stands for "not given", and a 0 typed means what it
	// says (no warm-up, no extra rounds) or is refused (bench's rules).
	fs.durationVar(&a.warmup, "warmup", 0, fmt.Sprintf("override the warm-up; 0: none (default: %v, %v with --io-bound, %v with --full)",
		bench.QuickWarmup, bench.IOWarmup, bench.DefaultWarmup))
	cliflag.Positive(&a.duration).Var(fs.FlagSet, "duration", 0, fmt.Sprintf("override the measured window, above 0 (default: %v, %v with --io-bound, %v with --full)",
		bench.QuickDuration, bench.IODuration, bench.DefaultDuration))
	cliflag.AtLeast(&a.connections, 1).Var(fs.FlagSet, "connections", 0, fmt.Sprintf("override the load generator's connections, at least 1 (default: %d, %d with --io-bound)",
		bench.DefaultConnections, bench.IOConnections))
	fs.durationVar(&a.budget, "time-budget", 0, fmt.Sprintf("the whole comparison's wall time, extra rounds included: runs left out by the checks\n"+
		"make compare run extra rounds of the configurations short of valid runs while they fit (default: %s\n"+
		"where the plan's estimate is under that, as the quick comparison's, else %.2f times the estimate;\n"+
		"a budget shorter than the plan itself leaves no time for extra rounds; 0: no extra rounds)",
		strings.TrimSuffix(bench.QuickBudget.String(), "0s"), bench.BudgetFactor))
	fs.StringVar(&a.outDir, "output-dir", "", "output directory, new or empty (default: results/compare-TIME)")
	fs.BoolVar(&a.strict, "strict", false, "reject overlapping CPU sets (2-CPU machines must share one)")
	fs.BoolVar(&a.perfSched, "perf-sched", false, "also run perf sched in every run (heavy)")
	fs.BoolVar(&a.noPerfStat, "no-perf-stat", false, "skip perf stat (CPU figures then come from /proc)")
	fs.BoolVar(&a.sweep, "sweep", false, fmt.Sprintf("also run every configuration at %s of the reference max throughput (the lowest\n"+
		"configuration's, or --reference's), interleaved, for the latency–load curve and the capacity at --slo-p99", sharesText()))
	fs.StringVar(&a.rates, "rates", "", "also run every configuration at these fixed rates, req/s (comma-separated, as --rate in bench: 20k), for the latency–load curve")
	cliflag.Positive(&a.slo).Var(fs.FlagSet, "slo-p99", report.DefaultSLOP99, "the latency objective of the capacity figures: the highest rate with p99 under it")
	a.app.register(fs, false) // compare's mix is --blocking's
	a.ports.register(fs)
	a.objectives.register(fs)
	fs.StringVar(&a.jsonPath, "json", "", "also write the findings (findings.json) to `FILE` (\"-\": stdout, the text then goes to stderr)")
	a.hosts.register(fs)
	fs.example(
		`spindle compare`,
		`spindle compare --full --rounds 5`,
		`spindle compare --only nethttp,carrier --sweep`,
		`spindle compare --slo 'p99<=10ms' --json findings.json`,
		`spindle compare --server-host h1 --load-hosts h2,h3`,
		`spindle compare --app tfb --target /db`,
		`spindle compare --app tfb --only nethttp,nethttp-carrier --reference nethttp --target '/queries?queries=20'`,
	)
	return fs, a
}

// variantsHelp lists the configurations compare runs, from the table
// --only checks against (bench.Variants), each with what it needs where
// the machine may lack it, one to a line.
func variantsHelp() string {
	var b strings.Builder
	for i, v := range bench.Variants {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "  %-17s %s", v.Name, v.About)
		if need := v.Needs(); need != "" {
			b.WriteString("; needs " + need)
		}
	}
	return b.String()
}

// sharesText lists the sweep's shares: "10%, 25%, ... 110%".
func sharesText() string {
	ps := make([]string, len(bench.SweepShares))
	for i, s := range bench.SweepShares {
		ps[i] = percent(s)
	}
	return strings.Join(ps, ", ")
}

// percent writes a share as a percentage to 0.01%, without the binary
// fraction's artefacts: 1.10 is "110%", not "110.00000000000001%".
func percent(share float64) string {
	return strconv.FormatFloat(math.Round(share*1e4)/100, 'f', -1, 64) + "%"
}

// parseRates parses --rates: req/s, comma-separated, each as bench
// --rate reads it (cliflag's whole numbers: 20k, 1.5M) from 1 to
// load.MaxRate.
func parseRates(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var rates []int
	for _, f := range strings.Split(s, ",") {
		var r int
		if err := cliflag.Within(&r, 1, load.MaxRate).Set(strings.TrimSpace(f)); err != nil {
			if f == s {
				return nil, badInput("--rates %q: %v (k, M, G suffixes allowed)", s, err)
			}
			return nil, badInput("--rates %q: %q: %v (k, M, G suffixes allowed)", s, f, err)
		}
		rates = append(rates, r)
	}
	return rates, nil
}

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, a := compareFlags()
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return badInput("compare takes no arguments (got %q)", pos[0])
	}
	opts, err := a.options(fs)
	if err != nil {
		return err
	}
	if err := a.objectives.parse("compare"); err != nil {
		return err
	}
	jsonOut, stdout, err := jsonOutput(a.jsonPath, stdout, stderr)
	if err != nil {
		return err
	}
	if err := a.ports.check(); err != nil {
		return err
	}
	all, topo, err := bench.Machine()
	if err != nil {
		return err
	}
	opts.CPUs, opts.Topology = all, topo
	plan, err := bench.ComparePlan(opts)
	if err != nil {
		return asBadInput(err)
	}
	for pi := range plan.Phases {
		for i := range plan.Phases[pi].Configs {
			c := &plan.Phases[pi].Configs[i]
			c.ServerPort, c.MockPort, c.AdminPort = a.ports.server, a.ports.mock, a.ports.admin
			c.PerfSched, c.PerfStat = a.perfSched, !a.noPerfStat
			if err := c.Validate(a.strict); err != nil {
				return badInput("%s: %v", c.Name, configInput(err, compareFlagOf))
			}
		}
	}
	dir, err := outputDir("output-dir", a.outDir, filepath.Join("results", "compare-"+time.Now().Format("20060102-150405")))
	if err != nil {
		return err
	}
	hosts, closeHosts, err := a.hosts.open(ctx)
	if err != nil {
		return err
	}
	defer closeHosts()
	if err := hosts.CheckCPUs(plan.Phases[0].Configs[0]); err != nil { // every configuration shares the layout
		return asBadInput(err)
	}
	if opts.App == string(server.AppTFB) && hosts.Remote() {
		return badInput("--app %s runs every role on this machine (its database is started here): no --server-host, --mock-host or --load-hosts", opts.App)
	}
	fmt.Fprintf(stdout, "spindle compare: %s\n", plan.Description)
	if hosts.Remote() {
		fmt.Fprintf(stdout, "hosts: %s\n", hosts.Layout())
	} else {
		plan.Idle = observe.ReadIdle("").String()
		fmt.Fprintf(stdout, "idle CPUs: %s\n", plan.Idle)
	}
	fmt.Fprintf(stdout, "%s (%s x %s x %s), about %s -> %s\n", report.Count(plan.Runs(), "run", "runs"),
		report.Count(len(plan.Phases[0].Configs), "configuration", "configurations"), report.Count(len(plan.Phases), "load", "loads"),
		report.Count(plan.Rounds, "round", "rounds"), plan.Estimate(bench.DefaultOverhead).Round(time.Second), dir)
	db, err := startDB(ctx, plan.Phases[0].Configs[0], plan.Layout.Mock, stdout)
	if err != nil {
		return err
	}
	err = compareRun(ctx, a, plan, dir, hosts, db, jsonOut, stdout, stderr)
	return stopDB(db, err)
}

// compareFlagOf names compare's flag of each bench.Config field it sets,
// for Validate's errors about a configuration of the plan.
var compareFlagOf = map[string]string{
	"Connections": "--connections", "Warmup": "--warmup", "Duration": "--duration", "Rate": "--rates",
	"App": "--app", "Target": "--target", "DBPool": "--db-pool",
}

// options turns the flags into the plan's options, but for the machine's
// CPUs and topology: a flag typed with 0 means what it says (--warmup 0:
// none) where the flags' own 0 stands for the preset's.
func (a *compareArgs) options(fs *flagSet) (bench.CompareOptions, error) {
	rates, err := parseRates(a.rates)
	if err != nil {
		return bench.CompareOptions{}, err
	}
	var only []string
	if fs.given("only") {
		if strings.TrimSpace(strings.ReplaceAll(a.only, ",", "")) == "" {
			return bench.CompareOptions{}, badInput("--only %q: want a comma-separated list of configurations (%s)", a.only, strings.Join(bench.VariantNames(), ", "))
		}
		only = strings.Split(a.only, ",")
	}
	if fs.given("blocking-share") && a.blocking == "" {
		return bench.CompareOptions{}, badInput("--blocking-share %d goes with --blocking KIND (%s): without it no request blocks", a.blockingShare, strings.Join(server.BlockKinds, ", "))
	}
	// The app's flags, checked on a configuration of a mode every app
	// runs in; ComparePlan keeps the variants of the app's modes.
	probe := bench.Config{Mode: bench.ModeNetHTTP, BlockingEndpoint: a.blocking != ""}
	if err := a.app.apply(&probe); err != nil {
		return bench.CompareOptions{}, err
	}
	a.budgetGiven = fs.given("time-budget")
	return bench.CompareOptions{Exclusive: a.strict, Full: a.full, IOBound: a.ioBound,
		Rounds: a.rounds, Only: only, Reference: a.reference, Connections: a.connections,
		Warmup: a.warmup, NoWarmup: fs.given("warmup") && a.warmup == 0, Duration: a.duration, Sweep: a.sweep, Rates: rates,
		Blocking: a.blocking, BlockingShare: a.blockingShare, App: probe.App, Target: probe.Target, DBPool: probe.DBPool}, nil
}

// compareRun runs plan into dir and writes its report.
func compareRun(ctx context.Context, a *compareArgs, plan bench.Plan, dir string, hosts *bench.Hosts, db *bench.DB, jsonOut, stdout, stderr io.Writer) error {
	if err := bench.PinRunner(plan.Layout.Load); err != nil {
		return err
	}
	line := newProgressLine(stderr, "compare")
	budget := a.budget
	if !a.budgetGiven {
		budget = plan.Budget(bench.DefaultOverhead)
	}
	if budget > 0 {
		fmt.Fprintf(stdout, "time budget %v: runs left out by the checks get extra rounds while they fit\n", budget)
	} else {
		fmt.Fprintln(stdout, "time budget 0: no extra rounds")
	}
	results, runErr := bench.RunPlan(ctx, plan, bench.RunPlanOptions{Dir: dir, Run: bench.RunOptions{Hosts: hosts, DB: db}, Progress: line.show, Budget: budget,
		Failed: func(r report.Result, err error) {
			line.done()
			fmt.Fprintf(stderr, "spindle compare: %s (%s round %d) incomplete, going on: %v\n",
				r.Summary.Name, r.Summary.Phase, r.Summary.Round, err)
		}})
	line.close()
	if errors.Is(runErr, bench.ErrPortBusy) {
		return asBadInput(runErr)
	}
	if len(results) > 0 {
		preamble := planDescription([]string{dir}) // with the rounds run
		if preamble == "" {
			preamble = plan.Preamble()
		}
		rep, err := report.Write(dir, results, report.Options{Title: "spindle compare", Preamble: preamble, SLOP99: a.slo})
		if err != nil {
			return errors.Join(runErr, err)
		}
		printHeadlines(stdout, rep)
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dir, report.File))
		if a.jsonPath != "" {
			if err := writeJSONOut(a.jsonPath, jsonOut, report.FindingsJSON{Findings: rep.Findings()}); err != nil {
				return errors.Join(runErr, err)
			}
		}
	}
	if runErr != nil {
		return runErr
	}
	return a.objectives.check(stdout, "compare", results)
}

// printHeadlines prints each configuration's headline figures (with its
// load factor at the fixed rate), the findings' verdicts with each claim's
// text, the runs with stalls seen (they count), and the runs left out of
// the figures: those that failed a check and the incomplete ones.
func printHeadlines(w io.Writer, rep *report.Report) {
	for _, g := range rep.Groups {
		lf := ""
		if f := rep.LoadFactor(g); f != "" {
			lf = "  load factor " + f
		}
		fmt.Fprintf(w, "%-6s %-17s %s req/s  p50 %s ms  p99 %s ms%s\n", g.Phase, g.Name,
			g.Throughput.Format(0, "no run"), g.P50.Format(2, "no latency"), g.P99.Format(2, "no latency"), lf)
	}
	for _, c := range rep.Curves(rep.SLO()) {
		fmt.Fprintf(w, "capacity at p99 < %v: %-17s %s req/s\n", rep.SLO(), c.Name, c.Capacity.Format(0, "no complete round"))
	}
	for i, f := range rep.Findings() {
		fmt.Fprintf(w, "finding %d: %s\n    %s\n", i+1, f.Grade(), f.Claim)
	}
	for _, r := range rep.Stalled() { // a warning: these runs count
		fmt.Fprintf(w, "stalls seen: %s (%s): %s\n", r.Dir, r.Summary.Name, strings.TrimPrefix(r.Why, "stalls seen: "))
	}
	for _, r := range rep.LeftOut {
		fmt.Fprintf(w, "left out: %s (%s): %s\n", r.Dir, r.Summary.Name, r.Why)
	}
	for _, r := range rep.Incomplete {
		fmt.Fprintf(w, "incomplete: %s (%s): %s\n", r.Dir, r.Summary.Name, r.Summary.Reason)
	}
}
