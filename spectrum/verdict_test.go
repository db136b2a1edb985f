package spectrum

import (
	"math"
	"strings"
	"testing"
)

// verdictResult is a bursty result of mode on pattern whose rounds had the
// given waiting costs, with fixed p99 and background CPU medians.
func verdictResult(pattern, mode string, p99, bgCPU float64, costs ...float64) Result {
	ss := make([]Sample, len(costs))
	for i, c := range costs {
		ss[i] = Sample{WaitCost: c, WakeP99: p99, BgCPU: bgCPU}
	}
	return Result{
		Cell:     Cell{Preset: PresetBursty, Mode: mode, PatternS: pattern},
		FgMops:   Figure{Median: 1, Min: 1, Max: 1, N: len(costs)},
		WaitCost: figureOf(costs, ""),
		WakeP99:  figureOf([]float64{p99}, ""),
		BgCPU:    figureOf([]float64{bgCPU}, ""),
		Rounds:   ss,
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
	if z.WorstP99 != "adaptive≈busy" {
		t.Errorf("tied worst p99 %q, want adaptive≈busy", z.WorstP99)
	}
	var sb strings.Builder
	if err := WriteVerdicts(&sb, vs); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{"us 1:9", "1.25 [0.50-2.00]", "ms 9:1: ratio n/a (no round with a fixed strategy's cost above zero)",
		"ms 9:1, p99 wake µs: adaptive 3 against busy 3 (medians): higher in 0 of 0 paired rounds, signed-rank p = 1.00"} {
		if !strings.Contains(out, want) {
			t.Errorf("verdict table lacks %q:\n%s", want, out)
		}
	}
}

func TestWorst(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		p99  map[string][]float64 // per round
		want string
	}{
		{"higher in every round", map[string][]float64{"block": {30, 40, 35}, "adaptive": {20, 39, 34}}, "block"},
		{"one round each way, three rounds", map[string][]float64{"block": {30, 40, 35}, "adaptive": {31, 39, 34}}, "adaptive≈block"},
		// Seven rounds far higher, two a little lower: the negative ranks
		// are 1 and 2, P(W- <= 3) = 5/512.
		{"higher by much in 7 of 9 rounds", map[string][]float64{
			"block": {58, 58, 58, 58, 58, 58, 58, 40, 41},
			"busy":  {1, 1, 1, 1, 1, 1, 1, 42, 44}}, "block"},
		// Six rounds a little higher, three far lower: no difference.
		{"higher by little in 6 of 9 rounds", map[string][]float64{
			"block":    {5, 5, 5, 5, 5, 5, 1, 1, 1},
			"adaptive": {4, 4, 4, 4, 4, 4, 9, 9, 9}}, "adaptive≈block"},
		{"three strategies, one told apart", map[string][]float64{
			"block": {30, 40, 35}, "adaptive": {31, 39, 34}, "busy": {1, 2, 1}}, "adaptive≈block"},
		{"equal rounds tell nothing", map[string][]float64{"busy": {3, 3}, "pause": {3, 3}}, "busy≈pause"},
		{"rounds without a value are left out", map[string][]float64{"block": {30, nan, 60}, "adaptive": {20, 50, 34}}, "block"},
		{"a strategy with no value is never named", map[string][]float64{"block": {3}, "umwait": {nan}}, "block"},
		{"nothing measured", map[string][]float64{"umwait": {nan}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]*Result{}
			for mode, vs := range tc.p99 {
				r := &Result{}
				for _, v := range vs {
					r.Rounds = append(r.Rounds, Sample{WakeP99: v})
				}
				m[mode] = r
			}
			got, ties := worst(m, func(s Sample) float64 { return s.WakeP99 })
			if got != tc.want {
				t.Errorf("worst = %q, want %q", got, tc.want)
			}
			if n := strings.Count(got, "≈"); len(ties) != n {
				t.Errorf("%d tie notes for %q, want %d: %q", len(ties), got, n, ties)
			}
		})
	}
}

func TestSignedRankTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    []float64
		want float64
	}{
		{"none", nil, 1},
		{"one positive", []float64{2}, 0.5},
		{"three positive", []float64{1, 2, 3}, 1.0 / 8},
		{"three negative", []float64{-1, -2, -3}, 1},
		{"nine, the two smallest negative", []float64{56, 57, 58, 59, 60, 61, 62, -1, -2}, 5.0 / 512},
		// Tied magnitudes share rank 2: W+ = 4 of {0,2,2,2,4,4,4,6}.
		{"ties", []float64{1, 1, -1}, 0.5},
	} {
		if got := signedRankTail(tc.d); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: signedRankTail(%v) = %v, want %v", tc.name, tc.d, got, tc.want)
		}
	}
	for _, tc := range []struct{ names, want string }{
		{"block", "no"}, {"adaptive", "yes"}, {"adaptive≈block", "tied"}, {"", "no"},
	} {
		if got := adaptiveWorst(tc.names); got != tc.want {
			t.Errorf("adaptiveWorst(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}
