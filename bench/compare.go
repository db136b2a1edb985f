package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"spindle/report"
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
// 2: A B C...). After the "max" phase, the "fixed" phase's rate is set to FixedRateShare of the lowest median max
// throughput. A run that fails is recorded incomplete and the plan goes
// on; a port conflict or ctx ending stops it. It returns every result so
// far and an error wrapping ErrIncomplete if any run was incomplete.
func RunPlan(ctx context.Context, p Plan, o RunPlanOptions) ([]report.Result, error) {
	if o.Overhead <= 0 {
		o.Overhead = DefaultOverhead
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	p.Phases = slices.Clone(p.Phases)
	start := time.Now()
	total := p.Runs()
	var results []report.Result
	var failed []string
	done := 0
	maxTP := map[string][]float64{}
	for pi, ph := range p.Phases {
		configs := slices.Clone(ph.Configs)
		if ph.Name == "fixed" {
			medians := map[string]float64{}
			for name, v := range maxTP {
				medians[name] = report.Median(v)
			}
			rate := RateFor(medians)
			if rate == 0 {
				return results, fmt.Errorf("%w: no max-throughput run completed, so there is no fixed rate", ErrIncomplete)
			}
			for i := range configs {
				configs[i].Rate = rate
			}
			p.Phases[pi].Configs = configs
		}
		if err := report.WriteJSON(filepath.Join(o.Dir, PlanFile), p); err != nil {
			return results, err
		}
		for round := 1; round <= p.Rounds; round++ {
			for i, cfg := range configs {
				done++
				runStart := time.Now()
				// Remaining time: the measured mean run time once there is
				// one, else the estimate, for this run and those after it.
				perRun := cfg.Warmup + cfg.Duration + o.Overhead
				if done > 1 {
					perRun = time.Since(start) / time.Duration(done-1)
				}
				opt := o.Run
				opt.Phase, opt.Round = ph.Name, round
				opt.Dir = filepath.Join(o.Dir, ph.Name, fmt.Sprintf("r%d-%02d-%s", round, i+1, cfg.Name))
				if o.Progress != nil {
					pr := Progress{Run: done, Runs: total, Config: cfg.Name, Phase: ph.Name, Round: round}
					opt.Progress = func(step string) {
						pr.Step = step
						pr.Elapsed = time.Since(start)
						pr.Remaining = max(0, perRun*time.Duration(total-done+1)-time.Since(runStart))
						o.Progress(pr)
					}
				}
				sum, err := Run(ctx, cfg, opt)
				results = append(results, report.Result{Dir: opt.Dir, Summary: sum})
				if err != nil {
					if ctx.Err() != nil || errors.Is(err, ErrPortBusy) || !errors.Is(err, ErrIncomplete) {
						return results, err
					}
					failed = append(failed, fmt.Sprintf("%s %s round %d: %v", ph.Name, cfg.Name, round, err))
					if o.Failed != nil {
						o.Failed(results[len(results)-1], err)
					}
					continue
				}
				if ph.Name == "max" {
					maxTP[cfg.Name] = append(maxTP[cfg.Name], sum.Throughput)
				}
			}
		}
	}
	if len(failed) > 0 {
		return results, fmt.Errorf("%w: %d of %d runs: %s", ErrIncomplete, len(failed), total, failed[0])
	}
	return results, nil
}
