// Package bench runs the scheduler study's experiment: a mock backend, the
// server under test and the load generator, each a child process of the
// spindle binary on its own CPU set, with observers in a defined window, into
// a result directory (Run); and the comparison matrices of "spindle compare"
// as pure data (Plan).
package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/report"
	"github.com/spindle-lab/spindle/server"
)

// Modes of the server under test, as Config.Mode spells them: the flag
// values of server's registered modes (server.Modes lists them all).
const (
	ModeNetHTTP = string(server.ModeNetHTTP) // net/http, the Go scheduler's work stealing (the study's FJP)
	ModeHandoff = string(server.ModeHandoff) // carriers for I/O, a goroutine per request
	ModeCarrier = string(server.ModeCarrier) // everything on carriers, with affinity
	// ModeNetHTTPCarrier is nethttp's handler and client code on carriers:
	// with nethttp and carrier it splits carrier's gain into the
	// scheduler's part and the code path's.
	ModeNetHTTPCarrier = string(server.ModeNetHTTPCarrier)
)

// Defaults of one configuration, reused as the flags of "spindle bench".
const (
	// DefaultConnections is the study's CPU-bound connection count.
	DefaultConnections = 100
	// DefaultThinkTime is the study's CPU-bound mock delay.
	DefaultThinkTime = time.Millisecond
	// DefaultWarmup is the warm-up before the measured window: the study's
	// runner's default.
	DefaultWarmup = 10 * time.Second
	// DefaultDuration is the measured window with the study's durations.
	DefaultDuration = 30 * time.Second
	// DefaultTopology leaves carriers unpinned (the study's baseline).
	DefaultTopology = "off"
	// DefaultWait is the carriers' idle strategy (block in epoll_wait, as
	// the study's carriers do).
	DefaultWait = "block"
	// DefaultServerPort, DefaultMockPort and DefaultAdminPort are the
	// loopback ports of the children: 0 picks free ones, so that a run never
	// collides with a service already on the machine. A port given
	// explicitly must be free.
	DefaultServerPort = 0
	DefaultMockPort   = 0
	DefaultAdminPort  = 0
)

// Defaults of "spindle compare".
const (
	// DefaultRounds is how many times each configuration runs, interleaved.
	DefaultRounds = 3
	// QuickWarmup and QuickDuration keep the default comparison under five
	// minutes on two CPUs: 6 configurations x 2 loads x 3 rounds of about
	// 5.5 s each (start, warm-up, window, stop).
	QuickWarmup   = time.Second
	QuickDuration = 3 * time.Second
	// FixedRateShare is the fixed rate of the second phase as a share of
	// the lowest mode's max throughput (the study's 50K of 72K).
	FixedRateShare = 0.70
	// IOThinkTime, IOConnections and IOCarriers are the study's I/O-bound
	// case.
	IOThinkTime   = 30 * time.Millisecond
	IOConnections = 10000
	IOCarriers    = 8
	// IOWarmup and IODuration are the I/O-bound preset's quick durations:
	// opening 10,000 connections and filling them takes seconds on a small
	// machine, so the 1 s quick warm-up would measure the ramp.
	IOWarmup   = 5 * time.Second
	IODuration = 10 * time.Second
)

// Layout places the three processes on the machine's CPUs.
type Layout struct {
	// Load, Server and Mock are the CPU sets of the load generator, the
	// server and the mock. They may overlap on small machines.
	Load   cpu.Set `json:"load"`
	Server cpu.Set `json:"server"`
	Mock   cpu.Set `json:"mock"`
	// Extra is the CPU the N+1 configuration adds to Server; empty when
	// the machine has none to spare.
	Extra cpu.Set `json:"extra,omitempty"`
	// Carriers is the number of server threads (one per server CPU).
	Carriers int `json:"carriers"`
	// LoadThreads and MockThreads are one per CPU of their sets.
	LoadThreads int `json:"load_threads"`
	MockThreads int `json:"mock_threads"`
	// Note says how the layout was chosen, for the report.
	Note string `json:"note"`
}

// LayoutFor derives the CPU-bound layout from the CPUs available (sorted)
// and, when topo is given, the machine's SMT siblings. The shape depends on
// the count alone; positions index into cpus, so that a machine whose
// usable CPUs are 4-19 gets the same shape as one with 0-15:
//
//	1 CPU:     everything on it
//	2 CPUs:    server on the first; load and mock share the second
//	3 CPUs:    load, server, mock on one each
//	4-5 CPUs:  load 2 (one on the mock's CPU), server 2 (2 carriers), mock 1, N+1 extra on 5
//	6-7 CPUs:  load 2-3, server 2, mock 1, N+1 extra 1
//	8 CPUs:    load 3, server 2, mock 2, N+1 extra 1
//	9+ CPUs:   the study's layout: load 0,1,4,5; server 2,3; mock 6,7; extra 8
//
// With SMT the server takes whole cores (see place), so that no load or
// mock thread runs on a sibling of a server CPU, sharing its core.
func LayoutFor(cpus cpu.Set, topo *cpu.Topology) (Layout, error) {
	n := len(cpus)
	const (
		load = iota
		server
		mock
		extra
	)
	var roles []int // the role of each position
	l := Layout{}
	switch {
	case n == 0:
		return Layout{}, fmt.Errorf("layout: no CPUs available")
	case n == 1:
		l.Load, l.Server, l.Mock = cpus[:1], cpus[:1], cpus[:1]
		l.Note = "1 CPU: load, server and mock share it: every figure includes the load generator's and the mock's work on the server's CPU"
	case n == 2:
		roles = []int{server, load}
		l.Note = "2 CPUs: server on one, load and mock share the other; no CPU for N+1. " + SharedNote
	case n == 3:
		roles = []int{load, server, mock}
		l.Note = "3 CPUs: one each for load, server and mock; no CPU for N+1"
	case n < 8:
		// Two carriers need about 0.8 of a load CPU at their max here
		// (the generator used 0.16-0.41 of one at 14-25K req/s, a carrier's
		// max on one CPU): a second load thread keeps it from being the
		// bottleneck. On 4-5 CPUs it shares the mock's CPU, which costs the
		// generator nothing measurable (SharedNote); from 6 it has its own.
		roles = []int{load, server, server, mock}
		if n >= 5 {
			roles = append(roles, extra)
		}
		roles = append(roles, slices.Repeat([]int{load}, n-len(roles))...)
		// The note is written once the sets are placed.
	case n == 8:
		roles = []int{load, load, server, server, load, mock, mock, extra}
		l.Note = "8 CPUs: load 3, server 2, mock 2, N+1 extra 1"
	default:
		roles = []int{load, load, server, server, load, load, mock, mock, extra}
		l.Note = "the study's layout: load 4, server 2, mock 2, N+1 extra 1"
	}
	if roles != nil {
		sets, smt := place(cpus, topo, roles, server)
		l.Load, l.Server, l.Mock, l.Extra = sets[load], sets[server], sets[mock], sets[extra]
		switch {
		case n == 2:
			l.Mock = l.Load
		case n == 4 || n == 5: // the second load thread on the mock's CPU
			l.Load = append(l.Load, l.Mock...)
			slices.Sort(l.Load)
		}
		if n >= 4 && n < 8 {
			l.Note = fmt.Sprintf("%d CPUs: load %d, server 2, mock 1", n, len(l.Load))
			if n < 6 {
				l.Note += sharedLoadNote
			}
			if len(l.Extra) > 0 {
				l.Note += ", N+1 extra 1"
			} else {
				l.Note += "; no CPU for N+1"
			}
		}
		if smt {
			l.Note += fmt.Sprintf("; SMT: the server takes whole cores (CPUs %s), no load or mock thread runs on their siblings", l.Server)
		}
	}
	l.Carriers, l.LoadThreads, l.MockThreads = len(l.Server), len(l.Load), len(l.Mock)
	return l, nil
}

// sharedLoadNote is what the note of a 4-5 CPU layout says of its second
// load thread.
const sharedLoadNote = " (a load thread shares the mock's CPU: the generator needs about 0.8 of a CPU at two carriers' max)"

// Exclusive is l without the load threads that share a CPU with the mock
// or the server where the load generator has a CPU of its own (4-5 CPUs'
// second load thread), for --strict; a layout that must share (1-2 CPUs)
// is returned as it is, for Validate to refuse.
func (l Layout) Exclusive() Layout {
	var own cpu.Set
	for _, c := range l.Load {
		if !slices.Contains(l.Mock, c) && !slices.Contains(l.Server, c) {
			own = append(own, c)
		}
	}
	if len(own) == 0 || len(own) == len(l.Load) {
		return l
	}
	l.Note = strings.Replace(strings.Replace(l.Note, sharedLoadNote, "", 1), fmt.Sprintf("load %d,", len(l.Load)), fmt.Sprintf("load %d,", len(own)), 1) +
		"; --strict: no load thread on the mock's CPU"
	l.Load, l.LoadThreads = own, len(own)
	return l
}

// SharedNote says what sharing the load generator's CPU with the mock
// costs, as measured on the 2-vCPU development machine
// (docs/PERFORMANCE.md, "Judging the load generator by its send lag").
const SharedNote = "Sharing costs little here: at the default fixed rate the load generator's p90 send lag was 114-273 µs " +
	"sharing with the mock and 84-371 µs alone, the p50 1.22-1.25 ms and 1.30-1.33 ms; at max throughput the load " +
	"generator used under 0.4 of the CPU while the server used all of its own, so the server, not the shared CPU, is the bottleneck " +
	"(runs where it is not are left out)"

// place assigns cpus to the roles of positions (roles[i] is the role of
// the i-th position; sets are indexed by role). The role self (the server)
// takes whole cores of topo: from the core of the CPU at its first
// position on, in order, wrapping, a core's CPUs together, until it has as
// many as it has positions; the other positions get the CPUs left, in
// order. Without SMT (or topo) that is the positional assignment itself.
// smt reports whether siblings changed it.
func place(cpus cpu.Set, topo *cpu.Topology, roles []int, self int) (sets map[int]cpu.Set, smt bool) {
	sets = map[int]cpu.Set{}
	want, first := 0, -1
	for i, r := range roles {
		if r == self {
			want++
			if first < 0 {
				first = i
			}
		}
	}
	taken := map[int]bool{}
	for k := range len(cpus) {
		c := cpus[(first+k)%len(cpus)]
		if taken[c] || len(sets[self]) == want {
			continue
		}
		group := cpu.Set{c}
		if topo != nil && topo.SMT() {
			group = topo.SiblingsOf(c).Intersect(cpus)
			if len(group) == 0 {
				group = cpu.Set{c}
			}
		}
		for _, g := range group {
			if !taken[g] && len(sets[self]) < want {
				taken[g] = true
				sets[self] = append(sets[self], g)
			}
		}
	}
	rest := make(cpu.Set, 0, len(cpus))
	for _, c := range cpus {
		if !taken[c] {
			rest = append(rest, c)
		}
	}
	positional := true
	for i, r := range roles {
		if r == self {
			positional = positional && slices.Contains(sets[self], cpus[i])
			continue
		}
		sets[r] = append(sets[r], rest[0])
		positional = positional && rest[0] == cpus[i]
		rest = rest[1:]
	}
	slices.Sort(sets[self])
	return sets, !positional
}

// IOLayoutFor derives the I/O-bound preset's layout: 8 carriers where the
// machine has 16 CPUs (the study's load 0-3, mock 4-7, server 8-15), else the
// CPU-bound layout with 8 carriers sharing its server CPUs.
func IOLayoutFor(cpus cpu.Set, topo *cpu.Topology) (Layout, error) {
	if len(cpus) >= 16 {
		pick := func(from, to int) cpu.Set { return append(cpu.Set(nil), cpus[from:to]...) }
		return Layout{Load: pick(0, 4), Mock: pick(4, 8), Server: pick(8, 16),
			Carriers: IOCarriers, LoadThreads: 4, MockThreads: 4,
			Note: "the study's I/O-bound layout: load 4, mock 4, server 8"}, nil
	}
	l, err := LayoutFor(cpus, topo)
	if err != nil {
		return l, err
	}
	l.Carriers, l.Extra = IOCarriers, nil
	l.Note += fmt.Sprintf("; %d carriers share the server CPUs (the study's I/O-bound layout needs 16)", IOCarriers)
	return l, nil
}

// ProfileCPU is Config.Profile for a CPU profile of the server.
const ProfileCPU = "cpu"

// Config is one benchmark configuration: what "spindle bench" runs.
type Config struct {
	// Name labels the configuration in reports ("carrier+pinning").
	Name string `json:"name"`
	// Mode is ModeNetHTTP, ModeHandoff, ModeCarrier or ModeNetHTTPCarrier.
	Mode string `json:"mode"`
	// Threads is the server's carrier (or GOMAXPROCS) count.
	Threads int `json:"threads"`
	// Rate is the total fixed rate in requests per second; 0 runs at max
	// throughput (closed loop).
	Rate int `json:"rate"`
	// Connections and LoadThreads size the load generator.
	Connections int `json:"connections"`
	LoadThreads int `json:"load_threads"`
	// LoadCPUs, ServerCPUs and MockCPUs are the processes' CPU sets.
	LoadCPUs   cpu.Set `json:"load_cpuset"`
	ServerCPUs cpu.Set `json:"server_cpuset"`
	MockCPUs   cpu.Set `json:"mock_cpuset"`
	// MockThreads and MockThinkTime configure the mock backend.
	MockThreads   int           `json:"mock_threads"`
	MockThinkTime time.Duration `json:"mock_think_time_ns"`
	// WorkStealing enables carrier work stealing (--ws).
	WorkStealing bool `json:"ws"`
	// Float runs floating carriers (--float): with WorkStealing, started
	// handler tasks move between carriers. The server then gets no
	// --cpuset or pinning of its own: it runs on the CPU set it is started
	// with.
	Float bool `json:"float,omitempty"`
	// ParkIdle has the server's idle carriers park in Go's netpoller
	// (--park-idle, carrier.Options.ParkIdle): on, off, or auto, the
	// mode's default (server.ParkIdleFor).
	ParkIdle cliflag.Switch `json:"park_idle,omitempty"`
	// Poller is the carriers' I/O poller, carrier.PollerEpoll or
	// carrier.PollerURing (--poller); "": the server's default (epoll).
	Poller string `json:"poller,omitempty"`
	// BacklogPollGap is the carriers' carrier.Options.BacklogPollGap
	// (--backlog-poll-gap); 0: the server's default.
	BacklogPollGap int `json:"backlog_poll_gap,omitempty"`
	// Topology is the carriers' pinning: off, cpu or nosmt.
	Topology string `json:"topology"`
	// Wait is the carriers' idle strategy (block, busy, pause, adaptive...).
	Wait string `json:"wait"`
	// WaitB is the adaptive strategy's B kept fixed (serve --wait-b); 0:
	// measured at start, then learned.
	WaitB time.Duration `json:"wait_b_ns,omitempty"`
	// Slice is the carrier threads' time slice (serve --slice,
	// carrier.Options.Slice): 0 the server's default (carrier.DefaultSlice),
	// negative the kernel's default.
	Slice time.Duration `json:"slice_ns,omitempty"`
	// NoBatch leaves the server's other threads under the kernel's default
	// policy (serve --batch-others=false, carrier.Options.NoBatch).
	NoBatch bool `json:"no_batch,omitempty"`
	// NPlus1 leaves one server CPU to everything that is not a carrier.
	NPlus1 bool `json:"nplus1"`
	// Mix, when not empty, is the load generator's request mix (load
	// --mix) instead of /fruits alone; BlockingEndpoint has the server
	// serve /block (serve --blocking-endpoint), which a mix entry may send
	// to: a handler that blocks the Go way, beside /fruits.
	Mix              load.Mix `json:"mix,omitempty"`
	BlockingEndpoint bool     `json:"blocking_endpoint,omitempty"`
	// App is the server's application (server.App): "" for the study's
	// fruits, or "tfb", TechEmpower's test types on a PostgreSQL the
	// runner starts (RunOptions.DB), with no mock; in server.TFBModes.
	App string `json:"app,omitempty"`
	// Target is the request target the load generator sends without a
	// Mix; "": the app's (DefaultTarget).
	Target string `json:"target,omitempty"`
	// DBPool is the tfb app's connections per pool (serve --db-pool); 0:
	// the server's default.
	DBPool int `json:"db_pool,omitempty"`
	// Warmup precedes the measured window Duration.
	Warmup   time.Duration `json:"warmup_ns"`
	Duration time.Duration `json:"duration_ns"`
	// PerfStat, PerfSched and Pidstat select the observers (Pidstat is the
	// per-thread /proc sampling).
	PerfStat  bool `json:"perf_stat"`
	PerfSched bool `json:"perf_sched"`
	Pidstat   bool `json:"pidstat"`
	// Profile is ProfileCPU for a CPU profile of the server over the
	// observers' window (cpu.pprof), or "" for none.
	Profile string `json:"profile,omitempty"`
	// ServerPort, MockPort and AdminPort are loopback ports; 0 picks free
	// ones.
	ServerPort int `json:"server_port"`
	MockPort   int `json:"mock_port"`
	AdminPort  int `json:"admin_port"`
}

// ConfigError is Validate's error about fields of a Config: Fields are
// the fields at fault with their values as Go names them ("WaitB",
// "5ms"), Err what is wrong or what is valid. Its message names the
// fields ("WaitB 5ms: ..."); a command names its flags instead.
type ConfigError struct {
	Fields []Field
	Err    error
}

// Field is a field of Config and its value as a ConfigError names it: ""
// for a switch that is on, a string quoted.
type Field struct{ Name, Value string }

func (e *ConfigError) Error() string {
	names := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		names[i] = strings.TrimSpace(f.Name + " " + f.Value)
	}
	return strings.Join(names, ", ") + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *ConfigError) Unwrap() error { return e.Err }

// fieldErr is a ConfigError of one field.
func fieldErr(name, value string, format string, args ...any) error {
	return &ConfigError{Fields: []Field{{name, value}}, Err: fmt.Errorf(format, args...)}
}

// carrierFields maps carrier.Options' fields, as a carrier.ConflictError
// names them, to Config's.
var carrierFields = map[string]string{"Float": "Float", "Pin": "Topology", "NPlusOne": "NPlus1", "CPUs": "ServerCPUs", "Slice": "Slice"}

// Validate checks the configuration; strict also rejects overlapping CPU
// sets. Its errors about fields are *ConfigError.
func (c Config) Validate(strict bool) error {
	mode, err := server.ParseMode(c.Mode)
	if err != nil {
		return fieldErr("Mode", fmt.Sprintf("%q", c.Mode), "want %s", server.ModeHelp())
	}
	// The server's own rules, so that a plan fails before anything starts.
	pin, err := carrier.ParsePinning(c.Topology)
	if err != nil {
		return fieldErr("Topology", fmt.Sprintf("%q", c.Topology), "want one of off, cpu, nosmt")
	}
	if c.Poller != "" && !slices.Contains(carrier.Pollers, c.Poller) {
		return fieldErr("Poller", fmt.Sprintf("%q", c.Poller), "want one of %s", strings.Join(carrier.Pollers, ", "))
	}
	if c.Slice > 0 && carrier.CheckSlice(c.Slice) != nil {
		return fieldErr("Slice", c.Slice.String(), "want 0 (the kernel's default) or %v to %v", carrier.MinSlice, carrier.MaxSlice)
	}
	if err := (carrier.Options{Pin: pin, NPlusOne: c.NPlus1, Float: c.Float, Poller: c.Poller, Slice: c.Slice}).Check(); err != nil {
		var ce *carrier.ConflictError
		if !errors.As(err, &ce) {
			return err
		}
		fields := []Field{{carrierFields[ce.Option], ""}}
		for _, w := range ce.With {
			fields = append(fields, Field{carrierFields[w.Field], w.Value})
		}
		return &ConfigError{Fields: fields, Err: errors.New(ce.Why + ": they exclude each other")}
	}
	if err, known := wait.Available()[c.Wait]; !known {
		return fieldErr("Wait", fmt.Sprintf("%q", c.Wait), "want one of %s", strings.Join(wait.Names(), ", "))
	} else if err != nil {
		return fieldErr("Wait", c.Wait, "%w", err)
	}
	if err := wait.CheckB(c.Wait, c.WaitB); err != nil {
		return fieldErr("WaitB", c.WaitB.String(), "%w", err)
	}
	switch {
	case c.Threads < 1:
		return fieldErr("Threads", fmt.Sprint(c.Threads), "want at least 1")
	case c.Rate < 0 || c.Rate > load.MaxRate:
		return fieldErr("Rate", fmt.Sprint(c.Rate), "want 0 (max throughput) to %d", int(load.MaxRate))
	case c.BacklogPollGap < 0:
		return fieldErr("BacklogPollGap", fmt.Sprint(c.BacklogPollGap), "want at least 1 (0: the default)")
	case c.Connections < 1:
		return fieldErr("Connections", fmt.Sprint(c.Connections), "want at least 1")
	case c.LoadThreads < 1:
		return fieldErr("LoadThreads", fmt.Sprint(c.LoadThreads), "want at least 1")
	case c.MockThreads < 1:
		return fieldErr("MockThreads", fmt.Sprint(c.MockThreads), "want at least 1")
	case c.Connections < c.LoadThreads:
		return &ConfigError{Fields: []Field{{"Connections", fmt.Sprint(c.Connections)}, {"LoadThreads", fmt.Sprint(c.LoadThreads)}},
			Err: errors.New("want at least one connection per load thread")}
	case c.Duration <= 0:
		return fieldErr("Duration", c.Duration.String(), "want a window above 0")
	case c.Warmup < 0:
		return fieldErr("Warmup", c.Warmup.String(), "want 0 (none) or more")
	case c.MockThinkTime < 0:
		return fieldErr("MockThinkTime", c.MockThinkTime.String(), "want 0 or more")
	case c.Profile != "" && c.Profile != ProfileCPU:
		return fieldErr("Profile", fmt.Sprintf("%q", c.Profile), "want %s (or none)", ProfileCPU)
	}
	if err := c.checkCarriers(mode, pin); err != nil {
		return err
	}
	if err := c.checkMix(); err != nil {
		return err
	}
	if err := c.checkApp(); err != nil {
		return err
	}
	if strict {
		return c.overlap()
	}
	return nil
}

// checkCarriers refuses carrier settings in a mode without carriers
// (nethttp: they would label the run with settings that had no effect)
// and, in the others, a placement the server's CPUs cannot hold (pinned
// carriers, N+1's reserved CPU), before anything starts.
func (c Config) checkCarriers(mode server.Mode, pin carrier.Pinning) error {
	if mode == server.ModeNetHTTP {
		for _, f := range []struct {
			name, value string
			set         bool
		}{
			{"WorkStealing", "", c.WorkStealing}, {"Float", "", c.Float}, {"ParkIdle", c.ParkIdle.String(), c.ParkIdle != cliflag.SwitchAuto},
			{"Poller", c.Poller, c.Poller != "" && c.Poller != carrier.DefaultPoller},
			{"BacklogPollGap", fmt.Sprint(c.BacklogPollGap), c.BacklogPollGap != 0 && c.BacklogPollGap != carrier.DefaultBacklogPollGap},
			{"Topology", c.Topology, pin != carrier.PinOff}, {"Wait", c.Wait, c.Wait != DefaultWait}, {"WaitB", c.WaitB.String(), c.WaitB != 0},
			{"Slice", c.Slice.String(), c.Slice != 0 && c.Slice != carrier.DefaultSlice}, {"NoBatch", "", c.NoBatch}, {"NPlus1", "", c.NPlus1},
		} {
			if f.set {
				return fieldErr(f.name, f.value, "configures carriers: it applies to modes %s, not %s", server.CarrierModesHelp(), mode)
			}
		}
		return nil
	}
	if c.Float {
		return nil // no pinning, no reserved CPU: any number of carriers fits
	}
	err := carrier.CheckPlacement(carrier.Options{CPUs: c.ServerCPUs, Carriers: c.Threads, Pin: pin, NPlusOne: c.NPlus1})
	if err == nil {
		return nil
	}
	fields := []Field{{"Threads", fmt.Sprint(c.Threads)}}
	if pin != carrier.PinOff {
		fields = append(fields, Field{"Topology", c.Topology})
	}
	if c.NPlus1 {
		fields = append(fields, Field{"NPlus1", ""})
	}
	fields = append(fields, Field{"ServerCPUs", c.ServerCPUs.String()})
	return &ConfigError{Fields: fields, Err: err}
}

// checkApp checks the app against the mode and the options that go with
// it, and the target.
func (c Config) checkApp() error {
	app, err := server.ParseApp(c.App)
	if err != nil {
		return err
	}
	if err := server.CheckApp(app, server.Mode(c.Mode)); err != nil {
		return err
	}
	if app == server.AppTFB && c.BlockingEndpoint {
		return fmt.Errorf("app %s does not serve %s (the blocking endpoint is the fruits app's)", app, server.BlockPath)
	}
	if c.DBPool != 0 && app != server.AppTFB {
		return fieldErr("DBPool", fmt.Sprint(c.DBPool), "only the %s app has a database", server.AppTFB)
	}
	if c.DBPool < 0 {
		return fieldErr("DBPool", fmt.Sprint(c.DBPool), "want at least 1 (0: the server's default)")
	}
	if c.Target != "" && !strings.HasPrefix(c.Target, "/") {
		return fieldErr("Target", fmt.Sprintf("%q", c.Target), "want a path that starts with /, such as %s", DefaultTarget(app))
	}
	if c.Target != "" && len(c.Mix) > 0 {
		return fieldErr("Target", c.Target, "a mix has the targets: give one or the other")
	}
	return nil
}

// DefaultTarget is the load generator's request target for app: /fruits
// for the study's, /db for tfb (a query per request: TechEmpower's
// "single query" test).
func DefaultTarget(app server.App) string {
	if app == server.AppTFB {
		return "/db"
	}
	return "/fruits"
}

// TFB reports whether c serves the tfb app (a database, no mock).
func (c Config) TFB() bool { return c.App == string(server.AppTFB) }

// checkMix checks the request mix, and that one sending to /block has a
// server that serves it.
func (c Config) checkMix() error {
	if len(c.Mix) == 0 {
		return nil
	}
	if err := load.CheckMix(c.Mix); err != nil {
		return fmt.Errorf("mix: %w", err)
	}
	for _, e := range c.Mix {
		if !c.BlockingEndpoint && (e.Target == server.BlockPath || strings.HasPrefix(e.Target, server.BlockPath+"?")) {
			return fmt.Errorf("mix entry %s: the server serves %s only with the blocking endpoint (--blocking-endpoint)", e, server.BlockPath)
		}
	}
	return nil
}

// MixConnections is c's connection count rounded up to a multiple of its
// mix's cycle (load.MixCycle; unchanged without a mix): at a fixed rate
// each connection then sends one target only (load.Options.Mix), so that
// a fast request never waits in the generator behind a blocked answer on
// its connection, which a shared connection would add to its corrected
// latency. A rate-scaled count (a connection per 20 holds of the rate,
// 1,120 at 2,800 req/s) was tried first: 1,000 connections alone raised
// net/http's /fruits p99 from 7 to 27 ms on this 2-CPU machine.
func (c Config) MixConnections() int {
	if len(c.Mix) == 0 {
		return c.Connections
	}
	n := load.MixCycle(c.Mix)
	return (c.Connections + n - 1) / n * n
}

// loadPath is the request target of the load generator's URL: Target or
// the app's DefaultTarget, or with a mix the host alone (the mix has the
// targets).
func (c Config) loadPath() string {
	if len(c.Mix) > 0 {
		return "/"
	}
	if c.Target != "" {
		return c.Target
	}
	return DefaultTarget(server.App(c.App))
}

// overlap reports the first two of the load, server and mock CPU sets
// that share a CPU (--strict refuses them).
func (c Config) overlap() error {
	sets := []struct {
		name string
		set  cpu.Set
	}{{"load", c.LoadCPUs}, {"server", c.ServerCPUs}, {"mock", c.MockCPUs}}
	for i := range sets {
		for j := i + 1; j < len(sets); j++ {
			if both := sets[i].set.Intersect(sets[j].set); len(both) > 0 {
				return fmt.Errorf("--strict: %s and %s CPU sets overlap on %s", sets[i].name, sets[j].name, both)
			}
		}
	}
	return nil
}

// Variant is a server design in the compare matrix.
type Variant struct {
	Name string
	// About says what the variant changes, for help.
	About string
	// apply sets the variant's server options on a configuration.
	apply func(c *Config, l Layout)
	// needs says what the layout must offer, and fits whether it does
	// (nil: any layout).
	needs string
	fits  func(l Layout) bool
}

// Variants are the compare matrix's server designs, in report order: one
// carrier+NAME for each adaptive strategy of carrier/wait's registry sits
// after carrier+pinning.
var Variants = slices.Concat([]Variant{
	{Name: "nethttp", About: "net/http on Go's work-stealing scheduler (the study's baseline)", apply: func(c *Config, _ Layout) { c.Mode = ModeNetHTTP }},
	{Name: "handoff", About: "carriers do the I/O, a goroutine per request", apply: func(c *Config, _ Layout) { c.Mode = ModeHandoff }},
	// The study's nethttp-carrier waits as carrier does (blocking in its
	// poller, not serve's default for the mode, which parks), so that the
	// report's gain split compares one scheduler under two code paths.
	{Name: "nethttp-carrier", About: "nethttp's handler and client code on carriers", apply: func(c *Config, _ Layout) { c.Mode, c.ParkIdle = ModeNetHTTPCarrier, cliflag.SwitchOff }},
	{Name: "carrier", About: "everything on carriers, unpinned, no stealing", apply: func(c *Config, _ Layout) { c.Mode = ModeCarrier }},
	{Name: "carrier+ws", About: "work stealing", apply: func(c *Config, _ Layout) { c.Mode, c.WorkStealing = ModeCarrier, true }},
	{Name: "carrier+pinning", About: "carrier i pinned to the i-th server CPU", apply: func(c *Config, _ Layout) { c.Mode, c.Topology = ModeCarrier, "cpu" },
		needs: "a server CPU per carrier", fits: func(l Layout) bool { return l.Carriers <= len(l.Server) }},
	{Name: "carrier+park", About: "idle carriers park in Go's netpoller", apply: func(c *Config, _ Layout) { c.Mode, c.ParkIdle = ModeCarrier, cliflag.SwitchOn }},
}, waitVariants(), []Variant{
	{Name: "carrier+float", About: "floating carriers, with stealing of started tasks", apply: func(c *Config, _ Layout) {
		c.Mode, c.WorkStealing, c.Float = ModeCarrier, true, true
	}, needs: "two server carriers or more (work to move between them)", fits: func(l Layout) bool { return l.Carriers >= 2 }},
	{Name: "carrier+uring", About: "the io_uring poller", apply: func(c *Config, _ Layout) {
		c.Mode, c.Poller = ModeCarrier, carrier.PollerURing
	}, needs: "io_uring that the kernel lets this process use (spindle probe says why not)", fits: func(Layout) bool {
		return carrier.CheckPoller(carrier.PollerURing) == nil
	}},
	{Name: "carrier+n+1", About: "one more server CPU for all but the carriers", apply: func(c *Config, l Layout) {
		c.Mode, c.NPlus1 = ModeCarrier, true
		c.ServerCPUs = append(append(cpu.Set(nil), l.Server...), l.Extra...)
	}, needs: "a spare CPU", fits: func(l Layout) bool { return len(l.Extra) > 0 }},
})

// Needs says what the layout must offer the variant ("" for nothing): a
// variant whose need the machine lacks is left out of a plan, or refused
// when named.
func (v Variant) Needs() string { return v.needs }

// waitVariants are carrier+NAME for each adaptive wait strategy (the fixed
// ones are the carriers' --wait choice, not a design the matrix compares).
func waitVariants() []Variant {
	var out []Variant
	for _, name := range wait.NamesWhere(func(s wait.Spec) bool { return s.Adaptive }) {
		out = append(out, Variant{Name: ModeCarrier + "+" + name, About: "the " + name + " idle wait (--wait " + name + ")", apply: func(c *Config, _ Layout) {
			c.Mode, c.Wait = ModeCarrier, name
		}})
	}
	return out
}

// Phase is one load level of a compare plan.
type Phase struct {
	// Name is report.PhaseMax (max throughput), report.PhaseFixed (the
	// study's fixed rate) or a point of a latency–load sweep:
	// report.SweepPhase ("sweep-PCT", PCT% of the reference max) or
	// report.RatePhase ("rate-N", N req/s, from --rates).
	Name string `json:"name"`
	// Share, when positive, sets the phase's rate after the max phase:
	// Share of the reference max throughput, the lowest configuration's
	// median (ReferenceMax). The "fixed" phase's is FixedRateShare.
	Share float64 `json:"share,omitempty"`
	// Configs run in this order in every round.
	Configs []Config `json:"configs"`
}

// Plan is a whole comparison: phases of configurations run interleaved
// over rounds. The fixed-rate phase's rate is filled in after the
// max-throughput phase (RateFor).
type Plan struct {
	// Description is the layout and settings in one paragraph, for reports.
	Description string  `json:"description,omitempty"`
	Layout      Layout  `json:"layout"`
	Rounds      int     `json:"rounds"`
	Phases      []Phase `json:"phases"`
	// Reference is the configuration whose median max throughput the
	// phases' shares apply to ("" for the lowest configuration's:
	// ReferenceMax).
	Reference string `json:"reference,omitempty"`
	// Ran says, once RunPlan has run the plan, what each phase ran: its
	// extra rounds and valid runs per configuration (RoundsNote).
	Ran []Rounds `json:"ran,omitempty"`
	// Idle is how the server's machine idles a CPU (observe.Idle's
	// String): on a virtual machine what a wake-up of an idle carrier
	// costs, which moves every figure at a fixed rate. "" where the
	// server runs on another host.
	Idle string `json:"idle,omitempty"`
}

// Preamble is the plan's paragraphs for a report: its description, what
// the rounds ran (RoundsNote) and how the machine idles.
func (p Plan) Preamble() string {
	parts := []string{p.Description}
	if note := p.RoundsNote(); note != "" {
		parts = append(parts, note)
	}
	if p.Idle != "" {
		parts = append(parts, "Idle CPUs (spindle probe's \"idle\"): "+p.Idle+".")
	}
	return strings.Join(parts, "\n\n")
}

// CompareOptions selects a compare plan.
type CompareOptions struct {
	// CPUs are the CPUs available (cpu.Allowed()); Topology, when set,
	// their SMT siblings, which the layout respects (LayoutFor).
	CPUs     cpu.Set
	Topology *cpu.Topology
	// Exclusive drops the load threads that share a CPU where the load
	// generator has one of its own (Layout.Exclusive; --strict).
	Exclusive bool
	// Full uses the study's durations instead of the quick ones.
	Full bool
	// IOBound selects the I/O-bound preset (think 30 ms, 10,000
	// connections, 8 carriers).
	IOBound bool
	// Rounds; 0 means DefaultRounds.
	Rounds int
	// Only keeps the named variants (all when empty).
	Only []string
	// Reference names the configuration whose max throughput the fixed
	// rate and the sweep's shares are of (one of those that run); "" for
	// the lowest configuration's.
	Reference string
	// Warmup and Duration override the preset's when positive; NoWarmup
	// runs no warm-up at all (Warmup is then ignored).
	Warmup, Duration time.Duration
	NoWarmup         bool
	// Connections overrides the preset's load generator connections when
	// positive.
	Connections int
	// Sweep adds a latency–load sweep: every configuration at each share
	// of the reference max in SweepShares, interleaved over rounds.
	Sweep bool
	// Rates adds a sweep at these fixed rates, req/s.
	Rates []int
	// Blocking, when not "", sends BlockingShare percent of every run's
	// requests to the server's blocking endpoint (server.BlockTarget of
	// this kind, for BlockingHold) and the rest to /fruits.
	Blocking      string
	BlockingShare int
	// App, Target and DBPool are Config's: with the tfb app the variants
	// of TFBVariants run (those of Only, of server.TFBModes, where given),
	// against the database the caller starts (StartDB).
	App    string
	Target string
	DBPool int
}

// TFBVariants are the variants a tfb plan runs unless Only names others
// (of server.TFBModes): the one net/http handler under net/http's server
// and on carriers, and the carrier mode's native answers.
var TFBVariants = []string{"nethttp", "nethttp-carrier", "carrier"}

// The blocking mix of "spindle compare --blocking": the 5% of
// requests blocking 20 ms the Go way.
const (
	DefaultBlockingShare = 5
	BlockingHold         = 20 * time.Millisecond
)

// blockingMix is the request mix of CompareOptions.Blocking.
func blockingMix(kind string, share int) (load.Mix, error) {
	if !slices.Contains(server.BlockKinds, kind) {
		return nil, fmt.Errorf("blocking kind %q: want %s", kind, strings.Join(server.BlockKinds, ", "))
	}
	if share < 1 || share > 50 {
		return nil, fmt.Errorf("blocking share %d%%: want 1 to 50", share)
	}
	return load.Mix{{Weight: 100 - share, Target: "/fruits"}, {Weight: share, Target: server.BlockTarget(kind, BlockingHold)}}, nil
}

// SweepShares are the offered rates of a sweep as shares of the reference
// max throughput: from light load to past saturation (110%), denser near
// the knee of the curve. The 70% point is the "fixed" phase itself.
var SweepShares = []float64{0.10, 0.25, 0.50, FixedRateShare, 0.85, 1.00, 1.10}

// ComparePlan builds the compare matrix: every variant the layout allows,
// first at max throughput, then at a fixed rate (RateFor).
func ComparePlan(o CompareOptions) (Plan, error) {
	layoutFor := LayoutFor
	if o.IOBound {
		layoutFor = IOLayoutFor
	}
	l, err := layoutFor(o.CPUs, o.Topology)
	if err != nil {
		return Plan{}, err
	}
	if o.Exclusive {
		l = l.Exclusive()
	}
	base := Config{
		Threads: l.Carriers, Connections: DefaultConnections, LoadThreads: l.LoadThreads,
		LoadCPUs: l.Load, ServerCPUs: l.Server, MockCPUs: l.Mock,
		MockThreads: l.MockThreads, MockThinkTime: DefaultThinkTime,
		Topology: DefaultTopology, Wait: DefaultWait,
		Warmup: QuickWarmup, Duration: QuickDuration,
		PerfStat: true, Pidstat: true,
		ServerPort: DefaultServerPort, MockPort: DefaultMockPort, AdminPort: DefaultAdminPort,
	}
	if o.Full {
		base.Warmup, base.Duration = DefaultWarmup, DefaultDuration
	}
	if o.IOBound {
		base.MockThinkTime, base.Connections = IOThinkTime, IOConnections
		if !o.Full {
			base.Warmup, base.Duration = IOWarmup, IODuration
		}
	}
	if o.Connections > 0 {
		base.Connections = o.Connections
	}
	if o.Blocking != "" {
		share := o.BlockingShare
		if share == 0 {
			share = DefaultBlockingShare
		}
		if base.Mix, err = blockingMix(o.Blocking, share); err != nil {
			return Plan{}, err
		}
		base.BlockingEndpoint = true
		base.Connections = base.MixConnections()
	}
	base.App, base.Target, base.DBPool = o.App, o.Target, o.DBPool
	switch {
	case o.NoWarmup:
		base.Warmup = 0
	case o.Warmup > 0:
		base.Warmup = o.Warmup
	}
	if o.Duration > 0 {
		base.Duration = o.Duration
	}
	want := map[string]bool{}
	for _, n := range o.Only {
		n = strings.TrimSpace(n)
		if !slices.ContainsFunc(Variants, func(v Variant) bool { return v.Name == n }) {
			return Plan{}, fmt.Errorf("unknown configuration %q (variants: %s)", n, variantNames())
		}
		want[n] = true
	}
	var configs []Config
	for _, v := range Variants {
		if len(want) > 0 && !want[v.Name] || len(want) == 0 && o.App == string(server.AppTFB) && !slices.Contains(TFBVariants, v.Name) {
			continue
		}
		if v.fits != nil && !v.fits(l) {
			if want[v.Name] {
				return Plan{}, fmt.Errorf("%s needs %s, which this machine lacks (server CPUs %s)", v.Name, v.needs, l.Server)
			}
			continue
		}
		c := base
		c.Name = v.Name
		v.apply(&c, l)
		if err := server.CheckApp(server.App(o.App), server.Mode(c.Mode)); err != nil {
			if want[v.Name] {
				return Plan{}, fmt.Errorf("%s: %w", v.Name, err)
			}
			continue
		}
		configs = append(configs, c)
	}
	if len(configs) == 0 {
		return Plan{}, fmt.Errorf("no configuration selected (variants: %s)", variantNames())
	}
	if o.Reference != "" && !slices.ContainsFunc(configs, func(c Config) bool { return c.Name == o.Reference }) {
		return Plan{}, fmt.Errorf("reference %q is not among the configurations that run (%s)", o.Reference, configNames(configs))
	}
	rounds := o.Rounds
	if rounds <= 0 {
		rounds = DefaultRounds
	}
	phases := []Phase{{Name: report.PhaseMax, Configs: configs}}
	for _, sh := range SweepShares {
		if sh != FixedRateShare && !o.Sweep {
			continue
		}
		name := report.SweepPhase(sh)
		if sh == FixedRateShare {
			name = report.PhaseFixed
		}
		phases = append(phases, Phase{Name: name, Share: sh, Configs: slices.Clone(configs)})
	}
	for _, rate := range o.Rates {
		if rate <= 0 {
			return Plan{}, fmt.Errorf("rate %d: must be positive", rate)
		}
		cs := slices.Clone(configs)
		for i := range cs {
			cs[i].Rate = rate
		}
		phases = append(phases, Phase{Name: report.RatePhase(rate), Configs: cs})
	}
	return Plan{Layout: l, Rounds: rounds, Description: describe(l, base, rounds, o.Reference), Phases: phases, Reference: o.Reference}, nil
}

// configNames lists the configurations' names, comma-separated.
func configNames(cs []Config) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// describe is a plan's layout and settings in one paragraph; ref is the
// configuration whose max throughput the fixed rate is a share of ("" for
// the lowest).
func describe(l Layout, c Config, rounds int, ref string) string {
	s := fmt.Sprintf("Layout: server CPUs %s (%s), load CPUs %s (%s), mock CPUs %s (%s)",
		l.Server, report.Count(l.Carriers, "carrier", "carriers"), l.Load, report.Count(l.LoadThreads, "thread", "threads"),
		l.Mock, report.Count(l.MockThreads, "thread", "threads"))
	if len(l.Extra) > 0 {
		s += fmt.Sprintf(", N+1 adds CPU %s", l.Extra)
	}
	of := "the lowest configuration's"
	if ref != "" {
		of = ref + "'s"
	}
	return fmt.Sprintf("%s; %s. Think time %v, %s, warm-up %v, window %v, %s; "+
		"the fixed rate is %.0f%% of %s max throughput.",
		s, l.Note, c.MockThinkTime, report.Count(c.Connections, "connection", "connections"), c.Warmup, c.Duration,
		report.Count(rounds, "round", "rounds"), 100*FixedRateShare, of) + describeMix(c) + describeApp(c)
}

// describeApp is the app's sentence of describe ("" for the study's).
func describeApp(c Config) string {
	if !c.TFB() {
		return ""
	}
	s := fmt.Sprintf(" App %s: TechEmpower's test types on a PostgreSQL the runner starts on the mock's CPUs (no mock, no think time)", c.App)
	if len(c.Mix) == 0 {
		s += ", requests to " + c.loadPath()
	}
	return s + "."
}

// describeMix is the request mix's sentence of describe ("" without one).
func describeMix(c Config) string {
	if len(c.Mix) == 0 {
		return ""
	}
	total := load.MixCycle(c.Mix)
	parts := make([]string, len(c.Mix))
	for i, e := range c.Mix {
		parts[i] = fmt.Sprintf("%.4g%% %s", 100*float64(e.Weight)/float64(total), e.Target)
	}
	s := " Requests: " + strings.Join(parts, ", ") + "."
	if c.BlockingEndpoint {
		s += " At a fixed rate each connection sends one target only, so that a fast request never waits for a blocked one on its connection."
	}
	return s
}

// PlanFile is where RunPlan records the plan, fixed rate included.
const PlanFile = "plan.json"

func variantNames() string { return strings.Join(VariantNames(), ", ") }

// VariantNames are the names of Variants, in report order: what
// CompareOptions.Only (compare --only) accepts.
func VariantNames() []string {
	names := make([]string, len(Variants))
	for i, v := range Variants {
		names[i] = v.Name
	}
	return names
}

// RateFor returns the fixed-phase rate: FixedRateShare of the lowest of the
// configurations' max throughputs (each the median over rounds), in whole
// requests per second; 0 when none is positive.
func RateFor(maxThroughput map[string]float64) int {
	return int(ReferenceMax(maxThroughput) * FixedRateShare)
}

// ReferenceMax is the reference for rates given as shares: the lowest of
// the configurations' max throughputs, req/s; 0 when none is positive.
func ReferenceMax(maxThroughput map[string]float64) float64 {
	lowest := 0.0
	for _, v := range maxThroughput {
		if v > 0 && (lowest == 0 || v < lowest) {
			lowest = v
		}
	}
	return lowest
}

// Runs returns the number of runs of the plan.
func (p Plan) Runs() int {
	n := 0
	for _, ph := range p.Phases {
		n += len(ph.Configs) * p.Rounds
	}
	return n
}

// QuickBudget and BudgetFactor set a plan's default time budget (Budget).
const (
	QuickBudget  = 5 * time.Minute
	BudgetFactor = 1.25
)

// Budget is the plan's default time budget for RunPlanOptions.Budget:
// QuickBudget when the plan's estimate (Estimate) is under it, as the
// default comparison's is (it promises under 5 minutes on 2 CPUs), else
// BudgetFactor times the estimate.
func (p Plan) Budget(overhead time.Duration) time.Duration {
	if e := p.Estimate(overhead); e >= QuickBudget {
		return time.Duration(BudgetFactor * float64(e))
	}
	return QuickBudget
}

// Estimate is the plan's expected wall time given the per-run overhead
// (starting, health checks, stopping) on top of warm-up and window.
func (p Plan) Estimate(overhead time.Duration) time.Duration {
	var d time.Duration
	for _, ph := range p.Phases {
		for _, c := range ph.Configs {
			d += time.Duration(p.Rounds) * (c.Warmup + c.Duration + overhead)
		}
	}
	return d
}
