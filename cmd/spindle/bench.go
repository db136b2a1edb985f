package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/bench"
	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/report"
	"github.com/spindle-lab/spindle/server"
	"github.com/spindle-lab/spindle/tfb"
)

func init() {
	register(command{
		name:    "bench",
		summary: "run one configuration: mock, server and load generator on their CPU sets, observed, into a result directory",
		run:     runBench,
		flags:   func() *flagSet { fs, _ := benchFlags(); return fs },
	})
}

// portFlags are the loopback ports of the children, shared by bench and
// compare.
type portFlags struct{ server, mock, admin int }

func (p *portFlags) register(fs *flagSet) {
	cliflag.Within(&p.server, 0, cliflag.MaxPort).Var(fs.FlagSet, "server-port", bench.DefaultServerPort, "loopback port of the server (0: a free one)")
	cliflag.Within(&p.mock, 0, cliflag.MaxPort).Var(fs.FlagSet, "mock-port", bench.DefaultMockPort, "loopback port of the mock (0: a free one)")
	cliflag.Within(&p.admin, 0, cliflag.MaxPort).Var(fs.FlagSet, "admin-port", bench.DefaultAdminPort, "loopback port of the server's admin endpoint /debug/carrier (0: a free one)")
}

func (p *portFlags) check() error {
	if (p.server != 0 && (p.server == p.mock || p.server == p.admin)) || (p.mock != 0 && p.mock == p.admin) {
		return badInput("--server-port, --mock-port and --admin-port must differ")
	}
	return nil
}

type benchArgs struct {
	name                           string
	mode                           string
	threads, rate, conns           int
	backlogPollGap                 int
	loadThreads, mockThreads       int
	loadCPUs, serverCPUs, mockCPUs cpuSetFlag
	think                          time.Duration
	ws, float, nplus1, batchOthers bool
	parkIdle                       cliflag.Switch
	topology, wait, poller         string
	warmup, duration, waitB, slice time.Duration
	perfStat, perfSched, noPidstat bool
	outDir                         string
	strict                         bool
	ports                          portFlags
	slo                            sloFlag
	jsonPath                       string
	profile                        string
	hosts                          hostFlags
	mix                            load.Mix
	blockingEndpoint               bool
	app                            appFlags
}

// appFlags are the application's flags of bench and compare.
type appFlags struct {
	app, target string
	dbPool      int
}

// register defines the flags on fs; withMix says the command has --mix
// (bench), which --target's help points to.
func (p *appFlags) register(fs *flagSet, withMix bool) {
	fs.StringVar(&p.app, "app", string(server.AppFruits), "the server's application: fruits (the scheduler study's /fruits through the mock) or tfb (TechEmpower's test types\n"+
		"on a PostgreSQL the runner starts in a temporary directory on the mock's CPUs and stops at the end; modes nethttp, nethttp-carrier and carrier)")
	several := ""
	if withMix {
		several = "; --mix for several"
	}
	fs.StringVar(&p.target, "target", "", "the request `PATH` the load generator sends (default: /fruits, with --app tfb /db"+several+")")
	cliflag.Within(&p.dbPool, 0, 1<<16).Var(fs.FlagSet, "db-pool", 0, fmt.Sprintf("with --app tfb: the server's connections per pool, one pool per carrier in nethttp-carrier mode (0: serve's default, %d)", tfb.DefaultPoolSize))
}

// apply checks the flags against the configuration's mode and sets them on it.
func (p *appFlags) apply(c *bench.Config) error {
	app, err := checkApp(p.app, server.Mode(c.Mode), c.BlockingEndpoint)
	if err != nil {
		return err
	}
	if p.dbPool != 0 && app != server.AppTFB {
		return badInput("--db-pool is for --app %s (the %s app has no database)", server.AppTFB, app)
	}
	if app != server.AppFruits {
		c.App = string(app)
	}
	c.Target, c.DBPool = p.target, p.dbPool
	return nil
}

// startDB starts the database of a tfb configuration on cpus, and says so
// on w; nil for the fruits app. The caller stops it.
func startDB(ctx context.Context, c bench.Config, cpus cpu.Set, w io.Writer) (*bench.DB, error) {
	if !c.TFB() {
		return nil, nil
	}
	db, err := bench.StartDB(ctx, cpus)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "database: %s\n", db)
	return db, nil
}

// stopDB stops db (nil: nothing) and joins its failure to err.
func stopDB(db *bench.DB, err error) error {
	if db == nil {
		return err
	}
	if serr := db.Stop(); serr != nil {
		return errors.Join(err, fmt.Errorf("stop the database: %w", serr))
	}
	return err
}

func benchFlags() (*flagSet, *benchArgs) {
	a := &benchArgs{}
	fs := newFlagSet("bench", "", "Runs one configuration of the scheduler study's experiment: starts the mock, the server and\n"+
		"the load generator as children of this binary, each on its CPU set and in its own process\n"+
		"group; waits for /health; warms up; measures; observes the server in the middle 80% of the\n"+
		"window; writes the result directory (see docs/bench.md); stops every child. CPU sets default\n"+
		"to the layout derived from the CPUs available (as \"spindle compare\" prints it).")
	fs.StringVar(&a.name, "name", "", "name of the configuration in reports (default: the mode)")
	fs.StringVar(&a.mode, "mode", bench.ModeCarrier, "server mode: "+server.ModeHelp())
	cliflag.AtLeast(&a.threads, 0).Var(fs.FlagSet, "threads", 0, "server carriers (GOMAXPROCS for nethttp) (default: one per server CPU, less the reserved one with --nplus1)")
	cliflag.Within(&a.rate, 0, load.MaxRate).Var(fs.FlagSet, "rate", 0, "fixed total rate, requests/s (default: max throughput, closed loop)")
	cliflag.AtLeast(&a.conns, 1).Var(fs.FlagSet, "connections", bench.DefaultConnections, "load generator connections")
	cliflag.AtLeast(&a.loadThreads, 0).Var(fs.FlagSet, "load-threads", 0, "load generator threads (default: one per load CPU)")
	fs.Var(&a.loadCPUs, "load-cpuset", "CPUs of the load generator (default: from the layout)")
	fs.Var(&a.serverCPUs, "server-cpuset", "CPUs of the server (default: from the layout)")
	fs.Var(&a.mockCPUs, "mock-cpuset", "CPUs of the mock (default: from the layout)")
	cliflag.AtLeast(&a.mockThreads, 0).Var(fs.FlagSet, "mock-threads", 0, "mock carriers (default: one per mock CPU)")
	fs.durationVar(&a.think, "mock-think-time", bench.DefaultThinkTime, "mock think time")
	fs.BoolVar(&a.ws, "ws", false, "carrier work stealing")
	fs.BoolVar(&a.float, "float", false, "floating carriers: with --ws, started handler tasks move between carriers (excludes --topology and --nplus1)")
	fs.Var(&a.parkIdle, "park-idle", "idle carriers park in Go's netpoller and GOMAXPROCS stays at the carriers: true, false, or auto (serve --park-idle's choice: on in nethttp-carrier mode, off in the others)")
	cliflag.AtLeast(&a.backlogPollGap, 1).Var(fs.FlagSet, "backlog-poll-gap", carrier.DefaultBacklogPollGap, "with a backlog, drain budgets a carrier runs tasks between two polls of I/O; 1: before every pass, as the scheduler study's loop")
	fs.StringVar(&a.poller, "poller", carrier.DefaultPoller, "carriers' I/O poller: epoll, io_uring or io_uring_poll (an error where the kernel refuses io_uring)")
	fs.StringVar(&a.topology, "topology", bench.DefaultTopology, "carrier pinning: off, cpu or nosmt")
	fs.StringVar(&a.wait, "wait", bench.DefaultWait, "carriers' idle strategy: "+wait.Help())
	cliflag.AtLeast(&a.waitB, 0).Var(fs.FlagSet, "wait-b", 0, "with --wait adaptive: its B kept fixed (serve --wait-b); 0: measured, then learned")
	cliflag.AtLeast(&a.slice, 0).Var(fs.FlagSet, "slice", carrier.DefaultSlice, "the time slice each carrier's thread asks the kernel for, 100us-100ms (serve --slice); 0: the kernel's default")
	fs.BoolVar(&a.batchOthers, "batch-others", true, "the server's other threads under SCHED_BATCH while its carriers block in their pollers (serve --batch-others); false: the kernel's default policy")
	fs.BoolVar(&a.nplus1, "nplus1", false, "N+1: leave one server CPU to everything that is not a carrier")
	fs.Var(&a.mix, "mix", "load request mix entry `WEIGHT:TARGET`, repeatable, instead of /fruits alone (spindle load --mix); --connections is then rounded up to a multiple of the weights' sum, so that each connection sends one target at a fixed rate")
	fs.BoolVar(&a.blockingEndpoint, "blocking-endpoint", false, "the server also serves GET /block?kind=sleep|mutex|singleflight&d=DURATION, a handler that blocks the Go way (for a --mix entry)")
	fs.durationVar(&a.warmup, "warmup", bench.DefaultWarmup, "warm-up before the measured window; 0: none")
	cliflag.Positive(&a.duration).Var(fs.FlagSet, "duration", bench.DefaultDuration, "measured window")
	fs.BoolVar(&a.perfStat, "perf-stat", false, "run perf stat on the server (CPUs utilized, context switches, IPC)")
	fs.BoolVar(&a.perfSched, "perf-sched", false, "run perf sched (per-thread runs per CPU, migrations; heavy)")
	fs.BoolVar(&a.noPidstat, "no-pidstat", false, "skip the per-thread /proc sampling")
	fs.StringVar(&a.profile, "profile", "", "profile the server over the observers' window: `KIND` cpu (cpu.pprof, top functions in the report)")
	fs.StringVar(&a.outDir, "output-dir", "", "result directory, new or empty (default: results/bench-NAME-TIME)")
	fs.BoolVar(&a.strict, "strict", false, "reject overlapping CPU sets")
	a.app.register(fs, true)
	a.ports.register(fs)
	a.slo.register(fs)
	fs.StringVar(&a.jsonPath, "json", "", "also write summary.json to `FILE` (\"-\": stdout, the text then goes to stderr)")
	a.hosts.register(fs)
	fs.example(
		`spindle bench --mode carrier --rate 5000 --perf-stat --output-dir results/x`,
		`spindle bench --mode nethttp --duration 10s --slo 'p99<=10ms,errors<=0.1%' --json - > summary.json`,
		`spindle bench --mode carrier --profile cpu --server-cpuset 2-3 --load-cpuset 0-1 --mock-cpuset 4`,
		`spindle bench --server-host h1 --load-hosts h2,h3 --rate 40000 --output-dir results/3hosts`,
		`spindle bench --mode nethttp-carrier --rate 2000 --connections 1000 --blocking-endpoint --mix 95:/fruits --mix '5:/block?kind=sleep&d=20ms'`,
		`spindle bench --app tfb --mode nethttp-carrier --target /fortunes --duration 10s`,
	)
	return fs, a
}

// benchFlagOf names the flag of each field of bench.Config that has one,
// for Validate's errors (bench.ConfigError): "--wait-b 5ms", not "WaitB".
var benchFlagOf = map[string]string{
	"Mode": "--mode", "Threads": "--threads", "Rate": "--rate", "Connections": "--connections", "LoadThreads": "--load-threads",
	"LoadCPUs": "--load-cpuset", "ServerCPUs": "--server-cpuset", "MockCPUs": "--mock-cpuset", "MockThreads": "--mock-threads",
	"MockThinkTime": "--mock-think-time", "WorkStealing": "--ws", "Float": "--float", "ParkIdle": "--park-idle", "Poller": "--poller",
	"BacklogPollGap": "--backlog-poll-gap", "Topology": "--topology", "Wait": "--wait", "WaitB": "--wait-b", "Slice": "--slice",
	"NoBatch": "--batch-others=false", "NPlus1": "--nplus1", "Mix": "--mix", "BlockingEndpoint": "--blocking-endpoint", "App": "--app",
	"Target": "--target", "DBPool": "--db-pool", "Warmup": "--warmup", "Duration": "--duration", "Profile": "--profile",
}

// configInput is Validate's error as bad input, its fields named as the
// command's flags of flagOf ("--threads 8 --topology cpu: ..."); an error
// about no field, or a field without a flag, keeps its message.
func configInput(err error, flagOf map[string]string) error {
	var ce *bench.ConfigError
	if !errors.As(err, &ce) {
		return asBadInput(err)
	}
	flags := make([]string, len(ce.Fields))
	for i, f := range ce.Fields {
		name, ok := flagOf[f.Name]
		if !ok {
			return asBadInput(err)
		}
		flags[i] = strings.TrimSpace(name + " " + f.Value)
	}
	return badInput("%s: %v", strings.Join(flags, " "), ce.Err)
}

// config turns the flags into a validated configuration.
func (a *benchArgs) config(fs *flagSet) (bench.Config, error) {
	if err := a.ports.check(); err != nil {
		return bench.Config{}, err
	}
	if err := server.CheckModeFlags(server.Mode(a.mode), fs.given); err != nil {
		return bench.Config{}, asBadInput(err)
	}
	for _, f := range []struct {
		name string
		set  cpu.Set
	}{{"load-cpuset", a.loadCPUs.set}, {"server-cpuset", a.serverCPUs.set}, {"mock-cpuset", a.mockCPUs.set}} {
		if err := checkCPUs(f.name, f.set); err != nil {
			return bench.Config{}, err
		}
	}
	all, topo, err := bench.Machine()
	if err != nil {
		return bench.Config{}, err
	}
	l, err := bench.LayoutFor(all, topo)
	if err != nil {
		return bench.Config{}, err
	}
	if a.strict {
		l = l.Exclusive()
	}
	or := func(s, def cpu.Set) cpu.Set {
		if len(s) > 0 {
			return s
		}
		return def
	}
	c := bench.Config{
		Name: a.name, Mode: a.mode, Threads: a.threads, Rate: a.rate, Connections: a.conns,
		LoadThreads: a.loadThreads, LoadCPUs: or(a.loadCPUs.set, l.Load), ServerCPUs: or(a.serverCPUs.set, l.Server),
		MockCPUs: or(a.mockCPUs.set, l.Mock), MockThreads: a.mockThreads, MockThinkTime: a.think,
		WorkStealing: a.ws, Float: a.float, ParkIdle: a.parkIdle, Poller: a.poller, BacklogPollGap: a.backlogPollGap, Topology: a.topology, Wait: a.wait, WaitB: a.waitB, Slice: server.SliceOption(a.slice, a.float), NoBatch: !a.batchOthers, NPlus1: a.nplus1,
		Warmup: a.warmup, Duration: a.duration, PerfStat: a.perfStat, PerfSched: a.perfSched, Pidstat: !a.noPidstat,
		ServerPort: a.ports.server, MockPort: a.ports.mock, AdminPort: a.ports.admin, Profile: a.profile,
		Mix: a.mix, BlockingEndpoint: a.blockingEndpoint,
	}
	if c.Name == "" {
		c.Name = c.Mode
	}
	if err := a.app.apply(&c); err != nil {
		return c, err
	}
	c.Connections = c.MixConnections()
	if c.Threads == 0 { // one per server CPU, less N+1's reserved one, as serve's default
		c.Threads = len(c.ServerCPUs)
		if c.NPlus1 && c.Threads > 1 {
			c.Threads--
		}
	}
	if c.LoadThreads == 0 {
		c.LoadThreads = len(c.LoadCPUs)
	}
	if c.MockThreads == 0 {
		c.MockThreads = len(c.MockCPUs)
	}
	if err := c.Validate(a.strict); err != nil {
		return c, configInput(err, benchFlagOf)
	}
	if c.Mode != bench.ModeNetHTTP { // the server runs here: it must be able to use the poller
		if err := checkPoller(c.Poller); err != nil {
			return c, err
		}
	}
	if c.Poller == carrier.DefaultPoller {
		c.Poller = "" // the server's default: results of earlier runs compare equal
	}
	if c.BacklogPollGap == carrier.DefaultBacklogPollGap {
		c.BacklogPollGap = 0 // as the poller: the server's default
	}
	return c, nil
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, a := benchFlags()
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInput("bench takes no arguments (got %q)", pos[0])
	}
	a.mode = appMode(fs, a.app.app, a.mode)
	cfg, err := a.config(fs)
	if err != nil {
		return err
	}
	if err := a.slo.parse("bench"); err != nil {
		return err
	}
	jsonOut, stdout, err := jsonOutput(a.jsonPath, stdout, stderr)
	if err != nil {
		return err
	}
	dir, err := outputDir("output-dir", a.outDir, filepath.Join("results", "bench-"+report.SafeName(cfg.Name)+"-"+time.Now().Format("20060102-150405")))
	if err != nil {
		return err
	}
	hosts, closeHosts, err := a.hosts.open(ctx)
	if err != nil {
		return err
	}
	defer closeHosts()
	if err := hosts.CheckCPUs(cfg); err != nil {
		return asBadInput(err)
	}
	fmt.Fprintf(stdout, "spindle bench %s: server %s (%s), load %s, mock %s -> %s\n",
		cfg.Name, cfg.ServerCPUs, report.Count(cfg.Threads, "thread", "threads"), cfg.LoadCPUs, cfg.MockCPUs, dir)
	if hosts.Remote() {
		fmt.Fprintf(stdout, "hosts: %s\n", hosts.Layout())
	}
	if cfg.TFB() && hosts.Remote() {
		return badInput("--app %s runs every role on this machine (its database is started here): no --server-host, --mock-host or --load-hosts", cfg.App)
	}
	db, err := startDB(ctx, cfg, cfg.MockCPUs, stdout)
	if err != nil {
		return err
	}
	err = benchRun(ctx, a, cfg, dir, hosts, db, jsonOut, stdout, stderr)
	return stopDB(db, err)
}

// benchRun runs cfg into dir and reports it.
func benchRun(ctx context.Context, a *benchArgs, cfg bench.Config, dir string, hosts *bench.Hosts, db *bench.DB, jsonOut, stdout, stderr io.Writer) error {
	if err := bench.PinRunner(cfg.LoadCPUs); err != nil {
		return err
	}
	line := newProgressLine(stderr, "bench")
	start := time.Now()
	total := cfg.Warmup + cfg.Duration + bench.DefaultOverhead
	sum, err := bench.Run(ctx, cfg, bench.RunOptions{Dir: dir, Hosts: hosts, DB: db, Progress: func(step string) {
		line.show(bench.Progress{Run: 1, Runs: 1, Config: cfg.Name, Step: step,
			Elapsed: time.Since(start), Remaining: max(0, total-time.Since(start))})
	}})
	line.close()
	if errors.Is(err, bench.ErrPortBusy) {
		return asBadInput(err)
	}
	printSummary(stdout, sum)
	if a.jsonPath != "" {
		if jerr := writeJSONOut(a.jsonPath, jsonOut, sum); jerr != nil {
			return errors.Join(err, jerr)
		}
	}
	if err != nil {
		return fmt.Errorf("%w (results marked incomplete in %s)", err, dir)
	}
	return a.slo.check(stdout, "bench", []report.Result{{Dir: dir, Summary: sum}})
}

// topShown is how many of the profile's top functions the terminal shows:
// three fit a line; the report lists report.DefaultTopFunctions.
const topShown = 3

// printSummary prints a run's headline figures.
func printSummary(w io.Writer, s report.Summary) {
	if !s.Complete {
		return
	}
	p50, p99 := "n/a", "n/a"
	if s.Latency != nil && s.Latency.Count > 0 {
		p50 = fmt.Sprintf("%.2fms", float64(s.Latency.PercentilesUs["50"])/1000)
		p99 = fmt.Sprintf("%.2fms", float64(s.Latency.PercentilesUs["99"])/1000)
	}
	cpus := "n/a (" + s.NA["perf-stat"] + ")"
	if s.Perf != nil {
		cpus = s.Perf.CPUsUtilized.String()
	} else if s.Server != nil {
		cpus = fmt.Sprintf("%.2f (/proc)", s.Server.CPUs)
	}
	fmt.Fprintf(w, "%s: %.0f req/s, p50 %s, p99 %s, errors %d, server CPUs utilized %s, system calls/request %s\n",
		s.Name, s.Throughput, p50, p99, s.Errors, cpus, s.SyscallsPerRequest(s.NA["perf-stat"]))
	if len(s.Profile) > 0 {
		var top []string
		for _, f := range s.Profile[:min(len(s.Profile), topShown)] {
			top = append(top, fmt.Sprintf("%s %.1f%%", f.Name, f.FlatPct))
		}
		fmt.Fprintf(w, "server CPU profile (%s), top functions by own samples: %s\n", report.ProfileFile, strings.Join(top, ", "))
	} else if why := s.NA["profile"]; why != "" {
		fmt.Fprintf(w, "server CPU profile: n/a (%s)\n", why)
	}
}
