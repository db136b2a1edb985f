package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/bench"
	"github.com/spindle-lab/spindle/internal/syncbuf"
	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/observe"
	"github.com/spindle-lab/spindle/report"
)

var (
	buildOnce sync.Once
	builtExe  string
	buildErr  error
)

// TestMain removes the spindle binary the end-to-end tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtExe != "" {
		os.RemoveAll(filepath.Dir(builtExe))
	}
	os.Exit(code)
}

// spindleBinary builds this command once into a temporary directory: bench
// re-executes its binary for the children, and a test binary cannot be one.
func spindleBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "spindle-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		builtExe = filepath.Join(dir, "spindle")
		out, err := exec.Command("go", "build", "-o", builtExe, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return builtExe
}

// needCommands skips the test when the binary lacks a child command.
func needCommands(t *testing.T, exe string, names ...string) {
	t.Helper()
	out, err := exec.Command(exe, "help").Output()
	if err != nil {
		t.Fatalf("spindle help: %v", err)
	}
	for _, n := range names {
		if !strings.Contains(string(out), "\n  "+n+" ") {
			t.Skipf("spindle %s is not in this binary yet (needed as a child of bench)", n)
		}
	}
}

// TestBenchEndToEnd runs a real, short "spindle bench" with the real
// children and checks the result directory.
func TestBenchEndToEnd(t *testing.T) {
	exe := spindleBinary(t)
	needCommands(t, exe, "mock", "serve", "load")
	dir := filepath.Join(t.TempDir(), "res")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "bench", "--mode", "carrier", "--rate", "300", "--connections", "8",
		"--warmup", "500ms", "--duration", "2s", "--perf-stat", "--perf-sched", "--profile", "cpu",
		"--server-port", "0", "--mock-port", "0", "--admin-port", "0", "--output-dir", dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("spindle bench: %v\n%s\n%s", err, out, resultTails(dir))
	}
	res, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if !s.Complete || s.Latency == nil || s.Latency.Count == 0 || s.Throughput <= 0 {
		t.Fatalf("summary = %+v\n%s", s, out)
	}
	for _, f := range []string{"config.json", "load.txt", "load.json", "load.hlog", "server.log", "mock.log", "threads.txt",
		"threads.json", "perf-stat.txt", "perf-sched-distribution.txt", "carrier.json", "cpu.pprof"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("result file missing: %v (n/a: %v)", err, s.NA)
		}
	}
	if s.Server == nil || s.Server.Active == 0 {
		t.Errorf("no active server thread: %+v", s.Server)
	}
	// A server this idle may leave pprof's 100 Hz sampling no sample in
	// the window: then the summary must say so.
	profiled := len(s.Profile) > 0 && s.Profile[0].FlatPct > 0 && strings.Contains(string(out), "server CPU profile (cpu.pprof), top functions")
	if !profiled && !strings.Contains(s.NA["profile"], "no samples") {
		t.Errorf("profile %+v (n/a: %q)\n%s", s.Profile, s.NA["profile"], out)
	}
	// System calls per request: a figure where perf counted them, else
	// n/a with the reason, in the summary and on the terminal.
	sys := s.SyscallsPerRequest(s.NA["perf-stat"])
	if !strings.Contains(string(out), "system calls/request "+sys.String()+"\n") {
		t.Errorf("the terminal lacks system calls/request %s:\n%s", sys, out)
	}
	if s.Perf != nil && s.Perf.SyscallsPerSec == nil {
		t.Errorf("perf stat ran but its summary has no system calls figure: %+v", s.Perf)
	}
	if sys.NA == "" && sys.Value <= 0 {
		t.Errorf("system calls/request %s; a server answering requests makes some", sys)
	}
}

// TestBenchBadInput checks the faults that must exit 2 before anything
// starts.
func TestBenchBadInput(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	used := t.TempDir() // an earlier run's directory
	os.WriteFile(filepath.Join(used, "summary.json"), []byte("{}"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--server-cpuset", "4096"}, "not available"},
		{[]string{"bench", "--load-cpuset", "0", "--mock-cpuset", "0", "--server-cpuset", "0", "--strict"}, "overlap"},
		{[]string{"bench", "--mode", "fjp"}, "mode"},
		{[]string{"bench", "--topology", "numa"}, "topology"},
		{[]string{"bench", "--poller", "kqueue"}, `bench: --poller "kqueue": want one of epoll, io_uring, io_uring_poll`},
		{[]string{"bench", "--backlog-poll-gap", "0"}, `--backlog-poll-gap "0": want a whole number of at least 1`},
		{[]string{"bench", "--mock-think-time", "soon"}, "think"},
		{[]string{"bench", "--mix", "95/fruits"}, `--mix "95/fruits": want WEIGHT:TARGET`},
		{[]string{"bench", "--mix", "95:/fruits", "--mix", "5:/block?kind=sleep"}, "only with the blocking endpoint (--blocking-endpoint)"},
		{[]string{"compare", "--blocking", "nap"}, `blocking kind "nap": want sleep, mutex, singleflight, compute`},
		{[]string{"compare", "--blocking", "sleep", "--blocking-share", "0"}, `--blocking-share "0": want a whole number from 1 to 50`},
		{[]string{"bench", "--server-port", "7", "--mock-port", "7"}, "must differ"},
		{[]string{"bench", "--server-port", busy, "--output-dir", t.TempDir()}, "port busy"},
		{[]string{"compare", "--rounds", "0"}, "rounds"},
		{[]string{"compare", "--only", "nope"}, "unknown configuration"},
		{[]string{"compare", "--only", "carrier,nope"}, "unknown configuration \"nope\""},
		{[]string{"compare", "--connections", "-1"}, `--connections "-1": want a whole number of at least 1`},
		{[]string{"compare", "--only", "nethttp,carrier", "--reference", "handoff"}, `reference "handoff" is not among the configurations that run (nethttp, carrier)`},
		{[]string{"bench", "--wait", "spinny"}, `bench: --wait "spinny": want one of block`},
		{[]string{"bench", "--wait-b", "1ms"}, "needs an adaptive strategy, not block"},
		{[]string{"bench", "--slice", "50us"}, "bench: --slice 50µs: want 0 (the kernel's default) or 100µs to 100ms"},
		{[]string{"bench", "--slice", "-1ms"}, "--slice \"-1ms\""},
		{[]string{"bench", "--float", "--slice", "1ms"}, "bench: --float --slice 1ms: floating carriers have no threads of their own: they exclude each other"},
		{[]string{"bench", "--float", "--topology", "cpu"}, "bench: --float --topology cpu: floating carriers are not bound to threads"},
		{[]string{"bench", "--mode", "bogus"}, `bench: --mode "bogus": want nethttp, handoff, carrier or nethttp-carrier`},
		{[]string{"bench", "--topology", "x"}, `bench: --topology "x": want one of off, cpu, nosmt`},
		{[]string{"bench", "--wait-b", "5ms"}, "bench: --wait-b 5ms: B sets the adaptive strategy's block-and-wake cost"},
		{[]string{"bench", "--threads", "8", "--topology", "cpu"}, "bench: --threads 8 --topology cpu --server-cpuset "}, // the layout's server CPUs: 2 at most
		{[]string{"bench", "--mode", "nethttp", "--ws"}, "bench: --ws applies to modes handoff, carrier, nethttp-carrier, not nethttp"},
		{[]string{"bench", "--mode", "nethttp", "--wait", "busy"}, "bench: --wait applies to modes handoff, carrier, nethttp-carrier, not nethttp"},
		{[]string{"bench", "--mode", "nethttp", "--topology", "cpu"}, "bench: --topology applies to modes"},
		{[]string{"bench", "--mode", "nethttp", "--poller", "io_uring"}, "bench: --poller applies to modes"},
		{[]string{"bench", "--wait", "adaptive", "--wait-b", "-1ms"}, "--wait-b \"-1ms\""},
		{[]string{"bench", "--warmup", "3"}, "needs a unit"},
		{[]string{"bench", "--output-dir", used}, "not empty"},
		{[]string{"bench", "--json", "/no/such/dir/summary.json"}, "does not exist"},
		{[]string{"compare", "--json", "/no/such/dir/findings.json"}, "does not exist"},
		{[]string{"compare", "--output-dir", used}, "not empty"},
		{[]string{"compare", "--rates", "1000,zero"}, `compare: --rates "1000,zero": "zero": want a whole number from 1 to 1000000000 (k, M, G suffixes allowed)`},
		{[]string{"compare", "--rates", "1e30"}, `compare: --rates "1e30": want a whole number from 1 to 1000000000`},
		{[]string{"compare", "--slo-p99", "0"}, "--slo-p99"},
		{[]string{"bench", "--slo", "p99<=10"}, "bench: --slo"},
		{[]string{"bench", "--profile", "heap"}, `bench: --profile "heap": want cpu (or none)`},
		{[]string{"compare", "--slo", "p99<=10ms,"}, "compare: --slo"},
		{[]string{"report", "--slo-p99", "-1", "../../report/testdata/compare"}, "--slo-p99"},
		{[]string{"report"}, "result directory"},
		{[]string{"report", t.TempDir()}, "no summary.json"},
		{[]string{"report", used}, `/summary.json: summary without the field "name"`},
		{[]string{"spectrum", "--out", "", "--fg", "100000", "knee"}, "spectrum: --fg 100000: the knee preset runs at most"},
		{[]string{"spectrum", "--out", "", "--fg", "100000", "background"}, "spectrum: --fg 100000: the background preset runs at most"},
		{[]string{"report", "--spread", "../../report/testdata/compare"}, "two result directories"},
		{[]string{"report", "--spread", "../../report/testdata/compare", t.TempDir()}, "no summary.json"},
		{[]string{"bench", "--app", "tfb", "--mode", "handoff"}, "--app tfb runs in modes nethttp, nethttp-carrier, carrier (not handoff)"},
		{[]string{"bench", "--app", "shop"}, `--app: unknown app "shop" (want fruits, tfb)`},
		{[]string{"bench", "--db-pool", "4"}, "--db-pool is for --app tfb"},
		{[]string{"bench", "--app", "tfb", "--mode", "nethttp", "--db-pool", "-1"}, `--db-pool "-1": want a whole number from 0 to 65536`},
		{[]string{"bench", "--app", "tfb", "--mode", "nethttp", "--target", "db"}, `bench: --target "db": want a path that starts with /, such as /db`},
		{[]string{"bench", "--app", "tfb", "--mode", "nethttp", "--target", "/db", "--mix", "1:/json"}, "bench: --target /db: a mix has the targets: give one or the other"},
		{[]string{"bench", "--app", "tfb", "--mode", "nethttp", "--blocking-endpoint"}, "--app tfb does not serve /block"},
		{[]string{"compare", "--app", "tfb", "--only", "handoff"}, "handoff: app tfb runs in modes nethttp, nethttp-carrier, carrier"},
		{[]string{"compare", "--app", "tfb", "--blocking", "sleep"}, "--app tfb does not serve /block"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tt.args, &out, &errOut)
		if !errors.Is(err, errBadInput) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want bad input mentioning %q", tt.args, err, tt.want)
		}
	}
}

func TestReportCommand(t *testing.T) {
	out := t.TempDir()
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"report", "--output-dir", out, "../../report/testdata/compare"}, &stdout, &stdout); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(data), "## Findings") {
		t.Errorf("report.md: %v\n%s", err, data)
	}
	// The terminal summary gives each claim's text under its verdict.
	if !strings.Contains(stdout.String(), "finding 1: not measurable here\n    At 70% load the unpinned carrier's p50") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
	// And the runs with stalls seen (the fixture has one).
	if !strings.Contains(stdout.String(), "stalls seen: ../../report/testdata/compare/fixed/r2-03-carrier (carrier): p99.9 21.01ms is 5.4x p99 3.91ms (over 5x); the server's GC stopped the world for up to 6.55ms (GOMAXPROCS 1)\n") {
		t.Errorf("stdout lacks the run with stalls:\n%s", stdout.String())
	}
	var fj report.FindingsJSON
	if err := latency.ReadJSONFile(filepath.Join(out, report.FindingsFile), &fj); err != nil || len(fj.Findings) == 0 {
		t.Errorf("%s: %v", report.FindingsFile, err)
	}
	stdout.Reset()
	tdata := "../../report/testdata/"
	if err := run(context.Background(), []string{"report", "--spread", tdata + "compare", tdata + "dev2vcpu"}, &stdout, &stdout); err != nil ||
		!strings.Contains(stdout.String(), "context switches/s") {
		t.Errorf("report --spread: %v\n%s", err, stdout.String())
	}
}

// TestReportListsUnfinished reports on a directory whose bench was killed
// (its summary.json still the marker written at the start): the run is
// listed as incomplete, on the terminal and in report.md, not skipped.
func TestReportListsUnfinished(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "killed")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := report.Summary{Name: "carrier", Phase: "fixed", Mode: "carrier", Reason: report.Unfinished, Started: time.Now().UTC()}
	if err := report.WriteJSON(filepath.Join(dir, report.SummaryFile), marker); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"report", root}, &stdout, &stdout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "incomplete: "+dir+" (carrier): "+report.Unfinished) {
		t.Errorf("stdout does not list the unfinished run:\n%s", stdout.String())
	}
	md, err := os.ReadFile(filepath.Join(root, report.File))
	if err != nil || !strings.Contains(string(md), "`killed` (carrier): "+report.Unfinished) {
		t.Errorf("report.md does not list the unfinished run: %v\n%s", err, md)
	}
}

// TestCompareEndToEnd runs a tiny real comparison: two configurations, one
// round, both phases, and checks the report.
func TestCompareEndToEnd(t *testing.T) {
	exe := spindleBinary(t)
	needCommands(t, exe, "mock", "serve", "load")
	dir := filepath.Join(t.TempDir(), "cmp")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "compare", "--only", "nethttp,carrier", "--rounds", "1",
		"--warmup", "300ms", "--duration", "1s", "--server-port", "0", "--mock-port", "0", "--admin-port", "0",
		"--output-dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("spindle compare: %v\n%s\n%s", err, out, incompleteTails(dir))
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	idle := observe.ReadIdle("").String() // how this machine idles, which the report records
	for _, want := range []string{"## Findings", "## Max throughput", "## Fixed rate", "latency-fixed.png",
		"Idle CPUs (spindle probe's \"idle\"): " + idle + "."} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(string(out), "idle CPUs: "+idle+"\n") {
		t.Errorf("compare's output lacks the idle CPUs line:\n%s", out)
	}
	// On a busy machine the run checks may leave every run out: a plot is
	// then not drawn, and the report must say so.
	shown := shownPlots(t, dir, string(md))
	for _, png := range []string{"latency-max.png", "latency-fixed.png", "throughput.png"} {
		if !shown[png] && !strings.Contains(string(md), png+" not drawn: ") {
			t.Errorf("%s neither shown nor explained:\n%s", png, md)
		}
	}
}

// exitCodeOf returns the exit status of a finished command.
func exitCodeOf(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// TestSLOEndToEnd: bench and compare check --slo at the end, print each
// threshold pass or FAIL, exit 3 when one fails (0 otherwise), and with
// --json - write their JSON summary alone on stdout.
func TestSLOEndToEnd(t *testing.T) {
	exe := spindleBinary(t)
	needCommands(t, exe, "mock", "serve", "load")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ports := []string{"--server-port", "0", "--mock-port", "0", "--admin-port", "0"}

	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, exe, append([]string{"bench", "--mode", "carrier", "--rate", "200", "--connections", "4",
		"--warmup", "300ms", "--duration", "1s", "--no-pidstat", "--output-dir", filepath.Join(t.TempDir(), "b"),
		"--slo", "p100<=1h,rps>=1000000000", "--json", "-"}, ports...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if code := exitCodeOf(t, cmd.Run()); code != 3 {
		t.Fatalf("bench with a failing threshold: exit %d, want 3\n%s", code, stderr.String())
	}
	for _, w := range []string{"SLO:\n", "pass  p100<=1h", "FAIL  rps>=1000000000", "bench: 1 of 2 slo thresholds failed"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("bench stderr lacks %q:\n%s", w, stderr.String())
		}
	}
	var sum struct {
		SchemaVersion int `json:"schema_version"`
		report.Summary
	}
	if err := latency.ReadJSON(&stdout, &sum); err != nil || sum.SchemaVersion != latency.SchemaVersion || !sum.Complete {
		t.Errorf("bench --json -: %v, schema %d, complete %v", err, sum.SchemaVersion, sum.Complete)
	}

	stdout.Reset()
	stderr.Reset()
	// No time for extra rounds (a left-out run would get one, and the
	// SLO lines below count one run).
	cmd = exec.CommandContext(ctx, exe, append([]string{"compare", "--only", "carrier", "--rounds", "1", "--time-budget", "1s",
		"--warmup", "300ms", "--duration", "1s", "--output-dir", filepath.Join(t.TempDir(), "c"),
		"--slo", "p100<=1h,errors<=100%", "--json", "-"}, ports...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("compare with thresholds met: exit %d, want 0\n%s", code, stderr.String())
	}
	for _, w := range []string{"SLO max carrier (1 run):\n  pass  p100<=1h", "SLO fixed carrier (1 run):\n  pass  p100<=1h",
		"pass  errors<=100%", "spindle compare: [1/2] carrier max round 1: started", "spindle compare: [1/2] carrier max round 1: finished"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("compare stderr lacks %q:\n%s", w, stderr.String())
		}
	}
	var fj report.FindingsJSON
	if err := latency.ReadJSON(&stdout, &fj); err != nil || len(fj.Findings) == 0 {
		t.Errorf("compare --json -: %v, %d findings", err, len(fj.Findings))
	}
}

// shownPlots checks that every plot report.md shows exists in dir and
// decodes as a PNG, and returns them.
func shownPlots(t *testing.T, dir, md string) map[string]bool {
	t.Helper()
	shown := map[string]bool{}
	for _, line := range strings.Split(md, "\n") {
		i := strings.Index(line, "](")
		if !strings.HasPrefix(line, "![") || i < 0 {
			continue
		}
		name := strings.TrimSuffix(line[i+2:], ")")
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		f.Close()
		shown[name] = true
	}
	return shown
}

// TestCompareSweepEndToEnd runs a tiny real sweep: nethttp and carrier,
// one round, every share of the reference max; then checks plan.json's
// rates, findings.json and every plot the report shows.
func TestCompareSweepEndToEnd(t *testing.T) {
	exe := spindleBinary(t)
	needCommands(t, exe, "mock", "serve", "load")
	dir := filepath.Join(t.TempDir(), "sweep")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "compare", "--only", "nethttp,carrier", "--rounds", "1", "--sweep", "--time-budget", "1s",
		"--warmup", "100ms", "--duration", "400ms", "--slo-p99", "50ms", "--output-dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("spindle compare --sweep: %v\n%s\n%s", err, out, incompleteTails(dir))
	}
	var p bench.Plan
	if err := latency.ReadJSONFile(filepath.Join(dir, bench.PlanFile), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Phases) != 1+len(bench.SweepShares) {
		t.Fatalf("plan has %d phases, want max and %d sweep points", len(p.Phases), len(bench.SweepShares))
	}
	for _, ph := range p.Phases[1:] {
		if ph.Configs[0].Rate <= 0 || ph.Share <= 0 {
			t.Errorf("sweep phase %s: share %v rate %d", ph.Name, ph.Share, ph.Configs[0].Rate)
		}
	}
	var fj report.FindingsJSON
	if err := latency.ReadJSONFile(filepath.Join(dir, report.FindingsFile), &fj); err != nil || len(fj.Findings) < 6 {
		t.Errorf("%s: %v, %d findings", report.FindingsFile, err, len(fj.Findings))
	}
	md, err := os.ReadFile(filepath.Join(dir, report.File))
	if err != nil {
		t.Fatal(err)
	}
	// Runs may be left out on a busy machine (other load), and the curve
	// with them; whatever the report shows must exist and decode.
	if len(shownPlots(t, dir, string(md))) == 0 && !strings.Contains(string(md), "not drawn: ") {
		t.Errorf("report.md shows no plot and says nothing of why:\n%s", md)
	}
	if strings.Contains(string(md), "## Latency against load") != strings.Contains(string(md), "latency-load.png") {
		t.Errorf("the latency–load section and its plot disagree:\n%s", md)
	}
	if !strings.Contains(string(out), "finding 1: ") {
		t.Errorf("no findings on the terminal:\n%s", out)
	}
}

// TestBenchTFBEndToEnd runs a short "spindle bench --app tfb" in each of
// the app's modes: the runner starts its PostgreSQL, the server answers
// /db without an error, the result directory records the app and the
// database, and once the command has exited the database no longer
// answers and no process of the run is left. It skips where PostgreSQL is
// not installed, as the command's error says.
func TestBenchTFBEndToEnd(t *testing.T) {
	exe := spindleBinary(t)
	for _, mode := range []string{"nethttp", "nethttp-carrier", "carrier"} {
		t.Run(mode, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "res")
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, exe, "bench", "--app", "tfb", "--mode", mode, "--connections", "4",
				"--warmup", "300ms", "--duration", "1500ms", "--no-pidstat", "--output-dir", dir).CombinedOutput()
			if err != nil && strings.Contains(string(out), bench.ErrNoPostgres.Error()) {
				t.Skipf("spindle bench --app tfb: %s", out)
			}
			if err != nil {
				t.Fatalf("spindle bench --app tfb: %v\n%s\n%s", err, out, resultTails(dir))
			}
			res, err := report.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			if !s.Complete || s.App != "tfb" || s.Requests == 0 || s.Errors != 0 || s.Throughput <= 0 {
				t.Fatalf("summary: complete %v, app %q, %d requests, %d errors, %.0f req/s; want complete tfb answers, no error\n%s",
					s.Complete, s.App, s.Requests, s.Errors, s.Throughput, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "mock.log")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("mock.log: %v; want no mock for --app tfb", err)
			}
			checkDBStopped(t, dir)
			if left := running(exe); len(left) > 0 {
				t.Errorf("processes left running: %v", left)
			}
		})
	}
}

// checkDBStopped reads the database of the tfb run in dir from its
// config.json and wants it no longer answering.
func checkDBStopped(t *testing.T, dir string) {
	t.Helper()
	var cf struct{ App, Database string }
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err == nil {
		err = json.Unmarshal(b, &cf)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(cf.Database, " at ")
	addr, _, _ := strings.Cut(after, ",")
	if cf.App != "tfb" || !strings.HasPrefix(cf.Database, "PostgreSQL ") || addr == "" {
		t.Fatalf("config.json: app %q, database %q; want tfb and PostgreSQL at an address", cf.App, cf.Database)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("the run's PostgreSQL at %s still answers after the run", addr)
	}
}

// TestBenchTFBInterrupt sends SIGINT to a running "spindle bench --app
// tfb": the run is marked incomplete, and the database is stopped with
// the children.
func TestBenchTFBInterrupt(t *testing.T) {
	exe := spindleBinary(t)
	dir := filepath.Join(t.TempDir(), "res")
	var out syncbuf.Buffer // read while the command writes
	cmd := exec.Command(exe, "bench", "--app", "tfb", "--mode", "nethttp-carrier", "--connections", "4",
		"--warmup", "1s", "--duration", "60s", "--no-pidstat", "--output-dir", dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(30 * time.Second)
wait: // until the load generator runs (its output file exists)
	for {
		select {
		case err := <-exited:
			if strings.Contains(out.String(), bench.ErrNoPostgres.Error()) {
				t.Skipf("spindle bench --app tfb: %s", out.String())
			}
			t.Fatalf("spindle bench --app tfb exited before its load ran: %v\n%s", err, out.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("the load generator did not start within 30s\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
			if _, err := os.Stat(filepath.Join(dir, "load.txt")); err == nil {
				break wait
			}
		}
	}
	cmd.Process.Signal(os.Interrupt)
	var err error
	select {
	case err = <-exited:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("spindle bench still running 60s after SIGINT\n%s", out.String())
	}
	checkInterrupted(t, exe, dir, err, out.String())
	checkDBStopped(t, dir)
}

// running lists the processes executing exe.
func running(exe string) []int {
	var pids []int
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && target == exe {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestBenchInterrupt sends SIGINT to a running "spindle bench": it must
// stop every child, mark the results incomplete and exit non-zero.
func TestBenchInterrupt(t *testing.T) {
	exe := spindleBinary(t)
	needCommands(t, exe, "mock", "serve", "load")
	dir := filepath.Join(t.TempDir(), "res")
	cmd := exec.Command(exe, "bench", "--warmup", "1s", "--duration", "60s", "--output-dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the load generator runs (its output file exists).
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "load.txt")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the load generator did not start within 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(running(exe)); n < 4 {
		t.Errorf("%d spindle processes running, want the runner and 3 children", n)
	}
	cmd.Process.Signal(os.Interrupt)
	checkInterrupted(t, exe, dir, cmd.Wait(), "")
}

// checkInterrupted wants the interrupted bench of exe into dir to have
// exited non-zero (err, with its output out), left no process of exe
// running, and marked its result incomplete, interrupted.
func checkInterrupted(t *testing.T, exe, dir string, err error, out string) {
	t.Helper()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("interrupted bench: %v, want a non-zero exit\n%s", err, out)
	}
	if left := running(exe); len(left) > 0 {
		t.Errorf("processes left running: %v", left)
	}
	res, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Complete || !strings.Contains(res.Summary.Reason, "interrupted") {
		t.Errorf("summary = complete %v, reason %q", res.Summary.Complete, res.Summary.Reason)
	}
}

func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := &progressLine{w: &buf, tty: true}
	p.show(benchProgress("carrier+pinning", "measuring"))
	p.show(benchProgress("nethttp", "stopping"))
	p.done()
	out := buf.String()
	if !strings.Contains(out, "\r[3/36] carrier+pinning fixed round 2: measuring  elapsed 1m5s  remaining ~2m0s") ||
		!strings.HasSuffix(out, "\n") || strings.Count(out, "\r") != 2 {
		t.Errorf("progress output %q", out)
	}
}

// Not on a terminal (a CI log): a line per run started and finished, and
// heartbeats with the step while a run is silent, none once it finished.
func TestProgressLog(t *testing.T) {
	var buf syncbuf.Buffer
	p := &progressLine{w: &buf, log: startProgressLog(&buf, "compare", 30*time.Millisecond, 5*time.Millisecond)}
	first := benchProgress("carrier", "warm-up")
	p.show(first)
	first.Step = "measuring"
	p.show(first)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(buf.String(), "still running") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	second := benchProgress("nethttp", "starting")
	second.Run = 4
	p.show(second)
	p.close()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []string{
		"spindle compare: [3/36] carrier fixed round 2: started  elapsed 1m5s  remaining ~2m0s",
		"spindle compare: still running: [3/36] carrier fixed round 2: measuring  elapsed 1m5s  remaining ~2m0s",
		"spindle compare: [3/36] carrier fixed round 2: finished",
		"spindle compare: [4/36] nethttp fixed round 2: started  elapsed 1m5s  remaining ~2m0s",
		"spindle compare: [4/36] nethttp fixed round 2: finished",
	}
	var got []string
	for i, l := range lines { // heartbeats may repeat on a slow machine: keep one
		if i > 0 && l == lines[i-1] && strings.Contains(l, "still running") {
			continue
		}
		got = append(got, l)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// No heartbeat after the last run finished.
	n := buf.Len()
	time.Sleep(60 * time.Millisecond)
	if buf.Len() != n {
		t.Errorf("output after close: %q", buf.String()[n:])
	}
}

func benchProgress(name, step string) bench.Progress {
	return bench.Progress{Run: 3, Runs: 36, Config: name, Phase: "fixed", Round: 2, Step: step,
		Elapsed: 65 * time.Second, Remaining: 2 * time.Minute}
}

func TestAncestors(t *testing.T) {
	tests := []struct {
		dir, root string
		want      []string
	}{
		{"/r/cmp/max/r1-01-carrier", "/r", []string{"/r/cmp/max", "/r/cmp", "/r"}},
		{"/r/cmp/max/r1-01-carrier", "/r/cmp/", []string{"/r/cmp/max", "/r/cmp"}},
		{"/r", "/r", nil},
		{"/a/b", "/elsewhere", []string{"/a", "/"}},
	}
	for _, tt := range tests {
		if got := ancestors(tt.dir, tt.root); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("ancestors(%q, %q) = %q, want %q", tt.dir, tt.root, got, tt.want)
		}
	}
}

// TestPlanDescriptionNested: "spindle report results/" finds the plan.json
// of a compare directory below it, two levels above its result directories.
func TestPlanDescriptionNested(t *testing.T) {
	root := t.TempDir()
	cmp := filepath.Join(root, "compare-1")
	run := filepath.Join(cmp, "max", "r1-01-carrier")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cmp, bench.PlanFile), []byte(`{"description":"layout from the plan"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := planDescription([]string{root}); got != "" {
		t.Fatalf("plan found in the root itself: %q", got)
	}
	if got := planDescription(append([]string{root}, ancestors(run, root)...)); got != "layout from the plan" {
		t.Errorf("nested plan description = %q", got)
	}
}

func TestParseRates(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		bad  bool
	}{
		{"", nil, false},
		{"1000", []int{1000}, false},
		{"1000, 5000,20000", []int{1000, 5000, 20000}, false},
		{"0", nil, true},
		{"-5", nil, true},
		{"1000,", nil, true},
		{"1k", []int{1000}, false}, // as bench --rate (and load -R) read it
		{"20k,1.5M", []int{20000, 1500000}, false},
		{"1e30", nil, true},
		{"1.5", nil, true},
	}
	for _, tt := range tests {
		got, err := parseRates(tt.in)
		if (err != nil) != tt.bad || !slices.Equal(got, tt.want) {
			t.Errorf("parseRates(%q) = %v, %v", tt.in, got, err)
		}
		if err != nil && !errors.Is(err, errBadInput) {
			t.Errorf("parseRates(%q): %v is not bad input", tt.in, err)
		}
	}
}

func FuzzParseRates(f *testing.F) {
	for _, s := range []string{"", "1000", "1,2,3", " 7 ,8", "0", "-1", "x", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rates, err := parseRates(s)
		if err != nil {
			if rates != nil || !errors.Is(err, errBadInput) {
				t.Fatalf("parseRates(%q) = %v, %v", s, rates, err)
			}
			return
		}
		for _, r := range rates {
			if r <= 0 || r > load.MaxRate {
				t.Fatalf("parseRates(%q) accepted %d", s, r)
			}
		}
	})
}

// resultTails lists a result directory's files with their sizes and the
// end of each log, for the message of a run that failed or hung.
func resultTails(dir string) string {
	var b strings.Builder
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Sprintf("(result directory: %v)", err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s %d bytes\n", e.Name(), info.Size())
	}
	for _, name := range []string{"server.log", "mock.log", "load.log", "load.txt"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "--- end of %s:\n%s\n", name, data)
	}
	return b.String()
}

// incompleteTails is resultTails of every run under root whose summary
// says it is incomplete (or is missing), for the message of a comparison
// that failed.
func incompleteTails(root string) string {
	var b strings.Builder
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "config.json" {
			return nil
		}
		dir := filepath.Dir(path)
		if res, err := report.Load(dir); err == nil && res.Summary.Complete {
			return nil
		}
		fmt.Fprintf(&b, "=== %s\n%s", dir, resultTails(dir))
		return nil
	})
	return b.String()
}
