package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/load"
)

// File is the name of the report written by Write; FindingsFile, beside
// it, holds the findings as JSON (a FindingsJSON).
const (
	File         = "report.md"
	FindingsFile = "findings.json"
)

// FindingsJSON is the form of findings.json (and of "compare --json"):
// the findings in the report's order, beside the file's schema_version.
type FindingsJSON struct {
	Findings []Finding `json:"findings"`
}

// Options configures Write.
type Options struct {
	// Title heads the report; "" means "spindle report".
	Title string
	// Preamble is Markdown printed under the title (the layout, the
	// command that ran); may be empty.
	Preamble string
	// SLOP99 is the latency objective of a sweep's capacity figures; 0
	// means DefaultSLOP99.
	SLOP99 time.Duration
}

// Write builds the report of results into dir: report.md and its PNG plots.
// A plot without data is skipped and the report says why.
func Write(dir string, results []Result, opt Options) (*Report, error) {
	rep, err := Build(results)
	if err != nil {
		return nil, err
	}
	rep.SLOP99 = opt.SLOP99
	plots := func(name string, draw func(path string) error) string {
		if err := draw(filepath.Join(dir, name)); err != nil {
			return fmt.Sprintf("_(%s not drawn: %v)_\n", name, err)
		}
		return fmt.Sprintf("![%s](%s)\n", strings.TrimSuffix(name, ".png"), name)
	}
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b, opt, plots); err != nil {
		return nil, err
	}
	if err := WriteJSON(filepath.Join(dir, FindingsFile), FindingsJSON{Findings: rep.Findings()}); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, File), b.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("write report: %w", err)
	}
	return rep, nil
}

// phaseTitle is a phase's heading.
func (r *Report) phaseTitle(phase string) string {
	switch phase {
	case PhaseMax:
		return "Max throughput (closed loop)"
	case PhaseFixed:
		for _, g := range r.Groups {
			if g.Phase == PhaseFixed && g.Rate > 0 {
				return fmt.Sprintf("Fixed rate: %d req/s", g.Rate)
			}
		}
		return "Fixed rate"
	case "":
		return "Runs"
	}
	return "Phase " + phase
}

// fileTag names a phase in plot file names.
func fileTag(phase string) string {
	if phase == "" {
		return "runs"
	}
	return phase
}

// WriteMarkdown writes the report; plot draws one PNG and returns the
// Markdown that shows it (or says why it is missing).
func (r *Report) WriteMarkdown(w io.Writer, opt Options, plot func(name string, draw func(path string) error) string) error {
	title := opt.Title
	if title == "" {
		title = "spindle report"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", title)
	if opt.Preamble != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(opt.Preamble))
	}
	for _, h := range r.Hosts {
		fmt.Fprintf(&b, "Roles on other hosts: %s (each host's kernel, CPU model, binary hash and clock offset are in the runs' config.json).\n\n", h)
	}
	fmt.Fprintf(&b, "%s, %d incomplete. Figures are the median over rounds with (min–max); "+
		"latency is corrected for coordinated omission.\n\n", Count(r.Results, "result directory", "result directories"), len(r.Incomplete))

	if busy := r.busiest(); busy > busyThreshold {
		fmt.Fprintf(&b, "**Warning:** the machine was busy with other work during the runs (up to %.2f CPUs of other "+
			"load in one configuration's median): the figures below are noisy and the verdicts may not hold on a quiet machine.\n\n", busy)
	}
	if len(r.Apps) > 0 {
		fmt.Fprintf(&b, "## Findings\n\nNot this study's experiment: these runs served the %s app, not the scheduler study's "+
			"/fruits through the mock backend, so the study's claims are not checked against them (%s holds no finding). "+
			"The tables below give each configuration's figures.\n\n", strings.Join(r.Apps, " and "), FindingsFile)
		r.writeRatios(&b)
	} else {
		fmt.Fprintf(&b, "## Findings\n\nThe scheduler study's claims, checked on this machine. A part of a claim (one figure of two "+
			"configurations) is confirmed or refuted only where the rounds agree on the difference: each round's ratio of the "+
			"two configurations on the same side of 1 (without paired rounds, min–max ranges that do not overlap). Otherwise "+
			"it is inconclusive. A difference the rounds agree on but smaller than the figure's run-to-run spread (how far "+
			"one configuration's median moves between two comparisons on an unchanged machine) is **weak**: another "+
			"comparison may show the opposite. A claim takes the verdict of the part that decides it (a firm refutation, "+
			"else an inconclusive part, else a weak one). The verdicts are also in %s.\n\n", FindingsFile)
		b.WriteString("| # | claim (study) | verdict | parts | figures here |\n|---|---|---|---|---|\n")
		for i, f := range r.Findings() {
			fmt.Fprintf(&b, "| %d | %s | **%s** | %s | %s |\n", i+1, cell(f.Claim), cell(f.Grade()), cell(f.partList()), cell(f.Figures))
		}
		b.WriteString("\n")
		r.writeRatios(&b)
		r.writeSplit(&b)
	}

	for _, phase := range r.Phases() {
		if IsSweepPhase(phase) {
			continue // in the latency–load section
		}
		var gs []*Group
		for _, g := range r.Groups {
			if g.Phase == phase {
				gs = append(gs, g)
			}
		}
		fmt.Fprintf(&b, "## %s\n\n", r.phaseTitle(phase))
		if phase == PhaseFixed {
			fmt.Fprintf(&b, "Load factor: the fixed rate over the configuration's own median max throughput; above %.2f a "+
				"configuration runs near saturation, where queueing grows steeply.\n\n", NearSaturation)
			b.WriteString("| configuration | load factor |\n|---|---|\n")
			for _, g := range gs {
				lf := r.LoadFactor(g)
				if lf == "" {
					lf = "n/a (no max-throughput run)"
				}
				fmt.Fprintf(&b, "| %s | %s |\n", g.Name, lf)
			}
			b.WriteString("\n")
		}
		b.WriteString("| configuration | server CPUs | runs | req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | errors | CPUs utilized | context switches/s | IPC | other load (CPUs) | backend CPUs busy |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, g := range gs {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				g.Name, g.serverCPUs(), runs(g), g.Throughput.Format(0, "no run"),
				g.P50.Format(2, "no latency"), g.P90.Format(2, "no latency"), g.P99.Format(2, "no latency"),
				g.P999.Format(2, "no latency"), g.Errors.Format(0, "no run"),
				g.CPUs.Format(2, g.naReason("perf-stat")), g.ContextSwitches.Format(0, g.naReason("perf-stat")),
				g.IPC.Format(2, g.naReason("ipc")), g.OtherCPUs.Format(2, g.naReason("other-cpus")),
				g.BackendBusy.Format(2, g.naReason("backend-busy")))
		}
		writeMix(&b, gs)
		fmt.Fprintf(&b, "\nCPUs utilized and context switches of the server process, from %s. "+
			"Other load is the CPU time the machine spent on anything but the run's processes (other "+
			"tenants, the kernel, steal) in the observers' window: where it is high, figures are noisy. "+
			"Backend CPUs busy is the share of time the mock's CPUs (the tfb app's database's) ran anything in that window: "+
			"near 1 the backend, not the server, is what limits, and its stalls show in the server's tail.\n\n", sources(gs))

		b.WriteString("Per request (the server process's figure per second over the run's req/s):\n\n")
		b.WriteString("| configuration | server CPU µs/request | system calls/request |\n|---|---|---|\n")
		for _, g := range gs {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", g.Name, g.CPUPerRequest.Format(1, g.naReason("perf-stat")),
				g.SyscallsPerRequest.Format(2, g.naReason("syscalls")))
		}
		b.WriteString("\n")

		b.WriteString("Server threads (from /proc over the observers' window):\n\n")
		b.WriteString("| configuration | threads | active threads | mean %wait of active | migrations/s |\n|---|---|---|---|---|\n")
		for _, g := range gs {
			na := g.naReason("threads")
			migrationsNA := na
			if r := g.NA["migrations"]; r != "" {
				migrationsNA = r
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", g.Name, g.AllThreads.Format(0, na),
				g.ActiveThreads.Format(0, na), g.WaitPct.Format(1, na), g.Migrations.Format(1, migrationsNA))
		}
		b.WriteString("\n")

		cs := slices.DeleteFunc(slices.Clone(gs), func(g *Group) bool { return g.IOCycles.N == 0 }) // carrier modes
		if len(cs) > 0 {
			b.WriteString("Carrier telemetry (all carriers, observers' window):\n\n")
			b.WriteString("| configuration | I/O cycles/10s | events/cycle | tasks/drain | queue depth avg | queue depth p50 | submit→run p50 µs | submit→run p99 µs | steals | of them started (floating) | hand-offs/10s | time slice µs | other threads batched % |\n")
			b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
			for _, g := range cs {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", g.Name,
					g.IOCycles.Format(0, ""), g.EventsPerCycle.Format(2, ""), g.TasksPerDrain.Format(2, ""),
					g.QueueDepthAvg.Format(2, ""), g.QueueDepthP50.Format(1, ""), g.SubmitP50.Format(1, ""),
					g.SubmitP99.Format(1, ""), g.Steals.Format(0, ""), g.Moved.Format(0, ""), g.Handoffs.Format(1, "not recorded: an older result"),
					g.Slice.Format(0, sliceNA), g.Batched.Format(0, batchedNA))
			}
			b.WriteString("\n")
			rs := slices.DeleteFunc(slices.Clone(cs), func(g *Group) bool { return g.RingEnters.N == 0 }) // io_uring pollers
			if len(rs) > 0 {
				b.WriteString("io_uring rings (carriers with an io_uring poller):\n\n")
				b.WriteString("| configuration | io_uring_enter/10s | SQEs/enter | CQEs/pass |\n|---|---|---|---|\n")
				for _, g := range rs {
					fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", g.Name, g.RingEnters.Format(0, ""),
						g.SubmitsPerEnter.Format(2, ""), g.CQEsPerPass.Format(2, ""))
				}
				b.WriteString("\n")
			}
		}

		writeRuntime(&b, gs)

		tag := fileTag(phase)
		b.WriteString(plot("latency-"+tag+".png", func(path string) error {
			return latencyPlot(gs, "Latency by percentile: "+r.phaseTitle(phase), path)
		}))
		if phase == PhaseMax {
			b.WriteString(plot("throughput.png", func(path string) error {
				return barPlot(gs, func(g *Group) Stat { return g.Throughput }, 0, "Max throughput", "requests/s", path)
			}))
		}
		b.WriteString(plot("cpu-"+tag+".png", func(path string) error {
			return barPlot(gs, func(g *Group) Stat { return g.CPUs }, 2, "CPUs utilized by the server: "+r.phaseTitle(phase), "CPUs", path)
		}))
		b.WriteString(plot("cswitch-"+tag+".png", func(path string) error {
			return barPlot(gs, func(g *Group) Stat { return g.ContextSwitches }, 0, "Server context switches: "+r.phaseTitle(phase), "per second", path)
		}))
		b.WriteString("\n")
	}

	r.writeCurves(&b, plot)
	r.writeTimelines(&b, plot)
	r.writeProfiles(&b)

	r.writeStalled(&b)
	if len(r.LeftOut) > 0 {
		b.WriteString("## Runs left out\n\nComplete runs that failed a check (the fixed rate achieved, errors, other load on the " +
			"machine, a load generator that kept up: at a fixed rate one that sent on time, its p90 send lag at most half the p50; " +
			"closed loop one that was not the bottleneck): left out of every figure and verdict above.\n\n")
		for _, res := range r.LeftOut {
			fmt.Fprintf(&b, "- `%s` (%s): %s\n", runLabel(res.Result), res.Summary.Name, res.Why)
		}
		b.WriteString("\n")
	}
	if len(r.Incomplete) > 0 {
		b.WriteString("## Incomplete runs\n\nLeft out of every figure above.\n\n")
		for _, res := range r.Incomplete {
			fmt.Fprintf(&b, "- `%s` (%s): %s\n", runLabel(res), res.Summary.Name, res.Summary.Reason)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeStalled writes the "Runs with stalls" section: the complete runs
// with stalls seen (Stalls), which count in the figures.
func (r *Report) writeStalled(b *strings.Builder) {
	ss := r.Stalled()
	if len(ss) == 0 {
		return
	}
	fmt.Fprintf(b, "## Runs with stalls\n\nComplete runs whose corrected p99.9 is more than %gx their p99: some requests "+
		"waited for something the others did not (a GC pause, a descheduled thread, a sweep). A warning, not a check: "+
		"these runs count in every figure and verdict above, unless they also failed a check (\"Runs left out\"). "+
		"Where the load generator's host also lost %d ms or more of a CPU to its hypervisor in one %d ms sample "+
		"(host steal, load.json's `host_steal`), the line says so: on a virtual machine that stall may be the host's, not the server's. "+
		"\"Latency over time\" draws one of them per configuration, its intervals with a p99 over %gx the run's "+
		"marked.\n\n", StallFactor, load.StealBurst.Milliseconds(), load.StealSample.Milliseconds(), StallFactor)
	for _, s := range ss {
		also := ""
		if r.leftOut(s.Dir) != nil {
			also = " (also left out)"
		}
		fmt.Fprintf(b, "- `%s` (%s): %s%s\n", runLabel(s.Result), s.Summary.Name, s.Why, also)
	}
	b.WriteString("\n")
}

// busyThreshold is the other load, in CPUs, above which the report warns
// that the machine was busy: a tenth of a CPU taken from the runs is
// enough to move latency percentiles on a small machine.
const busyThreshold = 0.1

// sliceNA is why the carrier telemetry's time slice is missing.
const sliceNA = "none reported: Linux before 6.12, floating carriers, or an older result"

// batchedNA is why the carrier telemetry's batched share is missing.
const batchedNA = "not batching: floating, parking or N+1 carriers, --batch-others=false, or an older result"

// busiest is the largest median other load of any group (0 if unknown).
func (r *Report) busiest() float64 {
	m := 0.0
	for _, g := range r.Groups {
		if g.OtherCPUs.N > 0 {
			m = max(m, g.OtherCPUs.Median)
		}
	}
	return m
}

// runs renders complete runs, with the incomplete ones if any.
func runs(g *Group) string {
	if more := unusedRuns(g, "+"); more != "" {
		return fmt.Sprintf("%d (%s)", g.Runs, more)
	}
	return fmt.Sprint(g.Runs)
}

// LoadFactor renders a fixed-rate group's load factor, the rate over its
// own max throughput: "0.72", "0.91 (near saturation)"; "" when unknown.
func (r *Report) LoadFactor(g *Group) string {
	f := r.loadFactor(g)
	if math.IsNaN(f) {
		return ""
	}
	if f > NearSaturation {
		return fmt.Sprintf("%.2f (near saturation)", f)
	}
	return fmt.Sprintf("%.2f", f)
}

// naReason is why a group lacks an observer's figures.
// serverCPUs is the server's CPU set, or n/a with the reason where the
// runs recorded none (a lone load result).
func (g *Group) serverCPUs() string {
	if g.ServerCPUs != "" {
		return g.ServerCPUs
	}
	why := g.NA["server-cpus"]
	if why == "" {
		why = "not recorded"
	}
	return "n/a (" + why + ")"
}

func (g *Group) naReason(key string) string {
	if r, ok := g.NA[key]; ok && r != "" {
		return r
	}
	if g.Runs == 0 {
		return "no complete run"
	}
	return key + " off"
}

// sources lists where the CPU figures of gs come from.
func sources(gs []*Group) string {
	var ss []string
	for _, g := range gs {
		if g.CPUSource != "" && !slices.Contains(ss, g.CPUSource) {
			ss = append(ss, g.CPUSource)
		}
	}
	if len(ss) == 0 {
		return "no source"
	}
	return strings.Join(ss, " and ")
}

// partList renders the parts' verdicts of a claim of several parts:
// "context switches/s refuted, CPUs confirmed (weak)"; "" for one part.
func (f Finding) partList() string {
	if len(f.Parts) < 2 {
		return ""
	}
	ps := make([]string, len(f.Parts))
	for i, p := range f.Parts {
		ps[i] = p.Name + " " + p.Verdict
		if p.Weak {
			ps[i] += " (weak)"
		}
	}
	return strings.Join(ps, ", ")
}

// cell escapes a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// writeRatios writes each configuration against nethttp, paired run by run
// within rounds: the figures to quote, since both ran back to back.
func (r *Report) writeRatios(b *strings.Builder) {
	maxBase, fixedBase := r.Find(PhaseMax, baseline), r.Find(PhaseFixed, baseline)
	if maxBase == nil && fixedBase == nil {
		return
	}
	b.WriteString("## Ratios to nethttp\n\nEach configuration divided by nethttp of the same round (they ran back to back), " +
		"median (min–max) over rounds. Below 1 is less (throughput: worse; latency, CPU: better).\n\n")
	b.WriteString("| configuration | max throughput | p50 at the fixed rate | p99 at the fixed rate | CPUs utilized at the fixed rate |\n|---|---|---|---|---|\n")
	names := []string{}
	for _, g := range r.Groups {
		if g.Name != baseline && !slices.Contains(names, g.Name) {
			names = append(names, g.Name)
		}
	}
	ratio := func(phase, name string, base *Group, f func(Summary) float64) string {
		g := r.Find(phase, name)
		if g == nil || base == nil {
			return "n/a (not run)"
		}
		return g.Ratio(base, f).Format(2, "no paired rounds")
	}
	// CPUs are compared from one source: perf stat where both groups have
	// it, else the /proc sampling.
	cpus := func(name string) string {
		g := r.Find(PhaseFixed, name)
		if g == nil || fixedBase == nil {
			return "n/a (not run)"
		}
		src := commonSource(g, fixedBase)
		return g.Ratio(fixedBase, func(s Summary) float64 { return cpusOf(s, src) }).Format(2, "no paired rounds")
	}
	for _, n := range names {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", n, ratio(PhaseMax, n, maxBase, throughput),
			ratio(PhaseFixed, n, fixedBase, p50), ratio(PhaseFixed, n, fixedBase, p99), cpus(n))
	}
	b.WriteString("\n")
}

// writeCurves writes the latency–load section of a sweep: each
// configuration's points, its capacity at the objective, and the plot.
func (r *Report) writeCurves(b *strings.Builder, plot func(name string, draw func(path string) error) string) {
	slo := r.SLO()
	cs := r.Curves(slo)
	if len(cs) == 0 {
		return
	}
	b.WriteString("## Latency against load\n\nEach configuration at each offered rate of the sweep (the fixed phase included), " +
		"median (min–max) over rounds; the load factor is the rate over the configuration's own max throughput.\n\n")
	b.WriteString("| configuration | offered req/s | achieved req/s | p50 ms | p99 ms | load factor |\n|---|---|---|---|---|---|\n")
	for _, c := range cs {
		for _, p := range c.Points {
			lf := r.LoadFactor(p.group)
			if lf == "" {
				lf = "n/a"
			}
			fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s |\n", c.Name, p.Rate, p.Throughput.Format(0, ""),
				p.P50.Format(2, "no latency"), p.P99.Format(2, "no latency"), lf)
		}
	}
	fmt.Fprintf(b, "\nCapacity at %s: the highest offered rate at which p99 stays under the objective there and at every "+
		"lower rate, per round, median (min–max); 0 when even the lowest rate misses it.\n\n", sloLabel(slo))
	b.WriteString("| configuration | capacity req/s |\n|---|---|\n")
	for _, c := range cs {
		fmt.Fprintf(b, "| %s | %s |\n", c.Name, c.Capacity.Format(0, "no complete round"))
	}
	b.WriteString("\n")
	b.WriteString(plot("latency-load.png", func(path string) error { return curvePlot(cs, slo, path) }))
	b.WriteString("\n")
}

// writeMix is a phase's table of request targets, for runs whose load
// sent a mix: a fast endpoint's latency beside a blocking one's, and the
// carriers' hand-offs that kept them apart.
func writeMix(b *strings.Builder, gs []*Group) {
	if !slices.ContainsFunc(gs, func(g *Group) bool { return len(g.Mix) > 0 }) {
		return
	}
	b.WriteString("\nRequest mix: each target's corrected latency (the table above is all of them together). " +
		"Queued: the target's requests whose connection still waited for an earlier answer when they were due, " +
		"so that they waited in the load generator too.\n\n")
	b.WriteString("| configuration | target | share | p50 ms | p99 ms | p99.9 ms | queued % | hand-offs/10s |\n|---|---|---|---|---|---|---|---|\n")
	for _, g := range gs {
		handoffs := g.Handoffs.Format(1, "not recorded: an older result")
		if g.IOCycles.N == 0 {
			handoffs = "n/a (no carriers)"
		}
		for _, m := range g.Mix {
			fmt.Fprintf(b, "| %s | %s | %.4g%% | %s | %s | %s | %s | %s |\n", g.Name, cell(m.Target), 100*m.Share,
				m.P50.Format(2, "no latency"), m.P99.Format(2, "no latency"), m.P999.Format(2, "no latency"),
				m.QueuedPct.Format(2, "no request"), handoffs)
		}
	}
}

// runLabel names a run's directory with its phase's, as a comparison lays
// them out ("fixed/r1-03-carrier"), so that runs of two phases with one
// name tell apart; a lone run by its directory alone.
func runLabel(r Result) string {
	base := filepath.Base(r.Dir)
	if parent := filepath.Base(filepath.Dir(r.Dir)); parent == r.Summary.Phase {
		return parent + "/" + base
	}
	return base
}
