package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/observe"
	"github.com/spindle-lab/spindle/remote"
	"github.com/spindle-lab/spindle/report"
)

// RemoteObservation is what "spindle remote observe" prints on a role's
// host: the per-thread /proc sampling and perf stat's CSV, or why each is
// missing.
type RemoteObservation struct {
	Threads     *observe.ThreadReport `json:"threads,omitempty"`
	ThreadsNA   string                `json:"threads_na,omitempty"`
	PerfStatCSV string                `json:"perf_stat_csv,omitempty"`
	PerfStatNA  string                `json:"perf_stat_na,omitempty"`
	// SyscallsNA is why perf stat's CSV has no system calls
	// (observe.PerfStatOutput).
	SyscallsNA string `json:"syscalls_na,omitempty"`
}

// ObserveOptions select what ObserveHere runs. Their fields but ProcRoot
// and Perf, which are this machine's, are the flags of "spindle remote
// observe": Register defines them, Args writes them.
type ObserveOptions struct {
	// Tag and Role find the role's process (remote.Tagged); Also are
	// other roles on the same host whose threads are sampled with it (the
	// mock beside the server). perf stat counts Role's process alone.
	Tag, Role string
	Also      []string
	// Window is how long the observers run.
	Window time.Duration
	// Threads and PerfStat select the observers.
	Threads, PerfStat bool
	// ProcRoot is procfs; "" means /proc.
	ProcRoot string
	// Perf runs perf.
	Perf observe.Perf
}

// Register defines the flags of "remote observe" on fs, each field set to
// its default.
func (o *ObserveOptions) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.Tag, "tag", "", "the run's tag")
	fs.StringVar(&o.Role, "role", "", "the role to observe")
	o.Also = nil
	fs.Var((*cliflag.Strings)(&o.Also), "also", "another role on this host whose threads are sampled too (repeatable)")
	cliflag.Positive(&o.Window).Var(fs, "window", 0, "how long to observe")
	fs.BoolVar(&o.Threads, "threads", false, "per-thread /proc sampling")
	fs.BoolVar(&o.PerfStat, "perf-stat", false, "perf stat")
}

// Args is the inverse of Register: the flags of "remote observe" that give
// o (those that differ from their defaults); ProcRoot and Perf are left
// out.
func (o ObserveOptions) Args() []string { return cliflag.Args(o, (*ObserveOptions).Register) }

// ObserveHere runs the observers on this machine over the role's process,
// which runs under "spindle remote exec" here: the remote side of a role
// observed on its own host. A missing process is an error; a missing
// observer's figures are a reason in the result.
func ObserveHere(ctx context.Context, o ObserveOptions) (RemoteObservation, error) {
	var procs []observe.Process
	for _, role := range append([]string{o.Role}, o.Also...) {
		pids, err := remote.Tagged(o.ProcRoot, o.Tag, role)
		if err != nil {
			return RemoteObservation{}, err
		}
		if len(pids) == 0 {
			return RemoteObservation{}, fmt.Errorf("no %s process of run %s here", role, o.Tag)
		}
		// The role's own process; its wrapper has no role.
		procs = append(procs, observe.Process{Name: role, PID: pids[0]})
	}
	pid := procs[0].PID
	var out RemoteObservation
	var wg sync.WaitGroup
	if o.Threads {
		wg.Go(func() {
			rep, err := observe.SampleThreads(ctx, procs, o.Window, observe.ThreadOptions{ProcRoot: o.ProcRoot})
			if err != nil {
				out.ThreadsNA = observe.Reason(err)
				return
			}
			out.Threads = rep
		})
	}
	if o.PerfStat {
		wg.Go(func() {
			// A run file, so that the cleanup pass removes it should this
			// observer be killed before it does.
			dir := remote.RunFile(o.Tag, "perf-"+o.Role)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				out.PerfStatNA = err.Error()
				return
			}
			defer os.RemoveAll(dir)
			ps, err := o.Perf.RunPerfStat(ctx, dir, []int{pid}, o.Window)
			if err != nil {
				out.PerfStatNA = observe.Reason(err)
				return
			}
			out.PerfStatCSV, out.SyscallsNA = string(ps.CSV), ps.SyscallsNA
		})
	}
	wg.Wait()
	return out, ctx.Err()
}

// observeOn runs "spindle remote observe" with o (its tag set here) on
// host x.
func (r *runner) observeOn(ctx context.Context, x *remote.Host, o ObserveOptions) (RemoteObservation, error) {
	o.Tag = r.hostTag(x)
	args := append([]string{"remote", "observe"}, o.Args()...)
	// Under remote exec like a role, so that it (and its perf) stops when
	// the run stops it early: its session input stays open until the
	// observation returns.
	hold, keep, err := os.Pipe()
	if err != nil {
		return RemoteObservation{}, err
	}
	defer hold.Close()
	defer keep.Close()
	out, err := x.Output(ctx, remote.ExecArgs(x.Exe, r.hostTag(x), r.execFlags("observer", nil), args), hold)
	if err != nil {
		return RemoteObservation{}, fmt.Errorf("observe the %s on %s: %w", o.Role, x.Dest, err)
	}
	var obs RemoteObservation
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&obs); err != nil {
		return RemoteObservation{}, fmt.Errorf("observe the %s on %s: %w", o.Role, x.Dest, err)
	}
	return obs, nil
}

// observeRemote observes the server on its host over window, once, for
// both observers that need it.
func (r *runner) observeRemote(ctx context.Context, window time.Duration) func() (RemoteObservation, error) {
	return sync.OnceValues(func() (RemoteObservation, error) {
		var also []string
		if h := r.opt.Hosts; h.Mock == h.Server { // the mock's threads too, as a local run samples them
			also = []string{"mock"}
		}
		return r.observeOn(ctx, r.opt.Hosts.Server, ObserveOptions{Role: "server", Also: also, Window: window, Threads: r.cfg.Pidstat, PerfStat: r.cfg.PerfStat})
	})
}

// observeLoadHosts samples the load generator's threads on every load host
// over window: each host's threads.txt and threads.json go to its
// load/<host>/, and the busiest host's figures (most CPUs used) to the
// summary, for the check that no load generator was the bottleneck. A host
// without figures is recorded in na under "threads load@HOST".
func (r *runner) observeLoadHosts(ctx context.Context, window time.Duration, na func(key string, err error)) {
	hosts := r.opt.Hosts.Load
	figs := make([]*report.ThreadFigures, len(hosts))
	var wg sync.WaitGroup
	for i, x := range hosts {
		wg.Go(func() {
			key := "threads load@" + x.Dest.String()
			obs, err := r.observeOn(ctx, x, ObserveOptions{Role: "load", Window: window, Threads: true})
			if err == nil && obs.Threads == nil {
				err = errors.New(obs.ThreadsNA)
			}
			if err != nil {
				na(key, err)
				return
			}
			dir := r.loadHostDir(x)
			for _, f := range []struct {
				name  string
				write func(io.Writer) error
			}{{ThreadsText, obs.Threads.WriteText}, {ThreadsJSON, obs.Threads.WriteJSON}} {
				if err := writeFile(filepath.Join(dir, f.name), f.write); err != nil {
					na(key, err)
				}
			}
			figs[i] = report.FromThreads(obs.Threads, "load")
		})
	}
	wg.Wait()
	for _, f := range figs {
		if f != nil && f.Threads > 0 && (r.sum.Load == nil || f.CPUs > r.sum.Load.CPUs) {
			r.sum.Load = f
		}
	}
}

// remoteSamplers are the thread sampler and perf stat of a server on
// another host, in the shape of the local ones.
func (r *runner) remoteSamplers(ctx context.Context, window time.Duration) (threads func() (*observe.ThreadReport, error), perfStat func() (observe.PerfStatOutput, error)) {
	obs := r.observeRemote(ctx, window)
	threads = func() (*observe.ThreadReport, error) {
		o, err := obs()
		switch {
		case err != nil:
			return nil, err
		case o.Threads == nil:
			return nil, errors.New(o.ThreadsNA)
		}
		return o.Threads, nil
	}
	perfStat = func() (observe.PerfStatOutput, error) {
		o, err := obs()
		switch {
		case err != nil:
			return observe.PerfStatOutput{}, err
		case o.PerfStatCSV == "":
			return observe.PerfStatOutput{}, errors.New(o.PerfStatNA)
		}
		return observe.PerfStatOutput{CSV: []byte(o.PerfStatCSV), SyscallsNA: o.SyscallsNA}, nil
	}
	return threads, perfStat
}
