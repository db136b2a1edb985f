package spectrum

import (
	"strings"
	"testing"
)

// verdictResult is a bursty result of mode on pattern whose rounds had the
// given waiting costs, with fixed p99 and background CPU medians.
func verdictResult(pattern, mode string, p99, bgCPU float64, costs ...float64) Result {
	ss := make([]Sample, len(costs))
	for i, c := range costs {
		ss[i].WaitCost = c
	}
	return Result{
		Cell:     Cell{Preset: PresetBursty, Mode: mode, PatternS: pattern},
		FgMops:   Figure{Median: 1, Min: 1, Max: 1, N: len(costs)},
		WaitCost: figureOf(costs, ""),
		WakeP99:  figureOf([]float64{p99}, ""),
		BgCPU:    figureOf([]float64{bgCPU}, ""),
		samples:  ss,
	}
}

func TestVerdicts(t *testing.T) {
	res := []Result{
		{Cell: Cell{Preset: PresetBursty, PatternS: "us 1:9"}, FgMops: Figure{N: 2}}, // the baseline
		verdictResult("us 1:9", "adaptive", 5, 10, 2, 4),
		verdictResult("us 1:9", "busy", 1, 100, 10, 10),
		verdictResult("us 1:9", "block", 50, 5, 1, 8),
		// No adaptive on this pattern: no verdict.
		verdictResult("ms 1:9", "busy", 1, 100, 10, 10),
		// Adaptive but no fixed strategy: no verdict.
		verdictResult("ms 5:5", "adaptive", 1, 1, 1, 1),
		verdictResult("ms 5:5", ModeWork, 1, 100, 1, 1),
		// Every fixed strategy cost nothing: the ratio is n/a, not infinite.
		verdictResult("ms 9:1", "adaptive", 3, 7, 1),
		verdictResult("ms 9:1", "busy", 3, 7, 0),
		// A cell that never ran is left out.
		{Cell: Cell{Preset: PresetBursty, Mode: "pause", PatternS: "us 1:9"}},
		// Other presets are not compared.
		{Cell: Cell{Preset: PresetBackground, Mode: "adaptive", PatternS: "us 1:9"}, FgMops: Figure{N: 1}},
	}
	vs := Verdicts(res)
	if len(vs) != 2 {
		t.Fatalf("%d verdicts, want 2: %+v", len(vs), vs)
	}
	v := vs[0]
	if v.Pattern != "us 1:9" || v.Best != "block" || v.BestCost.Median != 4.5 || v.Adaptive.Median != 3 {
		t.Errorf("verdict %+v: want block best at 4.5, adaptive 3", v)
	}
	// Per round: 2/min(10,1) = 2 and 4/min(10,8) = 0.5; the median of two is their mean.
	if v.Ratio.N != 2 || v.Ratio.Median != 1.25 || v.Ratio.Min != 0.5 || v.Ratio.Max != 2 {
		t.Errorf("ratio %+v, want 1.25 [0.5-2] over 2 rounds", v.Ratio)
	}
	if v.WorstP99 != "block" || v.WorstCPU != "busy" {
		t.Errorf("worst p99 %q, worst CPU %q: want block, busy", v.WorstP99, v.WorstCPU)
	}
	z := vs[1]
	if z.Pattern != "ms 9:1" || z.Best != "busy" || z.Ratio.N != 0 || !strings.HasPrefix(z.Ratio.NA, "n/a (") {
		t.Errorf("zero-cost verdict %+v: want busy best and an n/a ratio", z)
	}
	if z.WorstP99 != "adaptive=busy" {
		t.Errorf("tied worst p99 %q, want adaptive=busy", z.WorstP99)
	}
	var sb strings.Builder
	if err := WriteVerdicts(&sb, vs); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{"us 1:9", "1.25 [0.50-2.00]", "ms 9:1: ratio n/a (no round with a fixed strategy's cost above zero)"} {
		if !strings.Contains(out, want) {
			t.Errorf("verdict table lacks %q:\n%s", want, out)
		}
	}
}
