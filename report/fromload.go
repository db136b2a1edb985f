package report

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spindle-lab/spindle/load"
)

// FillFromLoad copies a load result's figures into s: the measured window,
// throughput, requests, errors (failed requests and answers other than
// 2xx), the corrected and uncorrected latency, the send lag, the host
// steal and each mix entry's figures.
func FillFromLoad(s *Summary, lr *load.Result) {
	s.Window = time.Duration(lr.DurationS * float64(time.Second))
	s.Throughput = lr.AchievedRate
	s.Requests, s.Errors = lr.Completed, lr.Failed+lr.Completed-lr.ByStatus.C2xx
	s.Latency, s.Uncorrected, s.SendLag = &lr.Corrected, &lr.Uncorrected, lr.SendLag
	s.HostSteal = lr.HostSteal
	s.Mix = nil
	for _, m := range lr.Mix {
		s.Mix = append(s.Mix, MixFigures{Target: m.Target, Weight: m.Weight, Completed: m.Completed, Queued: m.Queued, Latency: m.Corrected})
	}
}

// ErrNoRequest is returned by LoadResult for a load result in which no
// request completed: a failed run, not a figure of 0 req/s.
var ErrNoRequest = errors.New("no request completed in the window")

// LoadResult reads a lone load result (spindle load --json FILE) as a
// complete run named name: phase "fixed" with the rate it was asked for,
// or "max" for closed-loop load. The run's directory is FILE's, so that a
// load.hlog beside it (load --hlog) is drawn over time.
func LoadResult(path, name string) (Result, error) {
	lr, err := load.ReadResult(path)
	if err != nil {
		return Result{}, err
	}
	if lr.Completed == 0 {
		return Result{}, fmt.Errorf("%s: %w (%d failed, %d in flight, %d not sent)", path, ErrNoRequest, lr.Failed, lr.InFlight, lr.NotSent)
	}
	s := Summary{Complete: true, Name: name, Phase: PhaseMax, Mode: "load", Rate: int(lr.Config.Rate),
		LoadCPUs: lr.Config.CPUs, Started: lr.Start, Finished: lr.Start.Add(time.Duration((lr.Config.WarmupS + lr.DurationS) * float64(time.Second)))}
	if lr.Config.Rate > 0 {
		s.Phase = PhaseFixed
	}
	FillFromLoad(&s, lr)
	s.NA = map[string]string{}
	for _, k := range []string{"perf-stat", "threads", "carrier", "runtime", "ipc", "other-cpus", "backend-busy", "server-cpus"} {
		s.NA[k] = "a lone load result"
	}
	return Result{Dir: filepath.Dir(path), Summary: s}, nil
}
