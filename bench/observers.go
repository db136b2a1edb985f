package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/observe"
	"github.com/spindle-lab/spindle/report"
)

// observers run in the measured window.
type observers struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func (o *observers) goRun(f func() error) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		if err := f(); err != nil {
			o.mu.Lock()
			o.errs = append(o.errs, err)
			o.mu.Unlock()
		}
	}()
}

func (o *observers) wait() error {
	o.wg.Wait()
	return errors.Join(o.errs...)
}

// startObservers starts the /proc sampler, perf stat, perf sched and the
// reading of the server's /debug/runtime for window. Missing tools and
// failures are recorded as n/a reasons, not errors: only ctx ending is.
func (r *runner) startObservers(ctx context.Context, window time.Duration) *observers {
	o := &observers{}
	// The observers run where the server runs: here, or on its host
	// through "spindle remote observe" (the /proc sampling of the server
	// alone there; perf sched only here).
	var procs []observe.Process
	var sampleThreads func() (*observe.ThreadReport, error)
	var perfStat func() (observe.PerfStatOutput, error)
	if r.server.local() {
		procs = []observe.Process{{Name: "server", PID: r.server.cmd.Process.Pid}}
		if r.mock != nil && r.mock.local() {
			procs = append(procs, observe.Process{Name: "mock", PID: r.mock.cmd.Process.Pid})
		}
		if r.load.local() && !r.load.exited() {
			procs = append(procs, observe.Process{Name: "load", PID: r.load.cmd.Process.Pid})
		}
		sampleThreads = func() (*observe.ThreadReport, error) {
			return observe.SampleThreads(ctx, procs, window, observe.ThreadOptions{ProcRoot: r.opt.ProcRoot})
		}
		perfStat = func() (observe.PerfStatOutput, error) {
			return r.opt.Perf.RunPerfStat(ctx, r.opt.Dir, []int{r.server.cmd.Process.Pid}, window)
		}
	} else {
		sampleThreads, perfStat = r.remoteSamplers(ctx, window)
	}
	// The observers record why they have no figures from their goroutines.
	var mu sync.Mutex
	off := func(key, reason string) {
		mu.Lock()
		r.na[key] = reason
		mu.Unlock()
	}
	na := func(key string, err error) { off(key, observe.Reason(err)) }
	if r.cfg.Pidstat {
		o.goRun(func() error {
			rep, err := sampleThreads()
			if err != nil {
				na("threads", err)
				return ctx.Err()
			}
			r.sum.Server = report.FromThreads(rep, "server")
			if f := report.FromThreads(rep, "load"); f.Threads > 0 { // none when it exited before the window
				r.sum.Load = f
			}
			if err := writeFile(r.path(ThreadsText), rep.WriteText); err != nil {
				na("threads", err)
			}
			if err := writeFile(r.path(ThreadsJSON), rep.WriteJSON); err != nil {
				na("threads", err)
			}
			return nil
		})
		if !r.load.local() {
			o.goRun(func() error {
				r.observeLoadHosts(ctx, window, na)
				return nil
			})
		}
	} else {
		off("threads", "off (--no-pidstat)")
	}
	if r.cfg.PerfStat {
		o.goRun(func() error {
			out, err := perfStat()
			if err != nil {
				na("perf-stat", err)
				return writeNA(r.path(PerfStatText), err)
			}
			s, err := out.Summary(window)
			if err != nil {
				na("perf-stat", err)
				return writeNA(r.path(PerfStatText), err)
			}
			r.sum.Perf = &s
			return writeFile(r.path(PerfStatText), func(w io.Writer) error { return s.WriteText(w, window, out.CSV) })
		})
	} else {
		off("perf-stat", "off (no --perf-stat)")
	}
	if r.cfg.PerfSched && !r.server.local() {
		off("perf-sched", fmt.Sprintf("server on %s: perf sched runs on this machine only", r.opt.Hosts.Server.Dest))
	} else if r.cfg.PerfSched {
		// Threads are listed before and after the trace: the load
		// generator may have exited by the time the trace is parsed.
		tids := map[int]string{}
		listAll := func() {
			for _, p := range procs {
				ts, _ := cpu.Threads(r.opt.ProcRoot, strconv.Itoa(p.PID)) // a process gone has none
				for _, tid := range ts {
					tids[tid] = p.Name
				}
			}
		}
		listAll()
		o.goRun(func() error {
			data, err := r.opt.Perf.RunPerfSched(ctx, r.opt.Dir, window)
			listAll()
			if err != nil {
				na("perf-sched", err)
				return writeNA(r.path(PerfSchedText), err)
			}
			d, err := observe.ParseSchedScript(data)
			if err != nil {
				na("perf-sched", err)
				return writeNA(r.path(PerfSchedText), err)
			}
			return writeFile(r.path(PerfSchedText), func(w io.Writer) error {
				fmt.Fprintf(w, "# perf sched: share of each thread's runs (sched_switch in) per CPU, and migrations, over %.1fs\n", window.Seconds())
				return d.Select(tids).WriteText(w)
			})
		})
	} else {
		off("perf-sched", "off (no --perf-sched)")
	}
	o.goRun(func() error { return r.observeRuntime(ctx, window, na) })
	if r.cfg.Profile == ProfileCPU {
		o.goRun(func() error {
			top, err := r.profileCPU(ctx, window)
			if err != nil {
				na("profile", err)
				return ctx.Err()
			}
			if len(top) == 0 {
				// pprof samples at 100 Hz: a server that used a few
				// percent of a CPU for a second may leave no sample.
				na("profile", errors.New("the profile has no samples (the server used too little CPU in the window for pprof's 100 Hz sampling)"))
				return nil
			}
			r.sum.Profile = top
			return nil
		})
	}
	return o
}

// profileCPU fetches the server's CPU profile over window from its admin
// endpoint into cpu.pprof and returns its top functions. pprof takes whole
// seconds: the profile covers window rounded down, at least 1 s.
func (r *runner) profileCPU(ctx context.Context, window time.Duration) ([]report.ProfileFunc, error) {
	secs := max(1, int(window/time.Second))
	// The server answers after secs; a margin covers writing the profile.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+profileMargin)
	defer cancel()
	data, err := r.adminGet(ctx, "/debug/pprof/profile?seconds="+strconv.Itoa(secs))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(r.path(ProfileFile), data, 0o644); err != nil {
		return nil, err
	}
	return report.TopFunctions(bytes.NewReader(data), report.DefaultTopFunctions)
}

// profileMargin is how long past its seconds the profile request may take:
// the server writes the profile after the window, which takes well under a
// second; 5 s leaves room on a busy machine.
const profileMargin = 5 * time.Second
