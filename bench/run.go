package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/observe"
	"github.com/spindle-lab/spindle/remote"
	"github.com/spindle-lab/spindle/report"
)

// configFile is config.json: the configuration, where each role ran and
// every remote host's facts.
type configFile struct {
	Config
	Layout string       `json:"layout"`
	Hosts  []hostRecord `json:"hosts,omitempty"`
	// Database describes the tfb app's PostgreSQL (DB.String).
	Database string `json:"database,omitempty"`
}

// Result directory files written by Run (documented in docs/bench.md).
const (
	ConfigFile      = "config.json"
	LoadText        = "load.txt"
	LoadJSON        = "load.json"
	LoadLog         = "load.log"
	HgrmPrefix      = "load" // load.corrected.hgrm, load.uncorrected.hgrm
	HlogFile        = report.HlogFile
	ProfileFile     = report.ProfileFile
	ServerLog       = "server.log"
	MockLog         = "mock.log"
	ThreadsText     = "threads.txt"
	ThreadsJSON     = "threads.json"
	PerfStatText    = "perf-stat.txt"
	PerfSchedText   = "perf-sched-distribution.txt"
	CarrierJSON     = "carrier.json"
	DefaultHealth   = 15 * time.Second
	observeMarginPc = 10 // the observers skip this % of the window at each end
	// loadGrace is how long the load generator may take after its window
	// to write its results and exit.
	loadGrace = 30 * time.Second
)

// RunOptions are the parts of a run that are not the configuration.
type RunOptions struct {
	// Exe is the spindle binary to re-execute; "" means os.Executable().
	Exe string
	// Dir is the result directory (created).
	Dir string
	// Phase and Round label the run in summary.json; an empty Phase is
	// "fixed" with a rate, else "max".
	Phase string
	Round int
	// Progress, when set, is told each phase of the run as it starts:
	// "starting", "warm-up", "measuring", "collecting", "stopping".
	Progress func(phase string)
	// Started, when set, is told each child's name and pid as it starts.
	Started func(name string, pid int)
	// Perf runs perf; its LookPath may be replaced in tests.
	Perf observe.Perf
	// ProcRoot is procfs; "" means /proc.
	ProcRoot string
	// HealthTimeout bounds the wait for /health; 0 means DefaultHealth.
	HealthTimeout time.Duration
	// StopGrace is the time between SIGTERM and SIGKILL; 0 means
	// DefaultStopGrace.
	StopGrace time.Duration
	// Hosts, when set, places roles on other hosts, already prepared
	// (Hosts.Prepare); nil runs everything on this machine.
	Hosts *Hosts
	// DB is the database of a configuration of the tfb app (StartDB),
	// shared by the runs of a comparison; nil for the fruits app.
	DB *DB
}

// ErrIncomplete marks a run that did not complete: its summary.json says
// "complete": false with the reason.
var ErrIncomplete = errors.New("run incomplete")

// Run runs one configuration: mock, server and load generator as children
// of the spindle binary on their CPU sets, health checks, the warm-up, the
// measured window with the observers in its middle 80%, then collects the
// results into opt.Dir and stops every child. On any failure or when ctx
// ends, every child is stopped, summary.json says "complete": false with
// the reason, and the error wraps ErrIncomplete.
func Run(ctx context.Context, cfg Config, opt RunOptions) (report.Summary, error) {
	if err := cfg.Validate(false); err != nil {
		return report.Summary{}, fmt.Errorf("configuration %s: %w", cfg.Name, err)
	}
	if err := opt.Hosts.Check(); err != nil {
		return report.Summary{}, err
	}
	if err := opt.Hosts.checkPrepared(); err != nil {
		return report.Summary{}, err
	}
	if err := opt.Hosts.CheckCPUs(cfg); err != nil {
		return report.Summary{}, err
	}
	if cfg.TFB() && opt.DB == nil {
		return report.Summary{}, fmt.Errorf("configuration %s: app %s needs a database (RunOptions.DB, from StartDB)", cfg.Name, cfg.App)
	}
	if cfg.TFB() && opt.Hosts.Remote() {
		return report.Summary{}, fmt.Errorf("configuration %s: app %s runs every role on this machine (its database is started here)", cfg.Name, cfg.App)
	}
	r := &runner{cfg: cfg, opt: opt, na: map[string]string{}, adminAddr: "127.0.0.1"}
	if opt.Hosts.Remote() {
		r.tag = newTag()
		r.sum.Hosts = opt.Hosts.Layout()
	}
	if r.opt.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return report.Summary{}, fmt.Errorf("find the spindle binary: %w", err)
		}
		r.opt.Exe = exe
	}
	if r.opt.HealthTimeout <= 0 {
		r.opt.HealthTimeout = DefaultHealth
	}
	if r.opt.StopGrace <= 0 {
		r.opt.StopGrace = DefaultStopGrace
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return report.Summary{}, fmt.Errorf("result directory: %w", err)
	}
	if opt.Phase == "" {
		// A single run joins the phase its load belongs to, so that
		// "spindle report" compares single runs like compare's.
		opt.Phase = report.PhaseMax
		if cfg.Rate > 0 {
			opt.Phase = report.PhaseFixed
		}
	}
	r.sum = report.Summary{Hosts: r.sum.Hosts,
		Name: cfg.Name, Phase: opt.Phase, Round: opt.Round, Mode: cfg.Mode, App: cfg.App, Threads: cfg.Threads,
		ServerCPUs: cfg.ServerCPUs.String(), LoadCPUs: cfg.LoadCPUs.String(), Rate: cfg.Rate, Started: time.Now().UTC(),
	}
	// The directory is marked incomplete until the run finishes: should
	// this process be killed (kill -9 leaves no chance to write anything
	// later), "spindle report" still lists the run, as unfinished.
	marker := r.sum
	marker.Reason = report.Unfinished
	if err := report.WriteJSON(filepath.Join(opt.Dir, report.SummaryFile), marker); err != nil {
		return report.Summary{}, fmt.Errorf("result directory: %w", err)
	}
	err := r.run(ctx)
	r.progress("stopping")
	r.stopAll()
	if r.tag != "" {
		r.cleanup()
	}
	r.sum.Finished = time.Now().UTC()
	if len(r.na) > 0 {
		r.sum.NA = r.na
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted: %w", err)
		}
		r.sum.Complete, r.sum.Reason = false, err.Error()
		err = fmt.Errorf("%w: %w", ErrIncomplete, err)
	} else {
		r.sum.Complete = true
	}
	if werr := report.WriteJSON(filepath.Join(opt.Dir, report.SummaryFile), r.sum); werr != nil && err == nil {
		err = werr
	}
	return r.sum, err
}

// runner holds one run's state.
type runner struct {
	cfg                Config
	opt                RunOptions
	sum                report.Summary
	na                 map[string]string
	mock, server, load *child
	// adminAddr is the address of the server's admin port.
	adminAddr string
	// tag marks the run's processes on other hosts (remote.EnvRun).
	tag string
}

func (r *runner) progress(phase string) {
	if r.opt.Progress != nil {
		r.opt.Progress(phase)
	}
}

// start starts a role's child on host x (nil: this machine) and reports
// its start.
func (r *runner) start(name string, x *remote.Host, args []string, cpus cpu.Set, logPath, outPath string) (*child, error) {
	var c *child
	var err error
	if x == nil {
		c, err = startChild(name, r.opt.Exe, args, cpus, logPath, outPath)
	} else {
		c, err = startRemote(name+"@"+x.Dest.String(), x, r.hostTag(x), r.execFlags(name, cpus), args, logPath, outPath)
	}
	if err != nil {
		return nil, err
	}
	if r.opt.Started != nil {
		r.opt.Started(c.name, c.cmd.Process.Pid)
	}
	return c, nil
}

// remoteLimit bounds a remote role's life (remote.ExecOptions.Limit): the
// whole run with every wait at its longest, and a minute to spare.
func (r *runner) remoteLimit() time.Duration {
	return 2*r.opt.HealthTimeout + DefaultStartLead + r.cfg.Warmup + r.cfg.Duration + loadGrace + time.Minute
}

// startRemoteLoad starts the load generators of the load hosts, each with
// its share of the load, at a common instant: now plus DefaultStartLead
// here, which is that plus its clock offset on each host. It returns the
// instant, by this machine's clock.
func (r *runner) startRemoteLoad(url string) (time.Time, error) {
	hosts := r.opt.Hosts.Load
	shares, err := SplitLoad(r.cfg.Connections, r.cfg.Rate, r.cfg.LoadThreads, len(hosts))
	if err != nil {
		return time.Time{}, err
	}
	if err := r.makeLoadDirs(); err != nil {
		return time.Time{}, err
	}
	at := time.Now().Add(DefaultStartLead)
	parts := make([]*child, 0, len(hosts))
	for i, x := range hosts {
		c := r.cfg
		c.Connections, c.LoadThreads, c.Rate = shares[i].Connections, shares[i].Threads, shares[i].Rate
		f := loadFlags(c, "-") // the JSON on stdout, the text report on stderr
		f.Hlog, f.StartAt = remote.RunFile(r.hostTag(x), HlogFile), at.Add(x.Info.Clock.Offset).UTC().Format(time.RFC3339Nano)
		args := append(append([]string{"load"}, f.Args()...), url)
		dir := r.loadHostDir(x)
		p, err := r.start("load", x, args, c.LoadCPUs, filepath.Join(dir, LoadLog), filepath.Join(dir, LoadJSON))
		if err != nil {
			for _, q := range parts {
				q.stop(r.opt.StopGrace)
			}
			return time.Time{}, err
		}
		parts = append(parts, p)
	}
	r.load = group("load", parts)
	return at, nil
}

func (r *runner) path(name string) string { return filepath.Join(r.opt.Dir, name) }

// stopAll stops the children, the load generator first.
func (r *runner) stopAll() {
	for _, c := range []*child{r.load, r.server, r.mock} {
		if c != nil {
			c.stop(r.opt.StopGrace)
		}
	}
}

func (r *runner) run(ctx context.Context) error {
	cfg := &r.cfg
	r.progress("starting")
	if err := claimPorts(&cfg.MockPort, &cfg.ServerPort, &cfg.AdminPort); err != nil {
		return err
	}
	var err error
	h := r.opt.Hosts
	if h == nil {
		h = &Hosts{}
	}
	cf := configFile{Config: *cfg, Layout: h.Layout(), Hosts: h.records()}
	if r.opt.DB != nil {
		cf.Database = r.opt.DB.String()
	}
	if err := report.WriteJSON(r.path(ConfigFile), cf); err != nil {
		return err
	}
	mockAddr, serverAddr := h.mockAddr(), h.serverAddr()
	mockArgs, serverArgs := MockArgs(*cfg, h), append(ServerArgs(*cfg, h), DBArgs(r.opt.DB)...)
	if !cfg.TFB() { // the tfb app's backend is the database
		if r.mock, err = r.start("mock", h.Mock, mockArgs, cfg.MockCPUs, r.path(MockLog), ""); err != nil {
			return err
		}
		if err := waitHealthy(ctx, r.mock, hostURL(mockAddr, cfg.MockPort, "/health"), r.opt.HealthTimeout); err != nil {
			return err
		}
	}
	if r.server, err = r.start("server", h.Server, serverArgs, cfg.ServerCPUs, r.path(ServerLog), ""); err != nil {
		return err
	}
	if err := waitHealthy(ctx, r.server, hostURL(serverAddr, cfg.ServerPort, "/health"), r.opt.HealthTimeout); err != nil {
		return err
	}
	r.adminAddr = serverAddr
	before, carrierErr := r.carrierSnapshot(ctx)

	r.progress("warm-up")
	loadStart := time.Now()
	if len(h.Load) == 0 {
		args := LoadArgs(*cfg, h, r.path(LoadJSON), r.path(HgrmPrefix), r.path(HlogFile))
		if r.load, err = r.start("load", nil, args, cfg.LoadCPUs, r.path(LoadLog), r.path(LoadText)); err != nil {
			return err
		}
	} else if loadStart, err = r.startRemoteLoad(cfg.loadURL(h)); err != nil {
		return err
	}
	margin := cfg.Duration * observeMarginPc / 100
	obsStart := loadStart.Add(cfg.Warmup + margin)
	obsWindow := cfg.Duration - 2*margin
	if _, err := r.sleepUntil(ctx, loadStart.Add(cfg.Warmup)); err != nil {
		return err
	}
	r.progress("measuring")
	if _, err := r.sleepUntil(ctx, obsStart); err != nil {
		return err
	}
	if carrierErr == nil {
		before, carrierErr = r.carrierSnapshot(ctx) // the window's start
	}
	cpu0, cpuErr := readCPU(r.opt.ProcRoot, r.ownPIDs())
	obsErr, err := r.observe(ctx, obsWindow)
	if err != nil {
		return err
	}
	if cpu1, err := readCPU(r.opt.ProcRoot, r.ownPIDs()); err == nil && cpuErr == nil {
		if o := otherCPUs(cpu0, cpu1); !math.IsNaN(o) {
			r.sum.OtherCPUs = &o
		}
		r.backendBusy(h, cpu0, cpu1)
	} else {
		r.na["other-cpus"] = errors.Join(cpuErr, err).Error()
		r.na["backend-busy"] = r.na["other-cpus"]
	}
	var after []carrier.Telemetry
	if carrierErr == nil {
		after, carrierErr = r.carrierSnapshot(ctx)
	}
	r.sum.ObserveWindow = obsWindow
	if obsErr != nil && ctx.Err() != nil {
		return obsErr
	}
	// Wait for the load generator: warm-up and window plus a grace for
	// writing its results.
	exited, err := r.sleepUntil(ctx, loadStart.Add(cfg.Warmup+cfg.Duration+loadGrace))
	if err != nil {
		return err
	}
	if !exited {
		return fmt.Errorf("load generator still running %v after its window ended", loadGrace)
	}
	r.progress("collecting")
	if len(h.Load) > 0 {
		if err := r.readRemoteLoad(); err != nil {
			return err
		}
	}
	if err := r.readLoad(); err != nil {
		return err
	}
	r.writeCarrier(before, after, carrierErr, obsWindow)
	return nil
}

// sleepUntil waits until t or until the load generator exits (exited is
// then true); a child failing or ctx ending is an error.
func (r *runner) sleepUntil(ctx context.Context, t time.Time) (exited bool, err error) {
	timer, cancel := context.WithDeadline(context.Background(), t)
	defer cancel()
	return r.watch(ctx, timer.Done(), true)
}

// watch waits until ready is closed while watching every child: a child
// failing (the mock or the server exiting at all, the load generator
// exiting with an error) or ctx ending is an error at once. With
// loadEnds, the load generator exiting cleanly ends the wait too (exited
// is then true); without, the wait goes on until ready.
func (r *runner) watch(ctx context.Context, ready <-chan struct{}, loadEnds bool) (exited bool, err error) {
	loadDone := r.load.done
	var mockDone <-chan struct{} // nil, never ready, without a mock
	if r.mock != nil {
		mockDone = r.mock.done
	}
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-r.server.done:
			return false, r.server.failure()
		case <-mockDone:
			return false, r.mock.failure()
		case <-loadDone:
			if r.load.err != nil {
				return true, r.load.failure()
			}
			if loadEnds {
				return true, nil
			}
			exited, loadDone = true, nil // a nil channel is never ready
		case <-ready:
			return exited, nil
		}
	}
}

// observe runs the observers over window while watching the children: a
// child that fails in the window stops the observers and ends the run at
// once, not when the window would have ended. obsErr is what the
// observers returned (only ctx ending makes one); err is a child's
// failure or ctx ending.
func (r *runner) observe(ctx context.Context, window time.Duration) (obsErr, err error) {
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	obs := r.startObservers(octx, window)
	done := make(chan struct{})
	go func() {
		obsErr = obs.wait()
		close(done)
	}()
	if _, err = r.watch(ctx, done, false); err != nil {
		cancel()
		<-done // the observers write into the summary: wait for them to stop
		return nil, err
	}
	return obsErr, nil
}

// writeNA writes a file that only says why its figures are missing.
func writeNA(path string, err error) error {
	return os.WriteFile(path, []byte(observe.NA(observe.Reason(err))+"\n"), 0o644)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}
