package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/load"
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
		Name: cfg.Name, Phase: opt.Phase, Round: opt.Round, Mode: cfg.Mode, Threads: cfg.Threads,
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
		c, err = startRemote(name+"@"+x.Dest.String(), x, r.hostTag(x), name, args, cpus, r.opt.StopGrace, r.remoteLimit(), logPath, outPath)
	}
	if err != nil {
		return nil, err
	}
	if r.opt.Started != nil {
		r.opt.Started(c.name, c.cmd.Process.Pid)
	}
	return c, nil
}

// remoteLimit bounds a remote role's life (remote exec --limit): the
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
		args := loadFlags(c, "-") // the JSON on stdout, the text report on stderr
		remoteAt := at.Add(x.Info.Clock.Offset).UTC().Format(time.RFC3339Nano)
		args = append(args, "--hlog", remote.RunFile(r.hostTag(x), HlogFile), "--start-at", remoteAt, url)
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
	if err := report.WriteJSON(r.path(ConfigFile), configFile{Config: *cfg, Layout: h.Layout(), Hosts: h.records()}); err != nil {
		return err
	}
	mockAddr, serverAddr := addr(h.MockAddr, h.Mock), addr(h.ServerAddr, h.Server)
	mockArgs, serverArgs := MockArgs(*cfg), ServerArgs(*cfg)
	if h.Mock != nil || h.MockAddr != "" { // reached from other hosts
		mockArgs = setFlag(mockArgs, "--host", "")
	}
	if h.Server != nil || len(h.Load) > 0 {
		serverArgs = setFlag(serverArgs, "--host", "")
	}
	if h.Server != nil { // /debug/carrier is read from here
		serverArgs = setFlag(serverArgs, "--admin-host", "")
	}
	if h.Mock != nil && h.Mock == h.Server {
		serverArgs = setFlag(serverArgs, "--backend", hostURL("127.0.0.1", cfg.MockPort, "/fruits"))
	} else {
		serverArgs = setFlag(serverArgs, "--backend", hostURL(mockAddr, cfg.MockPort, "/fruits"))
	}
	if r.mock, err = r.start("mock", h.Mock, mockArgs, cfg.MockCPUs, r.path(MockLog), ""); err != nil {
		return err
	}
	if err := waitHealthy(ctx, r.mock, hostURL(mockAddr, cfg.MockPort, "/health"), r.opt.HealthTimeout); err != nil {
		return err
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
		args := LoadArgs(*cfg, r.path(LoadJSON), r.path(HgrmPrefix), r.path(HlogFile))
		args[len(args)-1] = hostURL(serverAddr, cfg.ServerPort, "/fruits")
		if r.load, err = r.start("load", nil, args, cfg.LoadCPUs, r.path(LoadLog), r.path(LoadText)); err != nil {
			return err
		}
	} else if loadStart, err = r.startRemoteLoad(hostURL(serverAddr, cfg.ServerPort, "/fruits")); err != nil {
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
	} else {
		r.na["other-cpus"] = errors.Join(cpuErr, err).Error()
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
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-r.server.done:
			return false, r.server.failure()
		case <-r.mock.done:
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

// MockArgs are the arguments of the mock child.
func MockArgs(c Config) []string {
	return []string{"mock", "--port", strconv.Itoa(c.MockPort), "--think-time", c.MockThinkTime.String(),
		"--threads", strconv.Itoa(c.MockThreads), "--cpuset", c.MockCPUs.String()}
}

// ServerArgs are the arguments of the server child.
func ServerArgs(c Config) []string {
	a := []string{"serve", "--mode", c.Mode, "--port", strconv.Itoa(c.ServerPort),
		"--backend", "http://127.0.0.1:" + strconv.Itoa(c.MockPort) + "/fruits", "--threads", strconv.Itoa(c.Threads),
		"--wait", c.Wait, "--topology", c.Topology, "--admin-port", strconv.Itoa(c.AdminPort)}
	if c.Float { // the process is started on its CPU set (startChild); floating carriers take no --cpuset
		a = append(a, "--float")
	} else {
		a = append(a, "--cpuset", c.ServerCPUs.String())
	}
	if c.WorkStealing {
		a = append(a, "--ws")
	}
	if c.Poller != "" {
		a = append(a, "--poller", c.Poller)
	}
	if c.NPlus1 {
		a = append(a, "--nplus1")
	}
	return a
}

// LoadArgs are the arguments of the load generator child: its JSON result,
// .hgrm files and interval log (load.DefaultInterval) go to the paths given.
func LoadArgs(c Config, jsonPath, hgrmPrefix, hlogPath string) []string {
	a := loadFlags(c, jsonPath)
	a = append(a, "--hgrm", hgrmPrefix, "--hlog", hlogPath)
	return append(a, hostURL("127.0.0.1", c.ServerPort, "/fruits"))
}

// loadFlags are the load generator's flags without its URL and files
// other than its JSON result.
func loadFlags(c Config, jsonPath string) []string {
	a := []string{"load", "-t", strconv.Itoa(c.LoadThreads), "-c", strconv.Itoa(c.Connections),
		"-d", c.Duration.String(), "--warmup", c.Warmup.String(), "--latency",
		"--json", jsonPath, "--cpuset", c.LoadCPUs.String()}
	if c.Rate > 0 {
		a = append(a, "-R", strconv.Itoa(c.Rate))
	}
	return a
}

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

// startObservers starts the /proc sampler, perf stat and perf sched for
// window. Missing tools and failures are recorded as n/a reasons, not
// errors: only ctx ending is.
func (r *runner) startObservers(ctx context.Context, window time.Duration) *observers {
	o := &observers{}
	// The observers run where the server runs: here, or on its host
	// through "spindle remote observe" (the /proc sampling of the server
	// alone there; perf sched only here).
	var procs []observe.Process
	var sampleThreads func() (*observe.ThreadReport, error)
	var perfStat func() ([]byte, error)
	if r.server.local() {
		procs = []observe.Process{{Name: "server", PID: r.server.cmd.Process.Pid}}
		if r.mock.local() {
			procs = append(procs, observe.Process{Name: "mock", PID: r.mock.cmd.Process.Pid})
		}
		if r.load.local() && !r.load.exited() {
			procs = append(procs, observe.Process{Name: "load", PID: r.load.cmd.Process.Pid})
		}
		sampleThreads = func() (*observe.ThreadReport, error) {
			return observe.SampleThreads(ctx, procs, window, observe.ThreadOptions{ProcRoot: r.opt.ProcRoot})
		}
		perfStat = func() ([]byte, error) {
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
			data, err := perfStat()
			if err != nil {
				na("perf-stat", err)
				return writeNA(r.path(PerfStatText), err)
			}
			ps, err := observe.ParsePerfStat(data)
			if err != nil {
				na("perf-stat", err)
				return writeNA(r.path(PerfStatText), err)
			}
			s := ps.Summarize(window)
			r.sum.Perf = &s
			return writeFile(r.path(PerfStatText), func(w io.Writer) error { return writePerfStat(w, s, window, data) })
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
				ts, _ := listTIDs(r.opt.ProcRoot, strconv.Itoa(p.PID)) // a process gone has none
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

// listTIDs lists the threads of process pid ("self" for this one) under
// procRoot ("" means /proc); an error when the process is gone.
func listTIDs(procRoot, pid string) ([]int, error) { return cpu.Threads(procRoot, pid) }

// writePerfStat writes perf-stat.txt: the study's figures, then perf's CSV.
func writePerfStat(w io.Writer, s observe.PerfSummary, window time.Duration, raw []byte) error {
	fmt.Fprintf(w, "# perf stat of the server process over %.1fs\n", window.Seconds())
	fmt.Fprintf(w, "CPUs utilized (task-clock / window)  %s\n", s.CPUsUtilized)
	fmt.Fprintf(w, "context switches/s                   %s\n", s.ContextSwitchesPerSec)
	fmt.Fprintf(w, "CPU migrations/s                     %s\n", s.MigrationsPerSec)
	fmt.Fprintf(w, "cycles                               %s\n", s.Cycles)
	fmt.Fprintf(w, "instructions                         %s\n", s.Instructions)
	fmt.Fprintf(w, "IPC                                  %s\n", s.IPC)
	fmt.Fprintf(w, "\n# perf stat -x, output\n")
	_, err := w.Write(raw)
	return err
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

// adminGet reads path of the server's admin endpoint; an answer other than
// 200 is an error with its status and the start of its body.
func (r *runner) adminGet(ctx context.Context, path string) ([]byte, error) {
	what := path
	if i := strings.IndexByte(what, '?'); i >= 0 {
		what = what[:i]
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hostURL(r.adminAddr, r.cfg.AdminPort, path), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512)) // a reason, not a page
		return nil, fmt.Errorf("read %s: %s: %s", what, resp.Status, strings.TrimSpace(string(msg)))
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return data, nil
}

// carrierSnapshot reads the server's /debug/carrier.
func (r *runner) carrierSnapshot(ctx context.Context) ([]carrier.Telemetry, error) {
	if r.cfg.Mode == ModeNetHTTP {
		return nil, fmt.Errorf("no carriers in %s mode", ModeNetHTTP)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	data, err := r.adminGet(ctx, "/debug/carrier")
	if err != nil {
		return nil, err
	}
	var ts []carrier.Telemetry
	if err := json.Unmarshal(data, &ts); err != nil {
		return nil, fmt.Errorf("read /debug/carrier: %w", err)
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("no carriers in %s mode", r.cfg.Mode)
	}
	return ts, nil
}

// carrierFile is carrier.json.
type carrierFile struct {
	// Window is the observers' window, ns.
	Window time.Duration `json:"window_ns"`
	// Summary is in the study's terms; Carriers are the per-carrier
	// differences of /debug/carrier over the window.
	Summary  report.CarrierFigures `json:"summary"`
	Carriers []carrier.Telemetry   `json:"carriers"`
}

// writeCarrier writes carrier.json from two snapshots.
func (r *runner) writeCarrier(before, after []carrier.Telemetry, err error, window time.Duration) {
	if err == nil && len(before) != len(after) {
		err = fmt.Errorf("carrier count changed from %d to %d", len(before), len(after))
	}
	if err != nil {
		r.na["carrier"] = err.Error()
		return
	}
	diff := make([]carrier.Telemetry, len(after))
	for i := range after {
		diff[i] = after[i].Sub(before[i])
	}
	f := carrierFile{Window: window, Summary: CarrierFigures(diff, window), Carriers: diff}
	if err := report.WriteJSON(r.path(CarrierJSON), f); err != nil {
		r.na["carrier"] = err.Error()
		return
	}
	r.sum.Carrier = &f.Summary
}

// CarrierFigures sums per-carrier window telemetry into the study's
// figures.
func CarrierFigures(ts []carrier.Telemetry, window time.Duration) report.CarrierFigures {
	var tot carrier.Telemetry
	for _, t := range ts {
		tot = tot.Add(t)
	}
	const nsPerUs = 1e3
	per10s := func(n uint64) float64 { return float64(n) * (10 * time.Second).Seconds() / window.Seconds() }
	ringEnters, completions := math.NaN(), math.NaN() // epoll: no ring
	if tot.RingEnters > 0 {
		ringEnters, completions = per10s(tot.RingEnters), tot.RingCompletions.Mean()
	}
	return report.CarrierFigures{
		Carriers:         len(ts),
		IOCyclesPer10s:   report.Num(float64(tot.IOCycles) * (10 * time.Second).Seconds() / window.Seconds()),
		EventsPerCycle:   report.Num(tot.IOEventsPerCycle()),
		TasksPerDrain:    report.Num(tot.TasksPerDrain()),
		QueueDepthAvg:    report.Num(tot.QueueDepth.Mean()),
		QueueDepthP50:    report.Num(tot.QueueDepth.Quantile(0.5)),
		SubmitToRunP50Us: report.Num(tot.SubmitToRun.Quantile(0.5) / nsPerUs),
		SubmitToRunP99Us: report.Num(tot.SubmitToRun.Quantile(0.99) / nsPerUs),
		Steals:           tot.StealsIn,
		Migrations:       tot.MigrationsIn,

		RingEntersPer10s:    report.Num(ringEnters),
		SubmissionsPerEnter: report.Num(tot.SubmissionsPerEnter()),
		CompletionsPerPass:  report.Num(completions),
	}
}

// readLoad reads load.json (load.Result, its accounting checked) into the
// summary.
func (r *runner) readLoad() error {
	lr, err := load.ReadResult(r.path(LoadJSON))
	if err != nil {
		return fmt.Errorf("read load results: %w", err)
	}
	report.FillFromLoad(&r.sum, lr)
	if lr.Completed == 0 {
		// Nothing was measured: a run, not a figure of 0 req/s.
		return fmt.Errorf("no request completed in the window (%d failed, %d in flight, %d not sent); see %s and %s",
			lr.Failed, lr.InFlight, lr.NotSent, LoadText, ServerLog)
	}
	return nil
}
