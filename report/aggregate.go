package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/observe"
	"github.com/spindle-lab/spindle/quantile"
)

// Stat is a figure over rounds: median, min and max of the runs that have
// it. N is 0 when no run has it.
type Stat struct {
	Median, Min, Max float64
	N                int
}

// statOf summarizes vs (NaN values are skipped).
func statOf(vs []float64) Stat { return Stat(quantile.Of(vs)) }

// Format renders the median with prec decimals and, over several runs,
// the range: "1.20 (1.10–1.35)"; "n/a (reason)" when no run has it.
func (s Stat) Format(prec int, reason string) string {
	if s.N == 0 {
		if reason == "" {
			return "n/a"
		}
		return fmt.Sprintf("n/a (%s)", reason)
	}
	if s.N == 1 || s.Min == s.Max {
		return fmt.Sprintf("%.*f", prec, s.Median)
	}
	return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, s.Median, prec, s.Min, prec, s.Max)
}

// Group is one configuration in one phase over its rounds.
type Group struct {
	Phase, Name, Mode string
	ServerCPUs        string
	Threads           int
	// Runs counts complete runs that passed the checks (Check);
	// Incomplete the runs that did not complete, LeftOut those that
	// failed a check.
	Runs, Incomplete, LeftOut int
	// Rate is the fixed rate asked for (0: max throughput).
	Rate int
	// Throughput in req/s; latency percentiles in ms (corrected).
	Throughput, P50, P90, P99, P999 Stat
	// Errors is the request errors (failures and non-2xx answers) per run.
	Errors Stat
	// CPUs and ContextSwitches come from perf stat when it ran, else from
	// the /proc thread sampling; CPUSource says which.
	CPUs, ContextSwitches Stat
	CPUSource             string
	IPC                   Stat
	// OtherCPUs is the machine's CPU time spent on anything but the runs.
	OtherCPUs Stat
	// BackendBusy is the share of time the backend's CPUs were busy.
	BackendBusy Stat
	// CPUPerRequest is the server's CPU time per request, µs (CPUs over
	// throughput, CPUs from CPUSource); SyscallsPerRequest its system
	// calls per request (perf stat's system calls/s over throughput).
	CPUPerRequest, SyscallsPerRequest Stat
	// Threads of the server process (all, active), mean %wait of active
	// threads, migrations per second.
	AllThreads, ActiveThreads, WaitPct, Migrations Stat
	// Carrier telemetry.
	IOCycles, EventsPerCycle, TasksPerDrain, QueueDepthAvg, QueueDepthP50 Stat
	SubmitP50, SubmitP99, Steals, Moved, Handoffs, Slice, Batched         Stat
	// io_uring pollers only: enters per 10 s, SQEs per enter, CQEs per pass.
	RingEnters, SubmitsPerEnter, CQEsPerPass Stat
	// Mix has each request target's figures over the runs, when the load
	// sent a mix (in the first run's order).
	Mix []MixStat
	// Hist is the corrected latency of all complete runs merged; nil if none.
	Hist *latency.Histogram
	// NA collects why figures are missing.
	NA map[string]string
	// runs are the complete runs; byRound holds them by round, for paired
	// ratios.
	runs    []Summary
	byRound map[int]Summary
	// all are every complete run, checked or left out, in run order: the
	// sources of the latency-over-time plots and the profiles.
	all []Result
}

// Report is the aggregated view of a set of result directories.
type Report struct {
	// Groups in phase order (max, fixed, then others) and run order.
	Groups []*Group
	// Incomplete lists runs that did not complete: dir and reason.
	Incomplete []Result
	// LeftOut lists complete runs that failed a check, with why.
	LeftOut []LeftOut
	// Results is how many directories were read.
	Results int
	// Hosts are the distinct placements of roles on other hosts
	// (Summary.Hosts), in run order; empty when every run was local.
	Hosts []string
	// SLOP99 is the latency objective of the capacity figures (Curves);
	// 0 means DefaultSLOP99.
	SLOP99 time.Duration
	// Apps are the applications other than the study's that the runs
	// served (Summary.App), in run order: where there is one, the study's
	// findings are not checked (Findings is empty), since the runs are not
	// its experiment.
	Apps []string
}

// StudyApp is the application of the scheduler study's experiment, as
// Summary.App names it ("" in results written before there was another).
const StudyApp = "fruits"

// phaseRank orders phases in reports.
func phaseRank(p string) int {
	switch p {
	case PhaseMax:
		return 0
	case PhaseFixed:
		return 1
	}
	return 2
}

// Build aggregates results, grouping runs by phase and configuration name.
func Build(results []Result) (*Report, error) {
	rs := slices.Clone(results)
	// Run order: the first round's order of configurations is the report's.
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Summary.Started.Before(rs[j].Summary.Started) })
	rep := &Report{Results: len(rs)}
	type key struct{ phase, name string }
	byKey := map[key]*Group{}
	runs := map[key][]Summary{}
	for _, r := range rs {
		s := r.Summary
		if s.Hosts != "" && !slices.Contains(rep.Hosts, s.Hosts) {
			rep.Hosts = append(rep.Hosts, s.Hosts)
		}
		if s.App != "" && s.App != StudyApp && !slices.Contains(rep.Apps, s.App) {
			rep.Apps = append(rep.Apps, s.App)
		}
		k := key{s.Phase, s.Name}
		g := byKey[k]
		if g == nil {
			g = &Group{Phase: s.Phase, Name: s.Name, Mode: s.Mode, ServerCPUs: s.ServerCPUs, Threads: s.Threads, NA: map[string]string{}}
			byKey[k] = g
			rep.Groups = append(rep.Groups, g)
		}
		if !s.Complete {
			g.Incomplete++
			rep.Incomplete = append(rep.Incomplete, r)
			continue
		}
		g.all = append(g.all, r)
		if why := Check(s); why != "" {
			g.LeftOut++
			rep.LeftOut = append(rep.LeftOut, LeftOut{Result: r, Why: why})
			continue
		}
		g.Runs++
		runs[k] = append(runs[k], s)
		if g.byRound == nil {
			g.byRound = map[int]Summary{}
		}
		g.byRound[s.Round] = s
	}
	sort.SliceStable(rep.Groups, func(i, j int) bool {
		return phaseRank(rep.Groups[i].Phase) < phaseRank(rep.Groups[j].Phase)
	})
	for _, g := range rep.Groups {
		if err := g.fill(runs[key{g.Phase, g.Name}]); err != nil {
			return nil, fmt.Errorf("%s %s: %w", g.Phase, g.Name, err)
		}
	}
	return rep, nil
}

// stat summarizes f over the group's complete runs (NaN: the run lacks
// the figure).
func (g *Group) stat(f func(Summary) float64) Stat {
	vs := make([]float64, len(g.runs))
	for i, s := range g.runs {
		vs[i] = f(s)
	}
	return statOf(vs)
}

// fill computes the group's figures from its complete runs.
func (g *Group) fill(ss []Summary) error {
	g.runs = ss
	col := g.stat
	nan := math.NaN()
	pct := func(p string) Stat { return col(latencyMs(p)) }
	rates := col(func(s Summary) float64 { return float64(s.Rate) })
	g.Rate = int(rates.Median)
	g.Throughput = col(func(s Summary) float64 { return s.Throughput })
	g.Errors = col(func(s Summary) float64 { return float64(s.Errors) })
	g.P50, g.P90, g.P99, g.P999 = pct("50"), pct("90"), pct("99"), pct("99.9")
	g.Mix = mixStats(ss)
	perfRuns := 0
	for _, s := range ss {
		if s.Perf != nil && s.Perf.CPUsUtilized.NA == "" {
			perfRuns++
		}
		for k, v := range s.NA {
			g.NA[k] = v
		}
	}
	g.CPUSource = sourceProc
	if perfRuns > 0 && perfRuns == len(ss) {
		g.CPUSource = sourcePerf
		g.IPC = col(func(s Summary) float64 { return figure(s.Perf.IPC.Value, s.Perf.IPC.NA) })
		if g.IPC.N == 0 && len(ss) > 0 {
			g.NA["ipc"] = ss[0].Perf.IPC.NA
		}
	} else {
		g.NA["ipc"] = "perf stat did not run"
		if r, ok := g.NA["perf-stat"]; ok {
			g.NA["ipc"] = r
		}
	}
	g.CPUs = col(func(s Summary) float64 { return cpusOf(s, g.CPUSource) })
	g.ContextSwitches = col(func(s Summary) float64 { return switchesOf(s, g.CPUSource) })
	g.CPUPerRequest = col(func(s Summary) float64 { return perRequest(s, cpusOf(s, g.CPUSource)*1e6) })
	g.SyscallsPerRequest = col(func(s Summary) float64 {
		f := s.SyscallsPerRequest("")
		return figure(f.Value, f.NA)
	})
	g.NA["syscalls"] = syscallsNA(ss, g.NA)
	g.OtherCPUs = col(func(s Summary) float64 {
		if s.OtherCPUs == nil {
			return nan
		}
		return *s.OtherCPUs
	})
	g.BackendBusy = col(func(s Summary) float64 {
		if s.BackendBusy == nil {
			return nan
		}
		return *s.BackendBusy
	})
	if _, ok := g.NA["backend-busy"]; !ok && g.BackendBusy.N == 0 && len(ss) > 0 {
		g.NA["backend-busy"] = "not recorded by this run: a summary from before the figure"
	}
	g.AllThreads = col(func(s Summary) float64 {
		return threadFig(s, func(t *ThreadFigures) float64 { return float64(t.Threads) })
	})
	g.ActiveThreads = col(func(s Summary) float64 {
		return threadFig(s, func(t *ThreadFigures) float64 { return float64(t.Active) })
	})
	g.WaitPct = col(func(s Summary) float64 { return threadFig(s, func(t *ThreadFigures) float64 { return t.WaitPct }) })
	g.Migrations = col(func(s Summary) float64 {
		return threadFig(s, func(t *ThreadFigures) float64 {
			if t.MigrationsNA != "" {
				return nan
			}
			return float64(t.Migrations) / s.ObserveWindow.Seconds()
		})
	})
	for _, s := range ss {
		if s.Server != nil && s.Server.MigrationsNA != "" {
			g.NA["migrations"] = s.Server.MigrationsNA
		}
	}
	car := func(f func(c *CarrierFigures) float64) Stat { return col(carrierFig(f)) }
	g.IOCycles = car(func(c *CarrierFigures) float64 { return float64(c.IOCyclesPer10s) })
	g.EventsPerCycle = car(func(c *CarrierFigures) float64 { return float64(c.EventsPerCycle) })
	g.TasksPerDrain = car(func(c *CarrierFigures) float64 { return float64(c.TasksPerDrain) })
	g.QueueDepthAvg = car(func(c *CarrierFigures) float64 { return float64(c.QueueDepthAvg) })
	g.QueueDepthP50 = car(func(c *CarrierFigures) float64 { return float64(c.QueueDepthP50) })
	g.SubmitP50 = car(func(c *CarrierFigures) float64 { return float64(c.SubmitToRunP50Us) })
	g.SubmitP99 = car(func(c *CarrierFigures) float64 { return float64(c.SubmitToRunP99Us) })
	g.Steals = car(func(c *CarrierFigures) float64 { return float64(c.Steals) })
	g.Moved = car(func(c *CarrierFigures) float64 { return float64(c.Migrations) })
	g.Handoffs = car(func(c *CarrierFigures) float64 { return float64(c.HandoffsPer10s) })
	g.Slice = car(func(c *CarrierFigures) float64 { return float64(c.SliceUs) })
	g.Batched = car(func(c *CarrierFigures) float64 { return 100 * float64(c.BatchedShare) })
	ring := func(f func(c *CarrierFigures) Num) Stat {
		return car(func(c *CarrierFigures) float64 {
			if c.RingEntersPer10s == 0 { // a result written before ring figures existed
				return nan
			}
			return float64(f(c))
		})
	}
	g.RingEnters = ring(func(c *CarrierFigures) Num { return c.RingEntersPer10s })
	g.SubmitsPerEnter = ring(func(c *CarrierFigures) Num { return c.SubmissionsPerEnter })
	g.CQEsPerPass = ring(func(c *CarrierFigures) Num { return c.CompletionsPerPass })
	var sums []latency.Summary
	for _, s := range ss {
		if s.Latency != nil && s.Latency.Count > 0 {
			sums = append(sums, *s.Latency)
		}
	}
	if len(sums) > 0 {
		h, err := latency.MergeSummaries(sums...)
		if err != nil {
			return err
		}
		g.Hist = h
	}
	return nil
}

// Sources of a group's CPU figures (Group.CPUSource): perf stat when it
// measured every run, else the /proc thread sampling.
const (
	sourcePerf = "perf stat"
	sourceProc = "/proc"
)

// commonSource is the source of CPU figures two groups share: perf stat
// where both have it, else the /proc sampling.
func commonSource(a, b *Group) string {
	if a.CPUSource == sourcePerf && b.CPUSource == sourcePerf {
		return sourcePerf
	}
	return sourceProc
}

// cpusOf is a run's server CPUs utilized from source, NaN without.
func cpusOf(s Summary, source string) float64 {
	return fromSource(s, source, func(p *observe.PerfSummary) observe.Figure { return p.CPUsUtilized },
		func(t *ThreadFigures) float64 { return t.CPUs })
}

// switchesOf is a run's server context switches per second from source,
// NaN without.
func switchesOf(s Summary, source string) float64 {
	return fromSource(s, source, func(p *observe.PerfSummary) observe.Figure { return p.ContextSwitchesPerSec },
		func(t *ThreadFigures) float64 { return t.ContextSwitchesPerSec })
}

// SyscallsPerRequest is the run's server system calls per request: perf
// stat's system calls per second over the throughput, or why there is none.
// perfNA is the reason perf stat did not run, where it did not.
func (s Summary) SyscallsPerRequest(perfNA string) observe.Figure {
	switch {
	case s.Perf == nil && perfNA != "":
		return observe.Figure{NA: perfNA}
	case s.Perf == nil:
		return observe.Figure{NA: "perf stat did not run"}
	case s.Perf.SyscallsPerSec == nil:
		return observe.Figure{NA: "not counted: an older result"}
	case s.Perf.SyscallsPerSec.NA != "":
		return *s.Perf.SyscallsPerSec
	case s.Throughput <= 0:
		return observe.Figure{NA: "no request answered"}
	}
	return observe.Figure{Value: s.Perf.SyscallsPerSec.Value / s.Throughput}
}

// syscallsNA is why runs ss have no system calls per request (the first
// reason found), "" when they have them; na holds the group's other
// reasons.
func syscallsNA(ss []Summary, na map[string]string) string {
	for _, s := range ss {
		if f := s.SyscallsPerRequest(na["perf-stat"]); f.NA != "" {
			return f.NA
		}
	}
	return ""
}

// perRequest is v, a rate per second, per request of run s: v over its
// throughput (NaN without throughput).
func perRequest(s Summary, v float64) float64 {
	if s.Throughput <= 0 {
		return math.NaN()
	}
	return v / s.Throughput
}

// fromSource is a run's server figure from perf stat (perf) when source is
// sourcePerf, else from the per-thread /proc figures (thread); NaN without.
func fromSource(s Summary, source string, perf func(*observe.PerfSummary) observe.Figure, thread func(*ThreadFigures) float64) float64 {
	if source == sourcePerf {
		if s.Perf == nil {
			return math.NaN()
		}
		f := perf(s.Perf)
		return figure(f.Value, f.NA)
	}
	return threadFig(s, thread)
}

// figure is v, or NaN when the figure is missing.
func figure(v float64, na string) float64 {
	if na != "" {
		return math.NaN()
	}
	return v
}

// carrierFig reads a carrier figure of a run, NaN when the run has none.
func carrierFig(f func(*CarrierFigures) float64) func(Summary) float64 {
	return func(s Summary) float64 {
		if s.Carrier == nil {
			return math.NaN()
		}
		return f(s.Carrier)
	}
}

// threadFig reads a thread figure, NaN when the run has none.
func threadFig(s Summary, f func(*ThreadFigures) float64) float64 {
	if s.Server == nil {
		return math.NaN()
	}
	return f(s.Server)
}

// Find returns the group of phase and name, or nil.
func (r *Report) Find(phase, name string) *Group {
	for _, g := range r.Groups {
		if g.Phase == phase && g.Name == name {
			return g
		}
	}
	return nil
}

// Phases returns the phases present, in report order.
func (r *Report) Phases() []string {
	var ps []string
	for _, g := range r.Groups {
		if !slices.Contains(ps, g.Phase) {
			ps = append(ps, g.Phase)
		}
	}
	return ps
}

// Ratio compares g with base run by run: f(g's run) / f(base's run) for
// each round both completed (the runs of one round ran back to back), as
// median (min–max). N is 0 without a pair.
func (g *Group) Ratio(base *Group, f func(Summary) float64) Stat {
	var vs []float64
	for round, s := range g.byRound {
		b, ok := base.byRound[round]
		if !ok {
			continue
		}
		x, y := f(s), f(b)
		if y != 0 && !math.IsNaN(x) && !math.IsNaN(y) {
			vs = append(vs, x/y)
		}
	}
	return statOf(vs)
}

// p50 and p99 read a run's corrected percentiles in µs (NaN without).
func p50(s Summary) float64 { return percentile(s, "50") }
func p99(s Summary) float64 { return percentile(s, "99") }

// latencyMs reads a run's corrected percentile p ("50", "99.9") in ms.
// MixStat is one request target's figures over a group's runs: its share
// of the weights, its corrected latency percentiles in ms, and the percent
// of its requests queued behind an earlier answer on their connection
// (MixFigures.Queued).
type MixStat struct {
	Target         string
	Share          float64
	P50, P99, P999 Stat
	QueuedPct      Stat
}

// mixStats summarizes the runs' mix entries by target, in the first
// run's order; nil when no run had a mix.
func mixStats(ss []Summary) []MixStat {
	var out []MixStat
	for _, s := range ss {
		if len(s.Mix) == 0 {
			continue
		}
		total := 0
		for _, m := range s.Mix {
			total += m.Weight
		}
		for _, m := range s.Mix {
			out = append(out, MixStat{Target: m.Target, Share: float64(m.Weight) / float64(total)})
		}
		break
	}
	for i := range out {
		figure := func(f func(MixFigures) float64) Stat {
			var vs []float64
			for _, s := range ss {
				for _, m := range s.Mix {
					if m.Target == out[i].Target {
						vs = append(vs, f(m))
					}
				}
			}
			return statOf(vs)
		}
		pct := func(p string) Stat {
			return figure(func(m MixFigures) float64 {
				if m.Latency.Count == 0 {
					return math.NaN()
				}
				return float64(m.Latency.PercentilesUs[p]) / 1000
			})
		}
		out[i].P50, out[i].P99, out[i].P999 = pct("50"), pct("99"), pct("99.9")
		out[i].QueuedPct = figure(func(m MixFigures) float64 {
			if m.Completed == 0 {
				return math.NaN()
			}
			return 100 * float64(m.Queued) / float64(m.Completed)
		})
	}
	return out
}

func latencyMs(p string) func(Summary) float64 {
	return func(s Summary) float64 { return percentile(s, p) / 1000 }
}

func percentile(s Summary, p string) float64 {
	if s.Latency == nil || s.Latency.Count == 0 {
		return math.NaN()
	}
	return float64(s.Latency.PercentilesUs[p])
}

func throughput(s Summary) float64 { return s.Throughput }

// Count formats n with its noun, singular for 1: Count(1, "run", "runs") is
// "1 run", Count(3, "run", "runs") "3 runs".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
