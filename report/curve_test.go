package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/latency"
)

// sweepRun is a synthetic complete run whose latency is uniform over
// [p50/2, 3*p50/2] with a tail: 1% of requests at p99us, so that p50 and
// p99 land where the test wants them.
func sweepRun(t *testing.T, name, phase string, round, rate int, tp float64, p50us, p99us int64) Result {
	t.Helper()
	h := latency.New()
	for i := range int64(990) {
		latency.Record(h, (p50us/2+p50us*i/990)*1000)
	}
	for range 10 {
		latency.Record(h, p99us*1000)
	}
	s, err := latency.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	s.PercentilesUs = map[string]int64{"50": p50us, "90": p50us, "99": p99us, "99.9": p99us}
	mode := "carrier"
	if name == baseline {
		mode = baseline
	}
	sum := Summary{Complete: true, Name: name, Phase: phase, Round: round, Mode: mode, ServerCPUs: "0",
		Rate: rate, Throughput: tp, Requests: 1000, Latency: &s, Uncorrected: &s,
		Started: time.Unix(int64(1000*round+rate), 0)}
	return Result{Dir: fmt.Sprintf("%s/r%d-%s", phase, round, name), Summary: sum}
}

// sweepFixture: nethttp and carrier, two rounds, max then four rates.
// nethttp's p99 crosses 10 ms between 4000 and 6000 req/s, carrier's
// between 6000 and 8000 in round 1 and past 8000 in round 2.
func sweepFixture(t *testing.T) []Result {
	var rs []Result
	type pt struct {
		rate      int
		p50, p99  int64 // µs
		p99round2 int64
	}
	curves := map[string][]pt{
		baseline: {{2000, 800, 3000, 3000}, {4000, 1000, 6000, 7000}, {6000, 2000, 15000, 16000}, {8000, 9000, 90000, 95000}},
		unpinned: {{2000, 600, 2000, 2000}, {4000, 700, 3000, 3000}, {6000, 900, 5000, 5500}, {8000, 2000, 12000, 9000}},
	}
	for round := 1; round <= 2; round++ {
		rs = append(rs, sweepRun(t, baseline, "max", round, 0, 7000, 20000, 80000),
			sweepRun(t, unpinned, "max", round, 0, 9000, 15000, 60000))
		for i, name := range []string{baseline, unpinned} {
			for j, p := range curves[name] {
				p99 := p.p99
				if round == 2 {
					p99 = p.p99round2
				}
				phase := fmt.Sprintf("sweep-%03d", 25*(j+1))
				tp := math.Min(float64(p.rate), []float64{7000, 9000}[i])
				rs = append(rs, sweepRun(t, name, phase, round, p.rate, tp, p.p50, p99))
			}
		}
	}
	return rs
}

func TestCurves(t *testing.T) {
	rep, err := Build(sweepFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	cs := rep.Curves(DefaultSLOP99)
	if len(cs) != 2 || cs[0].Name != baseline || len(cs[0].Points) != 4 {
		t.Fatalf("curves = %+v", cs)
	}
	// nethttp: 4000 in both rounds; carrier: 6000 in round 1, 8000 in 2.
	if c := cs[0].Capacity; c.Median != 4000 || c.N != 2 || c.Min != c.Max {
		t.Errorf("nethttp capacity %+v", c)
	}
	if c := cs[1].Capacity; c.Median != 7000 || c.Min != 6000 || c.Max != 8000 {
		t.Errorf("carrier capacity %+v", c)
	}
	// An objective under every point: capacity 0, not missing.
	if c := rep.Curves(time.Millisecond)[0].Capacity; c.N != 2 || c.Max != 0 {
		t.Errorf("capacity at 1 ms %+v, want 0 in both rounds", c)
	}
	// The data behind the latency–load plot, golden: achieved req/s, p50
	// and p99 (ms, medians over rounds) per configuration.
	var b strings.Builder
	for _, c := range cs {
		p50, p99 := curveLines(c)
		for i := range p50 {
			fmt.Fprintf(&b, "%s %.0f %.2f %.2f\n", c.Name, p50[i].X, p50[i].Y, p99[i].Y)
		}
	}
	golden(t, "curve.golden.txt", b.String())

	fs := rep.Findings()
	if len(fs) != 7 {
		t.Fatalf("%d findings with a sweep, want 7 (the capacity claim)", len(fs))
	}
	f := fs[6]
	if f.Verdict != Confirmed || !strings.Contains(f.Figures, "capacity req/s nethttp 4000; carrier 7000 (6000–8000)") {
		t.Errorf("capacity finding %+v", f)
	}
}

// TestSweepReport writes the sweep's report and checks the section, the
// plots and findings.json.
func TestSweepReport(t *testing.T) {
	out := t.TempDir()
	if d := os.Getenv("SWEEP_OUT"); d != "" {
		out = d
	}
	rep, err := Write(out, sweepFixture(t), Options{SLOP99: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, File))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Latency against load", "| carrier | 6000 | 6000 | 0.90 | 5.25 (5.00–5.50) |",
		"Capacity at p99 < 10 ms", "| nethttp | 4000 |", "![latency-load](latency-load.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), "## Phase sweep-") {
		t.Error("sweep points have their own sections besides the latency–load one")
	}
	checkPNG(t, filepath.Join(out, "latency-load.png"))
	checkPNG(t, filepath.Join(out, "latency-max.png"))
	var fj FindingsJSON
	if err := latency.ReadJSONFile(filepath.Join(out, FindingsFile), &fj); err != nil || len(fj.Findings) != len(rep.Findings()) {
		t.Errorf("%s: %v (%d findings)", FindingsFile, err, len(fj.Findings))
	}
}

// golden compares got with testdata/name (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update after checking):\n%s", path, got)
	}
}

// TestLatencyCurvesData golden-tests the data behind the percentile plots
// of the fixture's fixed phase: the median curve at the labelled
// percentiles, which must agree with the tables (the median over rounds
// of each round's percentile).
func TestLatencyCurvesData(t *testing.T) {
	rep, err := Build(loadAll(t, filepath.Join("testdata", "compare")))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, g := range rep.Groups {
		if g.Phase != "fixed" {
			continue
		}
		rounds, med, err := latencyCurves(g)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: %d rounds;", g.Name, len(rounds))
		for _, tk := range percentileTicks[1:4] { // 50%, 90%, 99%: the nearest point
			near := med[0]
			for _, xy := range med {
				if math.Abs(math.Log(xy.X/tk.Value)) < math.Abs(math.Log(near.X/tk.Value)) {
					near = xy
				}
			}
			fmt.Fprintf(&b, " %s %.3f", tk.Label, near.Y)
			if tk.Label == "99%" && math.Abs(near.Y/g.P99.Median-1) > 0.01 {
				t.Errorf("%s: the plot's median p99 %.3f ms disagrees with the table's %.3f", g.Name, near.Y, g.P99.Median)
			}
		}
		b.WriteString("\n")
	}
	golden(t, "latency-curves.golden.txt", b.String())
}

func TestValueTicks(t *testing.T) {
	var labels []string
	for _, tk := range valueTicks(0.4, 120) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "0.5 1 2 5 10 20 50 100" {
		t.Errorf("labelled ticks over 0.4–120: %s", got)
	}
	if logAxis(1, 9) || !logAxis(1, 11) || logAxis(0, 100) {
		t.Error("logAxis: a log axis only past a decade of positive values")
	}
}

func TestBarPlotEqualBars(t *testing.T) {
	g := func(name string, s Stat) *Group { return &Group{Name: name, CPUs: s} }
	equal := []*Group{g("a", st(1, 1, 1, 3)), g("b", st(1, 1, 1, 3))}
	path := filepath.Join(t.TempDir(), "cpu.png")
	err := barPlot(equal, func(g *Group) Stat { return g.CPUs }, 2, "t", "CPUs", path)
	if err == nil || !strings.Contains(err.Error(), "every configuration has 1.00, nothing to compare") {
		t.Errorf("equal bars: %v", err)
	}
	// Equal medians with ranges still inform (the ranges differ).
	ranged := []*Group{g("a", st(1, 0.9, 1.2, 3)), g("b", st(1, 1, 1, 3))}
	if err := barPlot(ranged, func(g *Group) Stat { return g.CPUs }, 2, "t", "CPUs", path); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, path)
	bs := bars(ranged, func(g *Group) Stat { return g.CPUs }, 2)
	if len(bs) != 2 || bs[0].label != "1.00 (0.90–1.20)" || bs[1].label != "1.00" {
		t.Errorf("bar labels %+v", bs)
	}
}
