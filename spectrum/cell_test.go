package spectrum

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
)

// twoCPUs returns a foreground and a background CPU, or skips.
func twoCPUs(t *testing.T) (int, int) {
	t.Helper()
	allowed, err := cpu.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("needs two CPUs, this process may use %s", allowed)
	}
	return allowed[0], allowed[len(allowed)-1]
}

func TestLineBlockWakes(t *testing.T) {
	line := &Line{}
	tg := line.Target()
	if tg.Ready() || tg.Poll() != 0 || tg.Word() == nil {
		t.Fatal("a new line is idle, has no I/O and exposes its word")
	}
	// A deadline in the past returns at once.
	if tg.Block(wait.Now()-1) != 0 || tg.Ready() {
		t.Fatal("past deadline")
	}
	// A timeout returns without work.
	start := time.Now()
	tg.Block(wait.Now() + int64(2*time.Millisecond))
	if el := time.Since(start); el < time.Millisecond {
		t.Fatalf("block with a 2ms deadline returned after %v", el)
	}
	done := make(chan time.Duration)
	go func() {
		s := wait.Now()
		tg.Block(-1)
		done <- time.Duration(wait.Now() - s)
	}()
	time.Sleep(5 * time.Millisecond)
	line.SetBusy(wait.Now())
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("SetBusy did not wake a blocked waiter")
	}
	if seq, at := line.Since(); seq != 1 || at == 0 || !tg.Ready() {
		t.Fatalf("after SetBusy: seq %d at %d ready %v", seq, at, tg.Ready())
	}
	line.Close()
	line.SetIdle()
	if !line.Busy() || !line.Closed() {
		t.Fatal("a closed line stays busy so that every waiter returns")
	}
}

// TestRunCellKinds runs every kind of cell briefly: the foreground
// alone, a compute background, pseudo packets, a steady waiter and bursty
// waiters of each available strategy.
func TestRunCellKinds(t *testing.T) {
	fg, bg := twoCPUs(t)
	b, err := wait.MeasureBlockWake(50)
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{BlockWake: b, Seed: 1, PowerNA: "test", FreqNA: "test"}
	// Microsecond bursts: three thousand busy periods in 300ms, so that even a
	// poller starved by other processes on a shared machine sees some.
	// Cells last long enough that a thread starved for tens of ms by other
	// processes (or by the real-time driver spinning before its flips on
	// the foreground's CPU) still does some work.
	us := Pattern{ScaleMicro, Ratio{5, 5}}
	d := 200 * time.Millisecond
	cells := []Cell{
		{Preset: "t", Kernel: "scalar", FG: cpu.Set{fg}, Driver: -1, Duration: d},
		{Preset: "t", Kernel: "scalar", Mode: ModeMatmul, FG: cpu.Set{fg}, BG: cpu.Set{bg}, Driver: -1, Duration: d},
		{Preset: "t", Kernel: "scalar", Mode: ModeWork, FG: cpu.Set{fg}, BG: cpu.Set{bg}, Driver: -1, Duration: d},
		{Preset: "t", Kernel: "scalar", Mode: "block", FG: cpu.Set{fg}, BG: cpu.Set{bg}, Driver: -1, Duration: d},
		{Preset: "t", Kernel: "scalar", Mode: "pause", FG: cpu.Set{fg}, BG: cpu.Set{bg}, Driver: -1, Duration: d},
	}
	for _, m := range wait.Supported() {
		c := Cell{Preset: "t", Kernel: "scalar", Mode: m, FG: cpu.Set{fg}, BG: cpu.Set{bg},
			Pattern: &us, PatternS: us.String(), Driver: fg, Duration: 300 * time.Millisecond}
		if sharesCore(m) {
			c.Shared = c.BG
		}
		cells = append(cells, c)
	}
	for _, c := range cells {
		s, err := e.RunCell(c, 0)
		if err != nil && len(c.Shared) > 0 && strings.Contains(err.Error(), "real-time priority") {
			t.Logf("%s not run: %v (needs root or CAP_SYS_NICE)", c.Key(), err)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.Key(), err)
		}
		if len(c.Shared) > 0 && s.FgOps == 0 {
			t.Errorf("%s: no foreground work", c.Key())
		}
		t.Logf("%-28s fg %.3f Mop/s bg %.3f Mpkt/s %.3f Mop/s wakes %d p50 %.1fµs bg CPU %.0f%% cost %.1f%% blocks %d",
			c.Key(), s.FgMops, s.BgMpps, s.BgMops, s.Wakes, s.WakeP50, s.BgCPU, s.WaitCost, s.Blocks)
		if s.FgOps == 0 || s.FgMops <= 0 {
			t.Errorf("%s: no foreground work", c.Key())
		}
		if !math.IsNaN(s.Watts) || !math.IsNaN(s.GHz) {
			t.Errorf("%s: watts %v GHz %v without meters, want NaN", c.Key(), s.Watts, s.GHz)
		}
		switch {
		case c.Mode == ModeMatmul && s.BgMops <= 0:
			t.Errorf("%s: no background matmuls", c.Key())
		case c.Mode == ModeWork && s.BgMpps <= 0:
			t.Errorf("%s: no packets", c.Key())
		case c.Mode == "block" && c.Pattern == nil && s.Blocks == 0:
			t.Errorf("%s: a steady blocking waiter never slept", c.Key())
		case (c.Mode == "busy" || c.Mode == "pause") && s.Blocks != 0:
			t.Errorf("%s: a spinning waiter counted %d block-and-wakes", c.Key(), s.Blocks)
		case c.Pattern != nil && (s.Wakes == 0 || s.BgMpps <= 0 || math.IsNaN(s.WakeP50)):
			t.Errorf("%s: %d wake-ups, %.3f Mpkt/s over %d periods of %v", c.Key(), s.Wakes, s.BgMpps, c.Duration/us.Period(), us.Period())
		}
	}
}

func TestRunSummarisesAndSkips(t *testing.T) {
	fg, bg := twoCPUs(t)
	e := &Env{BlockWake: time.Microsecond, Seed: 1, PowerNA: "no meter here", FreqNA: "no meter here"}
	base := Cell{Preset: "t", Kernel: "scalar", FG: cpu.Set{fg}, Driver: -1, Duration: 60 * time.Millisecond}
	busy := base
	busy.Mode, busy.BG, busy.Baseline = "busy", cpu.Set{bg}, base.Key()
	skip := busy
	skip.Mode, skip.Skipped = "tpause", "skipped: wait strategy tpause: CPU lacks WAITPKG: not supported"
	res := e.Run(context.Background(), []Cell{base, busy, skip}, 2, nil)
	// A starved foreground can finish no op in a round on a loaded
	// machine; its ratio is then n/a for that round, not a failure.
	if res[0].FgMops.N != 2 || res[1].FgRel.N < 1 || res[1].BgCPU.N != 2 {
		t.Fatalf("figures: %+v %+v", res[0].FgMops, res[1].FgRel)
	}
	if !res[0].FgRel.Inapplicable || res[1].WakeP50.N != 0 || !res[1].WakeP50.Inapplicable {
		t.Errorf("baseline rel %+v, steady wake %+v: want not applicable", res[0].FgRel, res[1].WakeP50)
	}
	if res[1].Watts.NA != "n/a (no meter here)" || res[1].Watts.Inapplicable {
		t.Errorf("watts %+v", res[1].Watts)
	}
	if res[2].FgMops.N != 0 || res[2].Skipped == "" {
		t.Errorf("skipped cell ran: %+v", res[2])
	}
	var sb strings.Builder
	if err := WriteTable(&sb, "t", res); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{"fg Mop/s", "fg rel", "bg CPU %", "scalar fg=1 bg=1 busy", "skipped: wait strategy tpause",
		"pkg W: n/a (no meter here)", "fg GHz: n/a (no meter here)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "wake p50") {
		t.Errorf("wake columns shown though no cell has bursts:\n%s", out)
	}
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"package_watts":{"na":"n/a (no meter here)"}`, `"fg_mops":{"median":`, `"skipped":"skipped: wait strategy tpause`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	// A cancelled context runs nothing more.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := e.Run(ctx, []Cell{base}, 3, nil); r[0].FgMops.N != 0 {
		t.Errorf("cancelled run measured %d repeats", r[0].FgMops.N)
	}
}

func TestFigureOf(t *testing.T) {
	f := figureOf([]float64{3, math.NaN(), 1, 2, 10}, "x")
	if f.N != 4 || f.Median != 2.5 || f.Min != 1 || f.Max != 10 {
		t.Errorf("figure %+v", f)
	}
	if f := figureOf([]float64{math.NaN()}, "meter frozen"); f.N != 0 || f.NA != "n/a (meter frozen)" {
		t.Errorf("all NaN: %+v", f)
	}
}

func TestMeasureLineWake(t *testing.T) {
	a, b := twoCPUs(t)
	d, err := MeasureLineWake(a, b, 50, 20*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("B between CPUs %d and %d: %v", a, b, d)
	if d <= 0 || d > time.Second {
		t.Errorf("B = %v", d)
	}
	if _, err := MeasureLineWake(a, a, 1, 0); err == nil {
		t.Error("same CPU: want an error")
	}
	if _, err := MeasureLineWake(a, b, 0, 0); err == nil {
		t.Error("no rounds: want an error")
	}
}

// A round's figures that could not be had are null in the JSON.
func TestSampleJSON(t *testing.T) {
	s := Sample{FgMops: 1.5, WakeP50: math.NaN(), WakeP99: math.Inf(1), Watts: math.NaN(), Late: 1500 * time.Nanosecond, BusyShare: 50}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"fg_mops":1.5`, `"wake_p50_us":null`, `"wake_p99_us":null`, `"package_watts":null`, `"driver_late_us":1.5`, `"busy_share_pct":50`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}
