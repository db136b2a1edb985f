package bench

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/report"
)

func cpus(n int) cpu.Set {
	s := make(cpu.Set, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func mustList(t *testing.T, s string) cpu.Set {
	t.Helper()
	set, err := cpu.ParseList(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestLayoutFor(t *testing.T) {
	tests := []struct {
		cpus                      cpu.Set
		load, server, mock, extra string
		carriers                  int
	}{
		{cpus(1), "0", "0", "0", "", 1},
		{cpus(2), "1", "0", "1", "", 1},
		{cpus(3), "0", "1", "2", "", 1},
		// 4-7: a second load thread, on the mock's CPU below 6.
		{cpus(4), "0,3", "1-2", "3", "", 2},
		{cpus(5), "0,3", "1-2", "3", "4", 2},
		{cpus(6), "0,5", "1-2", "3", "4", 2},
		{cpus(7), "0,5-6", "1-2", "3", "4", 2},
		{cpus(8), "0-1,4", "2-3", "5-6", "7", 2},
		// The study's 16-CPU layout: load 0,1,4,5; server 2,3; mock 6,7; N+1 adds 8.
		{cpus(16), "0-1,4-5", "2-3", "6-7", "8", 2},
		{cpus(96), "0-1,4-5", "2-3", "6-7", "8", 2},
		// Positions index the allowed CPUs, not CPU numbers.
		{cpu.Set{4, 5}, "5", "4", "5", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.cpus.String(), func(t *testing.T) {
			l, err := LayoutFor(tt.cpus, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name string
				got  cpu.Set
				want string
			}{{"load", l.Load, tt.load}, {"server", l.Server, tt.server}, {"mock", l.Mock, tt.mock}, {"extra", l.Extra, tt.extra}} {
				if c.got.String() != c.want {
					t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
				}
			}
			if l.Carriers != tt.carriers || l.LoadThreads != len(l.Load) || l.MockThreads != len(l.Mock) {
				t.Errorf("carriers %d load threads %d mock threads %d", l.Carriers, l.LoadThreads, l.MockThreads)
			}
			if l.Note == "" {
				t.Error("no note")
			}
		})
	}
	if _, err := LayoutFor(nil, nil); err == nil {
		t.Error("LayoutFor(no CPUs) succeeded")
	}
}

// TestLayoutForSMT: with SMT siblings the server takes whole cores, and
// the other roles the CPUs left in order; the counts stay those of
// LayoutFor without a topology.
func TestLayoutForSMT(t *testing.T) {
	topo := func(cores, threads int) *cpu.Topology {
		tp, err := cpu.Layout{Packages: 1, DiesPerPackage: 1, CoresPerDie: cores, Threads: threads}.Topology()
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	tests := []struct {
		name                      string
		cpus                      cpu.Set
		topo                      *cpu.Topology
		load, server, mock, extra string
		smt                       bool
	}{
		// 2 cores x 2 threads (siblings 0,2 and 1,3): the server gets core 1 whole.
		{"4 vCPUs on 2 cores", cpus(4), topo(2, 2), "0,2", "1,3", "2", "", true},
		// 3 cores x 2: server core 1 (1,4); load 0 and 5, mock 2, extra 3.
		{"6 vCPUs on 3 cores", cpus(6), topo(3, 2), "0,5", "1,4", "2", "3", true},
		// 8 cores x 2 (siblings n, n+8): the study's positions, the server on core 2 (2,10).
		{"16 vCPUs on 8 cores", cpus(16), topo(8, 2), "0-1,3-4", "2,10", "5-6", "7", true},
		// 2 cores x 2 with one server CPU: the server is alone on its core's
		// CPU, the sibling goes to the other roles.
		{"2 of 4 vCPUs allowed, siblings", cpu.Set{1, 3}, topo(2, 2), "3", "1", "3", "", false},
		// No SMT: positional, as without a topology.
		{"4 CPUs no SMT", cpus(4), topo(4, 1), "0,3", "1-2", "3", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := LayoutFor(tt.cpus, tt.topo)
			if err != nil {
				t.Fatal(err)
			}
			flat, _ := LayoutFor(tt.cpus, nil)
			for _, c := range []struct {
				name      string
				got, flat cpu.Set
				want      string
			}{{"load", l.Load, flat.Load, tt.load}, {"server", l.Server, flat.Server, tt.server}, {"mock", l.Mock, flat.Mock, tt.mock}, {"extra", l.Extra, flat.Extra, tt.extra}} {
				if c.got.String() != c.want {
					t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
				}
				if len(c.got) != len(c.flat) {
					t.Errorf("%s has %d CPUs, %d without the topology", c.name, len(c.got), len(c.flat))
				}
			}
			if got := strings.Contains(l.Note, "SMT: the server takes whole cores"); got != tt.smt {
				t.Errorf("note %q: says SMT %v, want %v", l.Note, got, tt.smt)
			}
			for _, s := range l.Server {
				for _, sib := range tt.topo.SiblingsOf(s) {
					if !slices.Contains(l.Server, sib) && (slices.Contains(l.Load, sib) || slices.Contains(l.Mock, sib)) && tt.smt {
						t.Errorf("server CPU %d's sibling %d runs load or mock", s, sib)
					}
				}
			}
		})
	}
}

// TestLayoutExclusive: --strict drops the load thread that shares the
// mock's CPU where the load generator has one of its own, and leaves a
// layout that must share as it is.
func TestLayoutExclusive(t *testing.T) {
	for _, tt := range []struct {
		n          int
		load, note string
	}{
		{4, "0", "4 CPUs: load 1, server 2, mock 1; no CPU for N+1; --strict: no load thread on the mock's CPU"},
		{5, "0", "5 CPUs: load 1, server 2, mock 1, N+1 extra 1; --strict: no load thread on the mock's CPU"},
		{6, "0,5", "6 CPUs: load 2, server 2, mock 1, N+1 extra 1"},
		{2, "1", "2 CPUs: server on one, load and mock share the other"},
	} {
		l, err := LayoutFor(cpus(tt.n), nil)
		if err != nil {
			t.Fatal(err)
		}
		x := l.Exclusive()
		if x.Load.String() != tt.load || x.LoadThreads != len(x.Load) || !strings.HasPrefix(x.Note, tt.note) {
			t.Errorf("%d CPUs: exclusive load %s (%d threads), note %q; want %s, %q", tt.n, x.Load, x.LoadThreads, x.Note, tt.load, tt.note)
		}
		if err := (Config{LoadCPUs: x.Load, ServerCPUs: x.Server, MockCPUs: x.Mock}).overlap(); (err == nil) != (tt.n > 2) {
			t.Errorf("%d CPUs: exclusive layout overlaps: %v", tt.n, err)
		}
	}
}

func TestIOLayoutFor(t *testing.T) {
	l, err := IOLayoutFor(cpus(16), nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Load.String() != "0-3" || l.Mock.String() != "4-7" || l.Server.String() != "8-15" || l.Carriers != 8 {
		t.Errorf("16-CPU I/O layout = %+v", l)
	}
	l, err = IOLayoutFor(cpus(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Carriers != IOCarriers || l.Server.String() != "0" || len(l.Extra) != 0 {
		t.Errorf("2-CPU I/O layout = %+v", l)
	}
}

func names(cs []Config) []string {
	var n []string
	for _, c := range cs {
		n = append(n, c.Name)
	}
	return n
}

func TestComparePlan(t *testing.T) {
	p, err := ComparePlan(CompareOptions{CPUs: cpus(2)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"nethttp", "handoff", "nethttp-carrier", "carrier", "carrier+ws", "carrier+pinning", "carrier+park", "carrier+adaptive"}
	if carrier.CheckPoller(carrier.PollerURing) == nil { // where the kernel lets this process use io_uring
		want = append(want, "carrier+uring")
	}
	if len(p.Phases) != 2 || p.Phases[0].Name != "max" || p.Phases[1].Name != "fixed" {
		t.Fatalf("phases = %+v", p.Phases)
	}
	if got := names(p.Phases[0].Configs); !slices.Equal(got, want) {
		t.Errorf("2-CPU variants = %v, want %v (no N+1)", got, want)
	}
	for _, c := range p.Phases[0].Configs {
		if err := c.Validate(false); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		if c.Rate != 0 || c.MockThinkTime != time.Millisecond || c.Connections != 100 {
			t.Errorf("%s: rate %d think %v connections %d", c.Name, c.Rate, c.MockThinkTime, c.Connections)
		}
	}
	// The default comparison fits in five minutes on this class of machine,
	// with 1.5 s per run to start, check health and stop.
	if est := p.Estimate(1500 * time.Millisecond); est >= 5*time.Minute {
		t.Errorf("default compare on 2 CPUs estimated at %v, want < 5m", est)
	}
	if p.Runs() != len(want)*2*DefaultRounds || p.Rounds != DefaultRounds {
		t.Errorf("runs = %d rounds = %d", p.Runs(), p.Rounds)
	}

	p16, err := ComparePlan(CompareOptions{CPUs: cpus(16), Full: true})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Config{}
	for _, c := range p16.Phases[0].Configs {
		byName[c.Name] = c
	}
	np1, ok := byName["carrier+n+1"]
	if !ok || np1.ServerCPUs.String() != "2-3,8" || !np1.NPlus1 || np1.Threads != 2 {
		t.Errorf("16-CPU N+1 = %+v", np1)
	}
	if c := byName["carrier+pinning"]; c.Topology != "cpu" || c.Warmup != DefaultWarmup || c.Duration != DefaultDuration {
		t.Errorf("16-CPU pinning with --full = %+v", c)
	}
	if c := byName["carrier+ws"]; !c.WorkStealing {
		t.Error("carrier+ws without work stealing")
	}
	if c := byName["carrier+adaptive"]; c.Wait != "adaptive" {
		t.Error("carrier+adaptive without the adaptive wait")
	}
	fl, ok := byName["carrier+float"]
	if !ok || !fl.Float || !fl.WorkStealing || fl.Threads != 2 || fl.Validate(true) != nil {
		t.Errorf("16-CPU carrier+float = %+v", fl)
	}
	// A floating server takes no --cpuset of its own: it runs on the set it is started on.
	if a := strings.Join(ServerArgs(fl, nil), " "); !strings.Contains(a, "--float") || !strings.Contains(a, "--ws") || strings.Contains(a, "--cpuset") {
		t.Errorf("carrier+float server args: %s", a)
	}
	if a := strings.Join(ServerArgs(byName["carrier"], nil), " "); !strings.Contains(a, "--cpuset 2-3") || strings.Contains(a, "--float") {
		t.Errorf("carrier server args: %s", a)
	}
	ur, ok := byName["carrier+uring"]
	if uerr := carrier.CheckPoller(carrier.PollerURing); (uerr == nil) != ok {
		t.Errorf("carrier+uring in the plan: %v, io_uring here: %v", ok, uerr)
	}
	if a := strings.Join(ServerArgs(ur, nil), " "); ok && (!strings.Contains(a, "--poller io_uring") || ur.Mode != ModeCarrier) {
		t.Errorf("carrier+uring server args: %s", a)
	}
	if a := strings.Join(ServerArgs(byName["carrier"], nil), " "); strings.Contains(a, "--poller") || strings.Contains(a, "--backlog-poll-gap") {
		t.Errorf("carrier server args name a poller or a poll gap: %s", a)
	}
	study := byName["carrier"]
	study.BacklogPollGap = 1
	if a := strings.Join(ServerArgs(study, nil), " "); !strings.Contains(a, "--backlog-poll-gap 1") {
		t.Errorf("carrier server args with BacklogPollGap 1: %s", a)
	}
	if _, err := ComparePlan(CompareOptions{CPUs: cpus(2), Only: []string{"carrier+float"}}); err == nil || !strings.Contains(err.Error(), "two server carriers") {
		t.Errorf("carrier+float asked for with one server CPU: %v", err)
	}
	if err := np1.Validate(true); err != nil {
		t.Errorf("study layout overlaps: %v", err)
	}

	io, err := ComparePlan(CompareOptions{CPUs: cpus(16), IOBound: true, Only: []string{"nethttp", "carrier"}, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := io.Phases[0].Configs[1]
	if c.MockThinkTime != 30*time.Millisecond || c.Connections != 10000 || c.Threads != 8 || io.Runs() != 4 ||
		c.Warmup != IOWarmup || c.Duration != IODuration {
		t.Errorf("I/O-bound preset = %+v, runs %d", c, io.Runs())
	}
	for _, only := range [][]string{{"nope"}, {"carrier", "carier"}} { // one typo among good names too
		if _, err := ComparePlan(CompareOptions{CPUs: cpus(2), Only: only}); err == nil || !strings.Contains(err.Error(), "unknown configuration") {
			t.Errorf("--only %v: %v, want unknown configuration", only, err)
		}
	}
}

func TestRateFor(t *testing.T) {
	tests := []struct {
		max  map[string]float64
		want int
	}{
		{map[string]float64{"a": 72000, "b": 61000}, 42700},
		{map[string]float64{"a": 0, "b": 1000}, 700},
		{map[string]float64{}, 0},
	}
	for _, tt := range tests {
		if got := RateFor(tt.max); got != tt.want {
			t.Errorf("RateFor(%v) = %d, want %d", tt.max, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	good := Config{Mode: ModeCarrier, Topology: "off", Wait: DefaultWait, Threads: 2, Connections: 10, LoadThreads: 2, MockThreads: 1,
		Duration: time.Second, LoadCPUs: mustList(t, "0"), ServerCPUs: mustList(t, "1"), MockCPUs: mustList(t, "0")}
	if err := good.Validate(false); err != nil {
		t.Fatal(err)
	}
	if err := good.Validate(true); err == nil {
		t.Error("--strict accepted load and mock both on CPU 0")
	}
	adaptive := good
	adaptive.Wait, adaptive.WaitB = "adaptive", 200*time.Microsecond
	if err := adaptive.Validate(false); err != nil {
		t.Errorf("adaptive with a fixed B refused: %v", err)
	}
	bad := []func(c *Config){
		func(c *Config) { c.Mode = "fjp" },
		func(c *Config) { c.Threads = 0 },
		func(c *Config) { c.Rate = -1 },
		func(c *Config) { c.Connections = 1 },
		func(c *Config) { c.Duration = 0 },
		func(c *Config) { c.Topology = "numa" },
		func(c *Config) { c.Float, c.Topology = true, "cpu" },
		func(c *Config) { c.Float, c.NPlus1 = true, true },
		func(c *Config) { c.Wait = "spinny" },
		func(c *Config) { c.WaitB = time.Millisecond },                      // block weighs nothing against B
		func(c *Config) { c.Wait, c.WaitB = "adaptive", -time.Microsecond }, // negative
		func(c *Config) { c.Profile = "heap" },
		func(c *Config) { c.Mix = load.Mix{{Weight: 0, Target: "/fruits"}} },
		func(c *Config) {
			c.Mix = load.Mix{{Weight: 95, Target: "/fruits"}, {Weight: 5, Target: "/block?kind=sleep"}}
		}, // no blocking endpoint
		func(c *Config) { c.Mix, c.BlockingEndpoint = load.Mix{{Weight: 1, Target: "fruits"}}, true },
	}
	for i, f := range bad {
		c := good
		f(&c)
		if err := c.Validate(false); err == nil {
			t.Errorf("bad config %d accepted: %+v", i, c)
		}
	}
}

// TestComparePlanBlocking: --blocking gives every configuration of every
// phase the blocking mix and endpoint, and refuses an unknown kind or a
// share out of range.
func TestComparePlanBlocking(t *testing.T) {
	cpus := mustList(t, "0-3")
	p, err := ComparePlan(CompareOptions{CPUs: cpus, Blocking: "singleflight"})
	if err != nil {
		t.Fatal(err)
	}
	want := load.Mix{{Weight: 95, Target: "/fruits"}, {Weight: 5, Target: "/block?kind=singleflight&d=20ms"}}
	for _, ph := range p.Phases {
		for _, c := range ph.Configs {
			if !c.BlockingEndpoint || !reflect.DeepEqual(c.Mix, want) {
				t.Errorf("%s/%s: blocking endpoint %v, mix %v; want true, %v", ph.Name, c.Name, c.BlockingEndpoint, c.Mix, want)
			}
			if err := c.Validate(false); err != nil {
				t.Errorf("%s/%s: %v", ph.Name, c.Name, err)
			}
		}
	}
	if !strings.Contains(p.Description, "Requests: 95% /fruits, 5% /block?kind=singleflight&d=20ms.") {
		t.Errorf("description does not say the mix: %s", p.Description)
	}
	for _, o := range []CompareOptions{{CPUs: cpus, Blocking: "nap"}, {CPUs: cpus, Blocking: "sleep", BlockingShare: 51}} {
		if _, err := ComparePlan(o); err == nil {
			t.Errorf("ComparePlan(%+v) accepted", o)
		}
	}
	if p, err := ComparePlan(CompareOptions{CPUs: cpus}); err != nil || p.Phases[0].Configs[0].Mix != nil || p.Phases[0].Configs[0].BlockingEndpoint {
		t.Errorf("without --blocking: %v, mix %v", err, p.Phases[0].Configs[0].Mix)
	}
}

func TestComparePlanSweep(t *testing.T) {
	p, err := ComparePlan(CompareOptions{CPUs: cpus(2), Sweep: true, Rates: []int{500, 2000}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ph := range p.Phases {
		got = append(got, fmt.Sprintf("%s:%g:%d", ph.Name, ph.Share, ph.Configs[0].Rate))
	}
	want := []string{"max:0:0", "sweep-010:0.1:0", "sweep-025:0.25:0", "sweep-050:0.5:0", "fixed:0.7:0",
		"sweep-085:0.85:0", "sweep-100:1:0", "sweep-110:1.1:0", "rate-500:0:500", "rate-2000:0:2000"}
	if !slices.Equal(got, want) {
		t.Errorf("sweep phases %v, want %v", got, want)
	}
	// Each phase has its own configurations: setting one phase's rate
	// must not set another's.
	p.Phases[1].Configs[0].Rate = 7
	if p.Phases[2].Configs[0].Rate != 0 || p.Phases[0].Configs[0].Rate != 0 {
		t.Error("sweep phases share their configurations")
	}
	// The sweep has its own estimate: every configuration (6, or 7 where
	// the kernel allows io_uring) x 10 phases x 3 rounds of 5.5 s.
	n := time.Duration(len(p.Phases[0].Configs))
	if est := p.Estimate(1500 * time.Millisecond); est != n*10*3*5500*time.Millisecond {
		t.Errorf("sweep estimate %v for %d configurations", est, n)
	}
	if _, err := ComparePlan(CompareOptions{CPUs: cpus(2), Rates: []int{0}}); err == nil {
		t.Error("rate 0 accepted")
	}
}

func TestReference(t *testing.T) {
	all := map[string][]float64{"nethttp": {1000, 3000, 900}, "carrier": {5000, 5200}, "handoff": {800}}
	tests := []struct {
		name string
		ref  string
		pass map[string][]float64
		want float64
	}{
		// nethttp's runs at 1000 and 900 failed a check: its median of
		// the one that passed is the reference.
		{"checked runs", "", map[string][]float64{"nethttp": {3000}, "carrier": {5000, 5200}}, 3000},
		{"none passed: every complete run (handoff's is the lowest)", "", nil, 800},
		// A named reference: its own median, not the lowest.
		{"named", "carrier", map[string][]float64{"nethttp": {3000}, "carrier": {5000, 5200}}, 5100},
		{"named, none of its runs passed", "handoff", map[string][]float64{"nethttp": {3000}}, 800},
		{"named, no run", "carrier+ws", map[string][]float64{"nethttp": {3000}}, 0},
	}
	for _, tt := range tests {
		if got := reference(tt.ref, tt.pass, all); got != tt.want {
			t.Errorf("%s: reference = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A named reference must run, and the plan says whose max the fixed rate
// is a share of.
func TestComparePlanReference(t *testing.T) {
	p, err := ComparePlan(CompareOptions{CPUs: cpus(2), Only: []string{"nethttp", "carrier"}, Reference: "nethttp"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Reference != "nethttp" || !strings.Contains(p.Description, "70% of nethttp's max throughput") {
		t.Errorf("reference %q, description %q", p.Reference, p.Description)
	}
	p, err = ComparePlan(CompareOptions{CPUs: cpus(2), Only: []string{"nethttp", "carrier"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Reference != "" || !strings.Contains(p.Description, "70% of the lowest configuration's max throughput") {
		t.Errorf("no reference: reference %q, description %q", p.Reference, p.Description)
	}
	for _, ref := range []string{"handoff", "nosuch"} {
		_, err := ComparePlan(CompareOptions{CPUs: cpus(2), Only: []string{"nethttp", "carrier"}, Reference: ref})
		if err == nil || !strings.Contains(err.Error(), "is not among the configurations that run (nethttp, carrier)") {
			t.Errorf("reference %q: error %v", ref, err)
		}
	}
}

// TestVariantsNameFindings checks that the compare matrix has every
// configuration report's findings name (report owns those names: it cannot
// import bench).
func TestVariantsNameFindings(t *testing.T) {
	for _, name := range []string{report.ConfigBaseline, report.ConfigUnpinned, report.ConfigPinned, report.ConfigNetHTTPCarrier} {
		if !slices.ContainsFunc(Variants, func(v Variant) bool { return v.Name == name }) {
			t.Errorf("report's findings compare %q, which bench.Variants lacks", name)
		}
	}
}

// TestComparePlanTFB: the tfb app's plan runs TFBVariants, each valid,
// sending to the target given (or /db), another variant of its modes
// asked for by name, and refuses a variant of another mode.
func TestComparePlanTFB(t *testing.T) {
	cpus := mustList(t, "0-3")
	for _, tc := range []struct{ target, want string }{{"", "/db"}, {"/fortunes", "/fortunes"}} {
		p, err := ComparePlan(CompareOptions{CPUs: cpus, App: "tfb", Target: tc.target})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range p.Phases[0].Configs {
			names = append(names, c.Name)
			if err := c.Validate(false); err != nil || !c.TFB() || c.loadPath() != tc.want {
				t.Errorf("%s: %v, tfb %v, target %s; want valid, tfb, %s", c.Name, err, c.TFB(), c.loadPath(), tc.want)
			}
		}
		if !slices.Equal(names, TFBVariants) {
			t.Errorf("configurations %v; want %v", names, TFBVariants)
		}
		if !strings.Contains(p.Description, "App tfb") || !strings.Contains(p.Description, "requests to "+tc.want) {
			t.Errorf("description does not say the app: %s", p.Description)
		}
	}
	if _, err := ComparePlan(CompareOptions{CPUs: cpus, App: "tfb", Only: []string{"handoff"}}); err == nil || !strings.Contains(err.Error(), "runs in modes") {
		t.Errorf("tfb with --only handoff: %v; want refused", err)
	}
	if p, err := ComparePlan(CompareOptions{CPUs: cpus, App: "tfb", Only: []string{"carrier+park"}}); err != nil || len(p.Phases[0].Configs) != 1 {
		t.Errorf("tfb with --only carrier+park: %v; want that one configuration", err)
	}
	c := Config{Name: "x", Mode: ModeNetHTTP, Threads: 1, Connections: 1, LoadThreads: 1, MockThreads: 1, Duration: time.Second,
		Topology: DefaultTopology, Wait: DefaultWait}
	if err := c.Validate(false); err != nil || c.loadPath() != "/fruits" {
		t.Fatalf("the fruits app: %v, target %s", err, c.loadPath())
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.App = "shop" },
		func(c *Config) { c.App, c.Mode = "tfb", ModeHandoff },
		func(c *Config) { c.DBPool = 3 },
		func(c *Config) { c.App, c.DBPool = "tfb", -1 },
		func(c *Config) { c.Target = "db" },
		func(c *Config) { c.App, c.BlockingEndpoint = "tfb", true },
	} {
		b := c
		bad(&b)
		if err := b.Validate(false); err == nil {
			t.Errorf("Validate(%+v) accepted", b)
		}
	}
}

// Connections overrides the preset's, in every phase; 0 keeps it.
func TestComparePlanConnections(t *testing.T) {
	for _, tt := range []struct{ conns, want int }{{0, DefaultConnections}, {16, 16}} {
		p, err := ComparePlan(CompareOptions{CPUs: cpus(2), Only: []string{"nethttp", "carrier"}, Connections: tt.conns})
		if err != nil {
			t.Fatal(err)
		}
		for _, ph := range p.Phases {
			for _, c := range ph.Configs {
				if c.Connections != tt.want {
					t.Errorf("Connections %d: %s %s has %d connections, want %d", tt.conns, ph.Name, c.Name, c.Connections, tt.want)
				}
			}
		}
	}
}

func TestPlanPreamble(t *testing.T) {
	ran := []Rounds{{Phase: "max", Planned: 2, Extra: 1, Valid: map[string]int{"nethttp": 2}}}
	const idle = "driver haltpoll, governor haltpoll; guest halt-polling off (guest_halt_poll_ns 0)"
	tests := []struct {
		name string
		plan Plan
		want []string // the paragraphs, in order
	}{
		{"description only", Plan{Description: "Layout: x."}, []string{"Layout: x."}},
		{"rounds run", Plan{Description: "Layout: x.", Ran: ran}, []string{"Layout: x.", Plan{Ran: ran}.RoundsNote()}},
		{"idle CPUs", Plan{Description: "Layout: x.", Idle: idle}, []string{"Layout: x.", "Idle CPUs (spindle probe's \"idle\"): " + idle + "."}},
		{"both", Plan{Description: "Layout: x.", Ran: ran, Idle: idle}, []string{"Layout: x.", Plan{Ran: ran}.RoundsNote(), "Idle CPUs (spindle probe's \"idle\"): " + idle + "."}},
	}
	for _, tt := range tests {
		if got := strings.Split(tt.plan.Preamble(), "\n\n"); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Preamble paragraphs %q, want %q", tt.name, got, tt.want)
		}
	}
	if (Plan{Ran: ran}).RoundsNote() == "" {
		t.Fatal("the rounds note the test relies on is empty")
	}
}

// NoWarmup runs no warm-up (compare --warmup 0), where a Warmup of 0 is
// the preset's; Warmup and Duration override it when positive.
func TestComparePlanWarmup(t *testing.T) {
	for _, tc := range []struct {
		o            CompareOptions
		warm, window time.Duration
	}{
		{CompareOptions{}, QuickWarmup, QuickDuration},
		{CompareOptions{NoWarmup: true}, 0, QuickDuration},
		{CompareOptions{NoWarmup: true, Warmup: time.Second, Full: true}, 0, DefaultDuration},
		{CompareOptions{Warmup: 2 * time.Second, Duration: 4 * time.Second}, 2 * time.Second, 4 * time.Second},
	} {
		tc.o.CPUs, tc.o.Only = cpus(2), []string{"nethttp"}
		p, err := ComparePlan(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		c := p.Phases[0].Configs[0]
		if c.Warmup != tc.warm || c.Duration != tc.window || !strings.Contains(p.Description, fmt.Sprintf("warm-up %v, window %v", tc.warm, tc.window)) {
			t.Errorf("%+v: warm-up %v window %v (%q), want %v %v", tc.o, c.Warmup, c.Duration, p.Description, tc.warm, tc.window)
		}
	}
}

// Validate names the fields at fault (a *ConfigError, which the command
// maps to its flags), refuses carrier settings in nethttp mode, and
// refuses a placement the server's CPUs cannot hold before anything
// starts: bench --threads 8 --topology cpu started the children and left
// an incomplete result.
func TestValidateFields(t *testing.T) {
	good := Config{Mode: ModeCarrier, Topology: "off", Wait: DefaultWait, Threads: 1, Connections: 10, LoadThreads: 2, MockThreads: 1,
		Duration: time.Second, LoadCPUs: mustList(t, "0"), ServerCPUs: mustList(t, "1"), MockCPUs: mustList(t, "0")}
	for _, tc := range []struct {
		edit   func(c *Config)
		fields string // the fields named, as the message starts
		reason string
	}{
		{func(c *Config) { c.Mode = "bogus" }, `Mode "bogus"`, "want nethttp, handoff"},
		{func(c *Config) { c.Topology = "numa" }, `Topology "numa"`, "want one of off, cpu, nosmt"},
		{func(c *Config) { c.Poller = "kqueue" }, `Poller "kqueue"`, "want one of epoll"},
		{func(c *Config) { c.Slice = time.Microsecond }, "Slice 1µs", "want 0 (the kernel's default) or 100µs to 100ms"},
		{func(c *Config) { c.Float, c.Slice = true, time.Millisecond }, "Float, Slice 1ms", "no threads of their own"},
		{func(c *Config) { c.Float, c.Topology, c.NPlus1 = true, "cpu", true }, "Float, Topology cpu, NPlus1", "not bound to threads"},
		{func(c *Config) { c.WaitB = 5 * time.Millisecond }, "WaitB 5ms", "needs an adaptive strategy"},
		{func(c *Config) { c.Profile = "mem" }, `Profile "mem"`, "want cpu"},
		{func(c *Config) { c.Threads, c.Topology = 2, "cpu" }, "Threads 2, Topology cpu, ServerCPUs 1", "too few CPUs"},
		{func(c *Config) { c.NPlus1 = true }, "Threads 1, NPlus1, ServerCPUs 1", "too few CPUs"},
		{func(c *Config) { c.Mode, c.WorkStealing = ModeNetHTTP, true }, "WorkStealing", "applies to modes handoff, carrier, nethttp-carrier, not nethttp"},
		{func(c *Config) { c.Mode, c.Topology = ModeNetHTTP, "cpu" }, "Topology cpu", "not nethttp"},
		{func(c *Config) { c.Mode, c.Wait = ModeNetHTTP, "busy" }, "Wait busy", "not nethttp"},
		{func(c *Config) { c.Mode, c.Poller = ModeNetHTTP, carrier.PollerURing }, "Poller io_uring", "not nethttp"},
	} {
		c := good
		tc.edit(&c)
		err := c.Validate(false)
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), tc.fields+": ") || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%+v: %v, want a ConfigError of %s: ...%s", c, err, tc.fields, tc.reason)
		}
	}
	// nethttp with the carriers' defaults, as bench and compare make it.
	c := good
	c.Mode, c.Slice, c.Threads = ModeNetHTTP, carrier.DefaultSlice, 8
	if err := c.Validate(false); err != nil {
		t.Errorf("nethttp with the defaults: %v", err)
	}
}

// The I/O-bound preset's 8 carriers cannot be pinned to fewer server
// CPUs: carrier+pinning is left out there (named, it is refused with the
// reason), and every configuration that runs passes Validate.
func TestComparePlanIOBoundPinning(t *testing.T) {
	p, err := ComparePlan(CompareOptions{CPUs: cpus(2), IOBound: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Phases[0].Configs {
		if c.Name == "carrier+pinning" {
			t.Errorf("carrier+pinning planned with %d carriers on server CPUs %s", c.Threads, c.ServerCPUs)
		}
		if err := c.Validate(false); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	if _, err := ComparePlan(CompareOptions{CPUs: cpus(2), IOBound: true, Only: []string{"carrier+pinning"}}); err == nil || !strings.Contains(err.Error(), "a server CPU per carrier") {
		t.Errorf("--io-bound --only carrier+pinning on 2 CPUs: %v, want the reason", err)
	}
}
