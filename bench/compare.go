package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/quantile"
	"github.com/spindle-lab/spindle/report"
)

// Progress is the state of a comparison, for a live progress line.
type Progress struct {
	// Run counts from 1 to Runs.
	Run, Runs int
	// Config, Phase and Round name the current run; Step is its step
	// ("warm-up", "measuring"...).
	Config, Phase string
	Round         int
	Step          string
	// Elapsed since the comparison started; Remaining is an estimate.
	Elapsed, Remaining time.Duration
}

// RunPlanOptions configures RunPlan.
type RunPlanOptions struct {
	// Dir is the output directory; run i of phase P, round R goes to
	// Dir/P/rR-ii-NAME.
	Dir string
	// Run options shared by every run (Exe, Perf, ProcRoot, grace).
	Run RunOptions
	// Progress, when set, is called at each step of each run.
	Progress func(Progress)
	// Failed, when set, is told of each run that did not complete, as it
	// happens (the plan goes on).
	Failed func(r report.Result, err error)
	// Overhead is the per-run time beyond warm-up and window assumed by
	// the first remaining-time estimate (later ones use measured runs).
	Overhead time.Duration
	// Budget bounds the whole comparison's wall time, extra rounds
	// included: when a phase's rounds leave a configuration with fewer
	// than the plan's Rounds runs that pass report.Check, RunPlan runs
	// extra rounds of the configurations short of runs (with the phase's
	// first configuration, the reference the ratios pair with) while the
	// measured time per run says the round and the planned runs still to
	// come fit in the budget; at most Rounds extra rounds per phase. 0: no
	// extra rounds.
	Budget time.Duration
}

// Rounds says, per phase, what a comparison ran: the planned rounds, the
// extra rounds (see RunPlanOptions.Budget) and, per configuration, its
// runs that passed report.Check.
type Rounds struct {
	Phase   string         `json:"phase"`
	Planned int            `json:"planned"`
	Extra   int            `json:"extra"`
	Valid   map[string]int `json:"valid"`
	// Short lists the configurations still short of Planned valid runs
	// when the extra rounds ended, and Why says why they ended ("" when
	// none is short).
	Short []string `json:"short,omitempty"`
	Why   string   `json:"why,omitempty"`
}

// DefaultOverhead is the assumed per-run time to start, check and stop
// the children.
const DefaultOverhead = 1500 * time.Millisecond

// RunPlan runs a compare plan and records it in Dir/plan.json: each
// phase's configurations interleaved over rounds (round 1: A B C, round
// 2: A B C...). The "max" phase runs first, all its rounds; then every
// phase with a Share gets its rate, Share of the reference max (the
// lowest configuration's median max throughput over the runs that pass
// report.Check: the "fixed" phase's is FixedRateShare), and the phases after "max" run interleaved too: round
// 1 runs every configuration at every rate, then round 2... so that a
// drift of the machine spreads over the rates instead of shifting one.
// A run that fails is recorded incomplete and the plan goes on; a port
// conflict or ctx ending stops it. It returns every result so far and an
// error wrapping ErrIncomplete if any run was incomplete.
func RunPlan(ctx context.Context, p Plan, o RunPlanOptions) ([]report.Result, error) {
	if o.Overhead <= 0 {
		o.Overhead = DefaultOverhead
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	p.Phases = slices.Clone(p.Phases)
	for i := range p.Phases {
		p.Phases[i].Configs = slices.Clone(p.Phases[i].Configs)
	}
	pr := &planRun{p: &p, o: o, start: time.Now(), total: p.Runs(),
		maxTP: map[string][]float64{}, maxAll: map[string][]float64{}, valid: map[string]map[string]int{}}
	var rest []int // the phases after "max"
	laterRuns := 0
	for pi, ph := range p.Phases {
		if ph.Name != report.PhaseMax {
			rest = append(rest, pi)
			laterRuns += len(ph.Configs) * p.Rounds
		}
	}
	for pi, ph := range p.Phases {
		if ph.Name != report.PhaseMax {
			continue
		}
		if err := report.WriteJSON(filepath.Join(o.Dir, PlanFile), p); err != nil {
			return pr.results, err
		}
		for round := 1; round <= p.Rounds; round++ {
			if err := pr.phase(ctx, pi, round); err != nil {
				return pr.results, err
			}
		}
		if err := pr.extraRounds(ctx, []int{pi}, laterRuns); err != nil {
			return pr.results, err
		}
	}
	ref := reference(p.Reference, pr.maxTP, pr.maxAll)
	for _, pi := range rest {
		ph := &p.Phases[pi]
		if ph.Share <= 0 {
			continue
		}
		rate := int(ref * ph.Share)
		if rate == 0 && p.Reference != "" {
			return pr.results, fmt.Errorf("%w: no max-throughput run of the reference %s completed, so there is no fixed rate (phase %s)", ErrIncomplete, p.Reference, ph.Name)
		}
		if rate == 0 {
			return pr.results, fmt.Errorf("%w: no max-throughput run completed, so there is no fixed rate (phase %s)", ErrIncomplete, ph.Name)
		}
		for i := range ph.Configs {
			ph.Configs[i].Rate = rate
		}
	}
	if len(rest) > 0 {
		if err := report.WriteJSON(filepath.Join(o.Dir, PlanFile), p); err != nil {
			return pr.results, err
		}
	}
	for round := 1; round <= p.Rounds; round++ {
		for _, pi := range rest {
			if err := pr.phase(ctx, pi, round); err != nil {
				return pr.results, err
			}
		}
	}
	if err := pr.extraRounds(ctx, rest, 0); err != nil {
		return pr.results, err
	}
	p.Ran = pr.rounds
	if err := report.WriteJSON(filepath.Join(o.Dir, PlanFile), p); err != nil {
		return pr.results, err
	}
	if len(pr.failed) > 0 {
		return pr.results, fmt.Errorf("%w: %d of %d runs: %s", ErrIncomplete, len(pr.failed), pr.total, pr.failed[0])
	}
	return pr.results, nil
}

// planRun is the state of RunPlan.
type planRun struct {
	p       *Plan
	o       RunPlanOptions
	start   time.Time
	total   int
	done    int
	results []report.Result
	failed  []string
	// maxTP is the max phase's throughput by configuration, of the runs
	// that pass report.Check; maxAll of every complete run.
	maxTP, maxAll map[string][]float64
	// valid counts, by phase and configuration, the complete runs that
	// pass report.Check; rounds records what each phase ran.
	valid  map[string]map[string]int
	rounds []Rounds
}

// phase runs round of phase pi: every configuration once. A run that
// fails is recorded; only ctx ending, a port conflict or an error that is
// not a run's failure stops the plan.
func (pr *planRun) phase(ctx context.Context, pi, round int) error {
	ph := pr.p.Phases[pi]
	return pr.runRound(ctx, ph.Name, ph.Configs, round)
}

// runRound runs configs once each, in order, as round of phase.
func (pr *planRun) runRound(ctx context.Context, phase string, configs []Config, round int) error {
	o := pr.o
	for _, cfg := range configs {
		i := pr.index(phase, cfg.Name)
		pr.done++
		runStart := time.Now()
		// Remaining time: the measured mean run time once there is one,
		// else the estimate, for this run and those after it.
		perRun := cfg.Warmup + cfg.Duration + o.Overhead
		if pr.done > 1 {
			perRun = time.Since(pr.start) / time.Duration(pr.done-1)
		}
		opt := o.Run
		opt.Phase, opt.Round = phase, round
		opt.Dir = filepath.Join(o.Dir, phase, fmt.Sprintf("r%d-%02d-%s", round, i+1, cfg.Name))
		if o.Progress != nil {
			p := Progress{Run: pr.done, Runs: pr.total, Config: cfg.Name, Phase: phase, Round: round}
			left := pr.total - pr.done + 1
			opt.Progress = func(step string) {
				p.Step = step
				p.Elapsed = time.Since(pr.start)
				p.Remaining = max(0, perRun*time.Duration(left)-time.Since(runStart))
				o.Progress(p)
			}
		}
		sum, err := Run(ctx, cfg, opt)
		pr.results = append(pr.results, report.Result{Dir: opt.Dir, Summary: sum})
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrPortBusy) || !errors.Is(err, ErrIncomplete) {
				return err
			}
			pr.failed = append(pr.failed, fmt.Sprintf("%s %s round %d: %v", phase, cfg.Name, round, err))
			if o.Failed != nil {
				o.Failed(pr.results[len(pr.results)-1], err)
			}
			continue
		}
		pass := report.Check(sum) == ""
		if pass {
			if pr.valid[phase] == nil {
				pr.valid[phase] = map[string]int{}
			}
			pr.valid[phase][cfg.Name]++
		}
		if phase == report.PhaseMax {
			pr.maxAll[cfg.Name] = append(pr.maxAll[cfg.Name], sum.Throughput)
			if pass {
				pr.maxTP[cfg.Name] = append(pr.maxTP[cfg.Name], sum.Throughput)
			}
		}
	}
	return nil
}

// index is the position of configuration name in phase (0 when absent),
// which names its result directories in every round.
func (pr *planRun) index(phase, name string) int {
	for _, ph := range pr.p.Phases {
		if ph.Name == phase {
			if i := slices.IndexFunc(ph.Configs, func(c Config) bool { return c.Name == name }); i >= 0 {
				return i
			}
		}
	}
	return 0
}

// short lists the configurations of phase pi with fewer than the plan's
// rounds of valid runs.
func (pr *planRun) short(pi int) []string {
	ph := pr.p.Phases[pi]
	var out []string
	for _, c := range ph.Configs {
		if pr.valid[ph.Name][c.Name] < pr.p.Rounds {
			out = append(out, c.Name)
		}
	}
	return out
}

// extraRounds runs extra rounds of phases (see RunPlanOptions.Budget),
// while later planned runs leaves room for: each round runs the
// configurations still short of valid runs, with the first configuration
// of the phase (the reference of the ratios, so that the extra rounds
// pair), and rounds are numbered on from the plan's.
func (pr *planRun) extraRounds(ctx context.Context, phases []int, later int) error {
	if len(phases) == 0 {
		return nil
	}
	rs := make([]Rounds, len(phases))
	for i, pi := range phases {
		rs[i] = Rounds{Phase: pr.p.Phases[pi].Name, Planned: pr.p.Rounds}
	}
	for extra := 1; extra <= pr.p.Rounds; extra++ {
		var subsets [][]Config
		runs := 0
		for _, pi := range phases {
			var sub []Config
			short := pr.short(pi)
			if len(short) > 0 {
				for i, c := range pr.p.Phases[pi].Configs {
					if i == 0 || slices.Contains(short, c.Name) {
						sub = append(sub, c)
					}
				}
			}
			subsets = append(subsets, sub)
			runs += len(sub)
		}
		if runs == 0 {
			break
		}
		perRun := time.Since(pr.start) / time.Duration(max(1, pr.done))
		if left := pr.o.Budget - time.Since(pr.start); pr.o.Budget <= 0 || perRun*time.Duration(runs+later) > left {
			for i := range rs {
				if pr.o.Budget <= 0 {
					rs[i].Why = "no time budget for extra rounds"
				} else {
					rs[i].Why = fmt.Sprintf("another round (%d runs of about %v, with %d planned runs after it) would pass the %v budget",
						runs, perRun.Round(100*time.Millisecond), later, pr.o.Budget)
				}
			}
			break
		}
		pr.total += runs
		for i, pi := range phases {
			if len(subsets[i]) == 0 {
				continue
			}
			rs[i].Extra++
			ph := pr.p.Phases[pi]
			if err := pr.runRound(ctx, ph.Name, subsets[i], pr.p.Rounds+extra); err != nil {
				return err
			}
		}
	}
	for i, pi := range phases {
		rs[i].Valid = maps.Clone(pr.valid[rs[i].Phase])
		if rs[i].Valid == nil {
			rs[i].Valid = map[string]int{}
		}
		if rs[i].Short = pr.short(pi); len(rs[i].Short) == 0 {
			rs[i].Why = ""
		} else if rs[i].Why == "" {
			rs[i].Why = fmt.Sprintf("%d extra rounds, the most a phase gets", pr.p.Rounds)
		}
	}
	pr.rounds = append(pr.rounds, rs...)
	return nil
}

// reference is the reference max throughput of the rate phases: the
// median of configuration name's max runs ("" for the lowest
// configuration's, ReferenceMax), from the runs that pass the report's
// checks (pass, by configuration), as the report's load factors are; from
// every complete one (all) when none passes, so that a busy machine still
// gets its rates (and the report leaves its runs out, saying why).
func reference(name string, pass, all map[string][]float64) float64 {
	if name != "" {
		v := pass[name]
		if len(v) == 0 {
			v = all[name]
		}
		if len(v) == 0 {
			return 0
		}
		return quantile.Of(v).Median
	}
	tp := pass
	if len(tp) == 0 {
		tp = all
	}
	medians := map[string]float64{}
	for name, v := range tp {
		medians[name] = quantile.Of(v).Median // 0 when no run has it
	}
	return ReferenceMax(medians)
}

// RoundsNote says in a paragraph what the plan's phases ran (Plan.Ran):
// the rounds planned, the extra rounds run for the configurations short of
// valid runs, and any still short, with why; "" before the plan ran.
func (p Plan) RoundsNote() string {
	if len(p.Ran) == 0 {
		return ""
	}
	var parts []string
	for _, r := range p.Ran {
		s := fmt.Sprintf("%s: %s", r.Phase, report.Count(r.Planned, "round", "rounds"))
		if r.Extra > 0 {
			s += fmt.Sprintf(" and %s for the configurations short of runs that passed the checks", report.Count(r.Extra, "extra round", "extra rounds"))
		}
		if len(r.Short) == 0 {
			s += fmt.Sprintf("; every configuration has %d or more valid runs", r.Planned)
		} else {
			var short []string
			for _, n := range r.Short {
				short = append(short, fmt.Sprintf("%s %d", n, r.Valid[n]))
			}
			s += fmt.Sprintf("; still short of %d valid runs: %s (%s)", r.Planned, strings.Join(short, ", "), r.Why)
		}
		parts = append(parts, s)
	}
	return "Rounds: " + strings.Join(parts, ". ") + "."
}
