package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/observe"
	"github.com/spindle-lab/spindle/report"
)

// fakeConfig is a short configuration on the CPUs this test may use.
func fakeConfig(t *testing.T, mode string) Config {
	t.Helper()
	c, err := shortConfig(mode)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// shortConfig is fakeConfig for code without a *testing.T (the fake
// runner process).
func shortConfig(mode string) (Config, error) {
	all, err := cpu.Allowed()
	if err != nil {
		return Config{}, err
	}
	l, err := LayoutFor(all, nil)
	if err != nil {
		return Config{}, err
	}
	return Config{Name: mode, Mode: mode, Threads: l.Carriers, Connections: 4, LoadThreads: 1,
		LoadCPUs: l.Load, ServerCPUs: l.Server, MockCPUs: l.Mock, MockThreads: 1,
		MockThinkTime: time.Millisecond, Topology: "off", Wait: "block",
		Warmup: 100 * time.Millisecond, Duration: 700 * time.Millisecond, Pidstat: true, PerfStat: true}, nil
}

// fakeOptions run the test binary as the children.
func fakeOptions(t *testing.T) RunOptions {
	t.Helper()
	t.Setenv(fakeEnv, "1")
	// Under -race each child (this test binary) would sleep a second
	// before exiting: ThreadSanitizer's atexit_sleep_ms defaults to 1000,
	// to catch races with threads still running at exit. Every run waits
	// for the load generator's exit and stops two more children, so that
	// sleep was three of the four seconds of a fake run. The children
	// still run under the race detector; only the sleep goes. Options the
	// caller set in GORACE are kept (the last setting of an option wins).
	t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return RunOptions{Exe: exe, Dir: t.TempDir(), Phase: "fixed", Round: 1, StopGrace: time.Second}
}

// track records the children a run starts, and checks at the end of the
// test that none is left running.
func track(t *testing.T, opt *RunOptions) {
	var pids []int
	opt.Started = func(_ string, pid int) { pids = append(pids, pid) }
	t.Cleanup(func() {
		if len(pids) == 0 {
			t.Error("no child started")
		}
		gone(t, pids...)
	})
}

// gone checks that the children of a summary's run have all exited.
func gone(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("child %d still running", pid)
		}
	}
}

func TestRunFake(t *testing.T) {
	opt := fakeOptions(t)
	track(t, &opt)
	var phases []string
	opt.Progress = func(p string) { phases = append(phases, p) }
	cfg := fakeConfig(t, ModeCarrier)
	cfg.Rate = 500
	sum, err := Run(context.Background(), cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Complete || sum.Throughput != 500 || sum.Latency == nil || sum.Latency.Count != 1000 {
		t.Errorf("summary = %+v", sum)
	}
	if want := "starting,warm-up,measuring,collecting,stopping"; strings.Join(phases, ",") != want {
		t.Errorf("progress %v, want %s", phases, want)
	}
	if sum.ObserveWindow != 560*time.Millisecond {
		t.Errorf("observers' window %v, want the middle 80%% of 700ms", sum.ObserveWindow)
	}
	for _, f := range []string{ConfigFile, report.SummaryFile, LoadText, LoadJSON, ServerLog, MockLog,
		ThreadsText, ThreadsJSON, PerfStatText, CarrierJSON} {
		if _, err := os.Stat(filepath.Join(opt.Dir, f)); err != nil {
			t.Errorf("result file: %v", err)
		}
	}
	if sum.Server == nil || sum.Server.Threads == 0 {
		t.Errorf("no server thread figures: %+v (na %v)", sum.Server, sum.NA)
	}
	if sum.Carrier == nil || sum.Carrier.IOCyclesPer10s <= 0 || sum.Carrier.EventsPerCycle != 2 {
		t.Errorf("carrier figures = %+v (na %v)", sum.Carrier, sum.NA)
	}
	if _, err := exec.LookPath("perf"); err == nil && sum.Perf == nil && sum.NA["perf-stat"] == "" {
		t.Error("perf installed but neither figures nor a reason")
	}
	if sum.NA["perf-sched"] == "" {
		t.Error("perf sched off without a reason")
	}
	if sum.OtherCPUs == nil || *sum.OtherCPUs < 0 {
		t.Errorf("other load = %v (na %v)", sum.OtherCPUs, sum.NA)
	}
	back, err := report.Load(opt.Dir)
	if err != nil || back.Summary.Name != cfg.Name || !back.Summary.Complete {
		t.Errorf("summary.json read back: %+v, %v", back.Summary, err)
	}
	// load.json's host steal is carried into summary.json.
	if h := back.Summary.HostSteal; h == nil || h.TotalMs != 30 || h.Bursts != 1 || h.PerCPUMs[0] != 30 {
		t.Errorf("summary.json's host steal %+v, want the fake load.json's", h)
	}
}

func TestRunNetHTTPHasNoCarriers(t *testing.T) {
	opt := fakeOptions(t)
	cfg := fakeConfig(t, ModeNetHTTP)
	cfg.PerfStat = false
	opt.Perf = observe.Perf{LookPath: func(string) (string, error) { return "", exec.ErrNotFound }}
	cfg.PerfSched = true
	sum, err := Run(context.Background(), cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Carrier != nil || !strings.Contains(sum.NA["carrier"], "no carriers") {
		t.Errorf("nethttp carrier figures %+v, reason %q", sum.Carrier, sum.NA["carrier"])
	}
	if sum.NA["perf-sched"] != "perf not installed" {
		t.Errorf("perf-sched reason = %q, want perf not installed", sum.NA["perf-sched"])
	}
	data, err := os.ReadFile(filepath.Join(opt.Dir, PerfSchedText))
	if err != nil || strings.TrimSpace(string(data)) != "n/a (perf not installed)" {
		t.Errorf("%s = %q, %v", PerfSchedText, data, err)
	}
}

func TestRunChildFails(t *testing.T) {
	opt := fakeOptions(t)
	track(t, &opt)
	t.Setenv(fakeFailEnv, "serve")
	sum, err := Run(context.Background(), fakeConfig(t, ModeCarrier), opt)
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "server") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("error = %v, want an incomplete run naming the server and its last words", err)
	}
	back, lerr := report.Load(opt.Dir)
	if lerr != nil || back.Summary.Complete || back.Summary.Reason == "" || sum.Complete {
		t.Errorf("summary.json = %+v, %v", back.Summary, lerr)
	}
}

func TestRunInterrupted(t *testing.T) {
	opt := fakeOptions(t)
	track(t, &opt)
	ctx, cancel := context.WithCancel(context.Background())
	opt.Progress = func(p string) {
		if p == "measuring" {
			cancel()
		}
	}
	start := time.Now()
	cfg := fakeConfig(t, ModeCarrier)
	cfg.Duration = time.Minute
	_, err := Run(ctx, cfg, opt)
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("error = %v", err)
	}
	if time.Since(start) > 15*time.Second {
		t.Errorf("interrupted run took %v", time.Since(start))
	}
	back, _ := report.Load(opt.Dir)
	if back.Summary.Complete || !strings.Contains(back.Summary.Reason, "interrupted") {
		t.Errorf("summary = %+v", back.Summary)
	}
}

func TestRunBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	opt := fakeOptions(t)
	cfg := fakeConfig(t, ModeCarrier)
	cfg.ServerPort = ln.Addr().(*net.TCPAddr).Port
	_, err = Run(context.Background(), cfg, opt)
	if !errors.Is(err, ErrPortBusy) {
		t.Fatalf("error = %v, want ErrPortBusy", err)
	}
}

// fakePlan is the compare plan of o on CPU 0 for the fake children: free
// ports, no perf stat, and the /proc sampling only when pidstat.
func fakePlan(t *testing.T, o CompareOptions, pidstat bool) Plan {
	t.Helper()
	o.CPUs = cpu.Set{0}
	p, err := ComparePlan(o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Phases {
		for j := range p.Phases[i].Configs {
			c := &p.Phases[i].Configs[j]
			c.ServerPort, c.MockPort, c.AdminPort, c.PerfStat = 0, 0, 0, false
			c.Pidstat = c.Pidstat && pidstat
		}
	}
	return p
}

func TestRunPlanFake(t *testing.T) {
	opt := fakeOptions(t)
	track(t, &opt)
	p := fakePlan(t, CompareOptions{Rounds: 2, Only: []string{"nethttp", "carrier"},
		Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond}, true)
	var last Progress
	steps := 0
	dir := t.TempDir()
	results, err := RunPlan(context.Background(), p, RunPlanOptions{Dir: dir, Run: opt,
		Progress: func(pr Progress) { last = pr; steps++ }})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 8 || last.Run != 8 || last.Runs != 8 || steps != 8*5 {
		t.Errorf("%d results, last progress %+v, %d steps", len(results), last, steps)
	}
	// The fake load reports 1000 requests over 300ms at max throughput:
	// the fixed rate is 70% of 3333 req/s.
	for _, r := range results {
		s := r.Summary
		if s.Phase == "fixed" && s.Rate != 2333 {
			t.Errorf("fixed run %s rate %d, want 2333", r.Dir, s.Rate)
		}
		if s.Phase == "max" && s.Rate != 0 {
			t.Errorf("max run %s rate %d", r.Dir, s.Rate)
		}
	}
	var rec Plan
	if err := latency.ReadJSONFile(filepath.Join(dir, PlanFile), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Phases[1].Configs[0].Rate != 2333 || rec.Description == "" || p.Phases[1].Configs[0].Rate != 0 {
		t.Errorf("plan.json fixed rate %d, description %q; caller's plan rate %d (want untouched)",
			rec.Phases[1].Configs[0].Rate, rec.Description, p.Phases[1].Configs[0].Rate)
	}
	if got := results[1].Summary; got.Name != "carrier" || got.Round != 1 {
		t.Errorf("second run = %s round %d, want carrier round 1 (interleaved)", got.Name, got.Round)
	}
}

// TestRunPlanExtraRounds: runs left out by the checks make RunPlan run
// extra rounds of the configurations short of valid runs, with the
// reference configuration, within the budget; without a budget it runs
// none and says so.
func TestRunPlanExtraRounds(t *testing.T) {
	plan := func(t *testing.T) Plan {
		return fakePlan(t, CompareOptions{Rounds: 2, Only: []string{"nethttp", "handoff", "carrier"},
			Warmup: 20 * time.Millisecond, Duration: 200 * time.Millisecond}, false)
	}
	tests := []struct {
		name   string
		budget time.Duration
		// runs: by phase and round, the configurations run.
		runs map[string]string
		ran  string // RoundsNote, in part
	}{
		{"budget", time.Hour, map[string]string{
			"max":   "1:nethttp,handoff,carrier 2:nethttp,handoff,carrier 3:nethttp,handoff",
			"fixed": "1:nethttp,handoff,carrier 2:nethttp,handoff,carrier",
		}, "max: 2 rounds and 1 extra round for the configurations short of runs that passed the checks; every configuration has 2 or more valid runs. fixed: 2 rounds; every"},
		{"no budget", 0, map[string]string{
			"max":   "1:nethttp,handoff,carrier 2:nethttp,handoff,carrier",
			"fixed": "1:nethttp,handoff,carrier 2:nethttp,handoff,carrier",
		}, "max: 2 rounds; still short of 2 valid runs: handoff 1 (no time budget for extra rounds)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := fakeOptions(t)
			track(t, &opt)
			// No /proc to read: no other-load gauge, so that only the run
			// made to fail below is left out, whatever else the machine runs.
			opt.ProcRoot = t.TempDir()
			// The second run (handoff, max round 1) fails half its requests.
			counter := filepath.Join(t.TempDir(), "errors")
			if err := os.WriteFile(counter, []byte("0"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv(fakeErrorsEnv, counter)
			dir := t.TempDir()
			n := 0
			results, err := RunPlan(context.Background(), plan(t), RunPlanOptions{Dir: dir, Run: opt, Budget: tt.budget,
				Progress: func(pr Progress) {
					if pr.Step == "starting" && pr.Run != n {
						n = pr.Run
						val := "0"
						if n == 2 {
							val = "1"
						}
						_ = os.WriteFile(counter, []byte(val), 0o644)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]map[int][]string{}
			for _, r := range results {
				s := r.Summary
				if got[s.Phase] == nil {
					got[s.Phase] = map[int][]string{}
				}
				got[s.Phase][s.Round] = append(got[s.Phase][s.Round], s.Name)
			}
			for phase, want := range tt.runs {
				var b []string
				for round := 1; round <= len(got[phase]); round++ {
					b = append(b, fmt.Sprintf("%d:%s", round, strings.Join(got[phase][round], ",")))
				}
				if g := strings.Join(b, " "); g != want {
					t.Errorf("%s ran %s, want %s", phase, g, want)
				}
			}
			var rec Plan
			if err := latency.ReadJSONFile(filepath.Join(dir, PlanFile), &rec); err != nil {
				t.Fatal(err)
			}
			if note := rec.RoundsNote(); !strings.Contains(note, tt.ran) {
				t.Errorf("rounds note %q, want %q in it", note, tt.ran)
			}
		})
	}
}

func TestOtherCPUs(t *testing.T) {
	t0 := time.Unix(100, 0)
	tests := []struct {
		a, b cpuSnap
		want float64
	}{
		// 3 s of busy CPU in 2 s, 1 s of it ours: 1 CPU of other load.
		{cpuSnap{at: t0, busy: 10, own: map[int]float64{1: 5}}, cpuSnap{at: t0.Add(2 * time.Second), busy: 13, own: map[int]float64{1: 6}}, 1},
		// Ours exceeds the machine's by a tick's rounding: 0, not negative.
		{cpuSnap{at: t0, busy: 10, own: map[int]float64{1: 5}}, cpuSnap{at: t0.Add(time.Second), busy: 10.99, own: map[int]float64{1: 6}}, 0},
		// A process of ours that exited in between (pid 2, 30 s of CPU
		// over its life) does not count its lifetime as other load.
		{cpuSnap{at: t0, busy: 10, own: map[int]float64{1: 5, 2: 30}}, cpuSnap{at: t0.Add(2 * time.Second), busy: 13, own: map[int]float64{1: 6}}, 1},
		// One that started in between used all of its CPU time in the window.
		{cpuSnap{at: t0, busy: 10, own: map[int]float64{1: 5}}, cpuSnap{at: t0.Add(2 * time.Second), busy: 13, own: map[int]float64{1: 6, 3: 0.5}}, 0.75},
	}
	for _, tt := range tests {
		if got := otherCPUs(tt.a, tt.b); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("otherCPUs(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	if got := otherCPUs(cpuSnap{at: t0}, cpuSnap{at: t0}); !math.IsNaN(got) {
		t.Errorf("empty window: %v, want NaN", got)
	}
	if _, err := readCPU(t.TempDir(), nil); err == nil {
		t.Error("readCPU of an empty proc root succeeded")
	}
}

func TestRunNothingCompleted(t *testing.T) {
	opt := fakeOptions(t)
	track(t, &opt)
	t.Setenv(fakeZeroEnv, "1")
	_, err := Run(context.Background(), fakeConfig(t, ModeCarrier), opt)
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "no request completed") {
		t.Fatalf("error = %v, want an incomplete run: no request completed", err)
	}
}

func TestRunPlanGoesOnAfterAFailure(t *testing.T) {
	opt := fakeOptions(t)
	track(t, &opt)
	t.Setenv(fakeZeroEnv, "1") // every run completes nothing
	p, err := ComparePlan(CompareOptions{CPUs: cpu.Set{0}, Rounds: 1, Only: []string{"nethttp", "carrier"},
		Warmup: 50 * time.Millisecond, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	results, err := RunPlan(context.Background(), p, RunPlanOptions{Dir: t.TempDir(), Run: opt,
		Failed: func(r report.Result, _ error) { told = append(told, r.Summary.Name) }})
	// Both max runs fail, so there is no fixed rate and the plan stops there.
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "no fixed rate") {
		t.Errorf("error = %v", err)
	}
	if len(results) != 2 || strings.Join(told, ",") != "nethttp,carrier" {
		t.Errorf("%d results, told of %v", len(results), told)
	}
}

func TestPinRunner(t *testing.T) {
	all, err := cpu.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	// Pinning to every allowed CPU changes nothing and exercises the path.
	if err := PinRunner(all); err != nil {
		t.Fatal(err)
	}
	if err := PinRunner(nil); err == nil {
		t.Error("PinRunner(empty) succeeded")
	}
	if len(all) < 2 {
		t.Skip("one CPU: narrowing the runner's set cannot be seen")
	}
	// Narrowed to one CPU, every thread of the process has that set; then
	// the whole set is restored for the tests after this one.
	one := all[:1]
	if err := PinRunner(one); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := PinRunner(all); err != nil {
			t.Fatal(err)
		}
	}()
	tids, err := cpu.Threads("", "self")
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		got, err := unix.SchedGetaffinity(tid)
		if err != nil {
			continue // the thread exited
		}
		if cpu.Set(got).String() != one.String() {
			t.Errorf("thread %d: affinity %v, want %s", tid, got, one)
		}
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	opt := fakeOptions(t)
	cfg := fakeConfig(t, "fjp")
	if _, err := Run(context.Background(), cfg, opt); err == nil || errors.Is(err, ErrIncomplete) {
		t.Errorf("error = %v, want a configuration error before anything starts", err)
	}
	if _, err := os.Stat(filepath.Join(opt.Dir, report.SummaryFile)); err == nil {
		t.Error("summary.json written for a configuration that never ran")
	}
}

// TestRunChildDiesWhileObserving kills the mock in the middle of the
// observers' window of a long run: the run must fail within a second of
// the death, not when the window would have ended, stop the other
// children and say it is incomplete.
func TestRunChildDiesWhileObserving(t *testing.T) {
	opt := fakeOptions(t)
	track(t, &opt)
	pids := map[string]int{}
	tracked := opt.Started
	opt.Started = func(name string, pid int) { pids[name] = pid; tracked(name, pid) }
	cfg := fakeConfig(t, ModeCarrier)
	cfg.Duration = 20 * time.Second // observers from 2 s to 18 s after the warm-up
	killedAt := make(chan time.Time, 1)
	var stopping time.Time
	opt.Progress = func(p string) {
		switch p {
		case "measuring":
			// Progress runs on Run's goroutine, so the kill waits in
			// another one until the observers' window has begun.
			go func(pid int) {
				time.Sleep(cfg.Duration*observeMarginPc/100 + 500*time.Millisecond)
				killedAt <- time.Now()
				syscall.Kill(pid, syscall.SIGKILL)
			}(pids["mock"])
		case "stopping":
			stopping = time.Now()
		}
	}
	sum, err := Run(context.Background(), cfg, opt)
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "mock") {
		t.Fatalf("error = %v, want an incomplete run naming the mock", err)
	}
	var killed time.Time
	select {
	case killed = <-killedAt:
	default:
		t.Fatal("the run ended before the mock was killed")
	}
	if d := stopping.Sub(killed); d > time.Second {
		t.Errorf("the mock's death was noticed %v after it, want within 1s", d)
	}
	back, lerr := report.Load(opt.Dir)
	if lerr != nil || back.Summary.Complete || sum.Complete || !strings.Contains(back.Summary.Reason, "mock") {
		t.Errorf("summary.json = %+v, %v", back.Summary, lerr)
	}
}

// fakeRunnerEnv makes the test binary a "spindle bench" of the fake
// children that writes its run to the directory named, for the kill -9
// test.
const fakeRunnerEnv = "BENCH_FAKE_RUNNER"

// fakeRunner runs one long fake run in dir, printing "NAME PID" for each
// child and "measuring" when the window starts, then waits to be killed.
func fakeRunner(dir string) int {
	cfg, err := shortConfig(ModeCarrier)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.Duration = time.Minute
	os.Setenv(fakeEnv, "1") // the children are fakes, not runners
	os.Unsetenv(fakeRunnerEnv)
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opt := RunOptions{Exe: exe, Dir: dir, StopGrace: time.Second,
		Started:  func(name string, pid int) { fmt.Printf("%s %d\n", name, pid) },
		Progress: func(p string) { fmt.Println(p) }}
	if _, err := Run(context.Background(), cfg, opt); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestRunKilledIsUnfinished kills -9 a process running a bench in the
// middle of its window: nothing can write the end of the run then, so the
// directory must already say it is unfinished, the report must list it as
// incomplete, and the children must not outlive the runner.
func TestRunKilledIsUnfinished(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeRunnerEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 {
			if pid, err := strconv.Atoi(f[1]); err == nil {
				pids = append(pids, pid)
			}
		}
		if sc.Text() == "measuring" {
			break
		}
	}
	if len(pids) != 3 {
		t.Fatalf("runner started %v before measuring, want mock, server and load", pids)
	}
	cmd.Process.Kill() // SIGKILL: the runner can write nothing more
	cmd.Wait()
	// The children die by their parent-death signal, asynchronously.
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("child %d outlived the killed runner", pid)
		}
	}
	dirs, err := report.Discover(dir)
	if err != nil {
		t.Fatalf("the killed run's directory is not found: %v", err)
	}
	res, err := report.Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Build([]report.Result{res})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Incomplete) != 1 || rep.Incomplete[0].Summary.Reason != report.Unfinished {
		t.Errorf("report lists %+v as incomplete, want the killed run, unfinished", rep.Incomplete)
	}
}

// alive reports whether process pid runs: a zombie, which nobody may reap
// in a container without an init, counts as gone.
func alive(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestRunPlanSweepFake runs one configuration over two rounds with the
// fixed phase and an explicit rate: the rate phases follow the max
// phase's rounds, interleaved round by round, each at its rate.
func TestRunPlanSweepFake(t *testing.T) {
	opt := fakeOptions(t)
	track(t, &opt)
	p, err := ComparePlan(CompareOptions{CPUs: cpu.Set{0}, Rounds: 2, Only: []string{"carrier"}, Rates: []int{123},
		Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Phases {
		for j := range p.Phases[i].Configs {
			p.Phases[i].Configs[j].PerfStat = false
		}
	}
	results, err := RunPlan(context.Background(), p, RunPlanOptions{Dir: t.TempDir(), Run: opt})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range results {
		got = append(got, fmt.Sprintf("%s/r%d@%d", r.Summary.Phase, r.Summary.Round, r.Summary.Rate))
	}
	// The fake load reports 1000 requests over 300ms at max: 70% of 3333.
	want := []string{"max/r1@0", "max/r2@0", "fixed/r1@2333", "rate-123/r1@123", "fixed/r2@2333", "rate-123/r2@123"}
	if !slices.Equal(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}

func TestBackendBusy(t *testing.T) {
	st := func(busy0, idle0, busy1, idle1 float64) cpuSnap {
		return cpuSnap{stat: observe.StatTimes{PerCPU: map[int]observe.CPUTimes{
			0: {Total: busy0 + idle0, Busy: busy0},
			1: {Total: busy1 + idle1, Busy: busy1},
		}}}
	}
	// In the window cpu0 ran 9 of 10 s, cpu1 1 of 10.
	a, b := st(1, 1, 1, 1), st(10, 2, 2, 10)
	tests := []struct {
		name   string
		hosts  Hosts
		mock   cpu.Set
		want   float64
		wantNA string
	}{
		{"the backend's CPU", Hosts{}, cpu.Set{0}, 0.9, ""},
		{"two CPUs", Hosts{}, cpu.Set{0, 1}, 0.5, ""},
		{"no CPU set", Hosts{}, nil, 0, "no CPU set of its own"},
		{"a mock elsewhere", Hosts{MockAddr: "198.18.0.2"}, cpu.Set{0}, 0, "another host"},
		{"a CPU /proc/stat lacks", Hosts{}, cpu.Set{0, 5}, 0, "no cpu5 line"},
	}
	for _, tt := range tests {
		r := &runner{cfg: Config{MockCPUs: tt.mock}, na: map[string]string{}}
		r.backendBusy(&tt.hosts, a, b)
		got, na := r.sum.BackendBusy, r.na["backend-busy"]
		switch {
		case tt.wantNA != "":
			if got != nil || !strings.Contains(na, tt.wantNA) {
				t.Errorf("%s: figure %v, n/a %q; want no figure and %q", tt.name, got, na, tt.wantNA)
			}
		case got == nil || math.Abs(*got-tt.want) > 1e-9 || na != "":
			t.Errorf("%s: figure %v, n/a %q; want %v", tt.name, got, na, tt.want)
		}
	}
}
