package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
		maxTP: map[string][]float64{}, maxAll: map[string][]float64{}}
	var rest []int // the phases after "max"
	for pi, ph := range p.Phases {
		if ph.Name != report.PhaseMax {
			rest = append(rest, pi)
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
	}
	ref := reference(pr.maxTP, pr.maxAll)
	for _, pi := range rest {
		ph := &p.Phases[pi]
		if ph.Share <= 0 {
			continue
		}
		rate := int(ref * ph.Share)
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
}

// phase runs round of phase pi: every configuration once. A run that
// fails is recorded; only ctx ending, a port conflict or an error that is
// not a run's failure stops the plan.
func (pr *planRun) phase(ctx context.Context, pi, round int) error {
	ph := pr.p.Phases[pi]
	o := pr.o
	for i, cfg := range ph.Configs {
		pr.done++
		runStart := time.Now()
		// Remaining time: the measured mean run time once there is one,
		// else the estimate, for this run and those after it.
		perRun := cfg.Warmup + cfg.Duration + o.Overhead
		if pr.done > 1 {
			perRun = time.Since(pr.start) / time.Duration(pr.done-1)
		}
		opt := o.Run
		opt.Phase, opt.Round = ph.Name, round
		opt.Dir = filepath.Join(o.Dir, ph.Name, fmt.Sprintf("r%d-%02d-%s", round, i+1, cfg.Name))
		if o.Progress != nil {
			p := Progress{Run: pr.done, Runs: pr.total, Config: cfg.Name, Phase: ph.Name, Round: round}
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
			pr.failed = append(pr.failed, fmt.Sprintf("%s %s round %d: %v", ph.Name, cfg.Name, round, err))
			if o.Failed != nil {
				o.Failed(pr.results[len(pr.results)-1], err)
			}
			continue
		}
		if ph.Name == report.PhaseMax {
			pr.maxAll[cfg.Name] = append(pr.maxAll[cfg.Name], sum.Throughput)
			if report.Check(sum) == "" {
				pr.maxTP[cfg.Name] = append(pr.maxTP[cfg.Name], sum.Throughput)
			}
		}
	}
	return nil
}

// reference is the reference max throughput of the rate phases, from the
// max runs that pass the report's checks (pass, by configuration), as the
// report's load factors are; from every complete one (all) when none
// passes, so that a busy machine still gets its rates (and the report
// leaves its runs out, saying why).
func reference(pass, all map[string][]float64) float64 {
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
