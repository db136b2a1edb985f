package spectrum

import (
	"fmt"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot sizes: wide enough for nine grouped bursty patterns.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 4.5 * vg.Inch
)

// WritePlots writes the PNG figures of the presets present in res into
// dir and returns their paths. A figure whose metric is n/a on every cell
// (power, frequency on this machine) is not drawn.
func WritePlots(dir string, res []Result) ([]string, error) {
	var out []string
	add := func(name string, p *plot.Plot, err error) error {
		if err != nil || p == nil {
			return err
		}
		path := filepath.Join(dir, name+".png")
		if err := p.Save(plotWidth, plotHeight, path); err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		out = append(out, path)
		return nil
	}
	ran := slices.DeleteFunc(slices.Clone(res), func(r Result) bool { return r.Skipped != "" || r.Error != "" || r.FgMops.N == 0 })
	for _, k := range kernelsOf(ran) {
		of := func(preset string) []Result {
			return slices.DeleteFunc(slices.Clone(ran), func(r Result) bool { return r.Preset != preset || r.Kernel != k })
		}
		if rs := of(PresetKnee); len(rs) > 0 {
			p, err := lines("Knee: aggregate throughput ("+k+")", "foreground threads", "Mop/s", rs,
				func(r Result) string { return k }, func(r Result) float64 { return float64(len(r.FG)) }, func(r Result) Figure { return r.FgMops })
			if err := add("knee-"+k, p, err); err != nil {
				return out, err
			}
		}
		if rs := of(PresetBackground); len(rs) > 0 {
			for _, m := range []struct {
				name, title, unit string
				get               func(Result) Figure
			}{
				{"background-" + k, "Foreground throughput", "Mop/s", func(r Result) Figure { return r.FgMops }},
				{"background-ghz-" + k, "Foreground frequency", "GHz", func(r Result) Figure { return r.GHz }},
				{"background-watts-" + k, "Package power", "W", func(r Result) Figure { return r.Watts }},
			} {
				if !slices.ContainsFunc(rs, func(r Result) bool { return m.get(r).N > 0 }) {
					continue
				}
				p, err := lines(m.title+" against background threads ("+k+")", "background threads", m.unit, withBaselines(rs),
					func(r Result) string { return r.Mode }, func(r Result) float64 { return float64(len(r.BG)) }, m.get)
				if err := add(m.name, p, err); err != nil {
					return out, err
				}
			}
		}
		if rs := of(PresetPlacement); len(rs) > 0 {
			perThread := func(r Result) Figure {
				f := r.FgMops
				n := float64(len(r.FG))
				f.Median, f.Min, f.Max = f.Median/n*1e3, f.Min/n*1e3, f.Max/n*1e3
				return f
			}
			p, err := bars("Placement: per-thread foreground throughput ("+k+")", "Kop/s per thread", rs,
				func(r Result) string { return r.Placement }, func(r Result) string { return modeOrBaseline(r) }, perThread)
			if err := add("placement-"+k, p, err); err != nil {
				return out, err
			}
		}
		if rs := of(PresetBursty); len(rs) > 0 {
			p, err := bars("Bursty: foreground throughput relative to alone ("+k+")", "normalised Op/s", rs,
				func(r Result) string { return r.PatternS }, func(r Result) string { return r.Mode }, func(r Result) Figure { return r.FgRel })
			if err := add("bursty-fg-"+k, p, err); err != nil {
				return out, err
			}
			p, err = bars("Bursty: background pseudo packets ("+k+")", "Mpkt/s", rs,
				func(r Result) string { return r.PatternS }, func(r Result) string { return r.Mode }, func(r Result) Figure { return r.BgMpps })
			if err := add("bursty-bg-"+k, p, err); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

func kernelsOf(rs []Result) []string {
	var ks []string
	for _, r := range rs {
		if !slices.Contains(ks, r.Kernel) {
			ks = append(ks, r.Kernel)
		}
	}
	return ks
}

func modeOrBaseline(r Result) string {
	if r.Mode == "" {
		return "alone"
	}
	return r.Mode
}

// withBaselines copies the baseline (0 background threads) into every
// mode's series, so each line starts at the foreground alone.
func withBaselines(rs []Result) []Result {
	var out []Result
	var modes []string
	for _, r := range rs {
		if r.Mode != "" && !slices.Contains(modes, r.Mode) {
			modes = append(modes, r.Mode)
		}
	}
	for _, r := range rs {
		if r.Mode != "" {
			out = append(out, r)
			continue
		}
		for _, m := range modes {
			b := r
			b.Mode = m
			out = append(out, b)
		}
	}
	return out
}

// lines draws one line with points per series, x ascending, the median
// of each cell with its min-max as error bars.
func lines(title, xl, yl string, rs []Result, series func(Result) string, x func(Result) float64, y func(Result) Figure) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xl, yl
	var names []string
	pts := map[string]plotter.XYs{}
	errs := map[string]plotter.YErrors{}
	for _, r := range rs {
		f := y(r)
		if f.N == 0 {
			continue
		}
		n := series(r)
		if _, ok := pts[n]; !ok {
			names = append(names, n)
		}
		pts[n] = append(pts[n], plotter.XY{X: x(r), Y: f.Median})
		errs[n] = append(errs[n], struct{ Low, High float64 }{f.Median - f.Min, f.Max - f.Median})
	}
	for i, n := range names {
		xys := pts[n]
		idx := make([]int, len(xys))
		for j := range idx {
			idx[j] = j
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(xys[a].X, xys[b].X) })
		sx, se := make(plotter.XYs, len(idx)), make(plotter.YErrors, len(idx))
		for j, k := range idx {
			sx[j], se[j] = xys[k], errs[n][k]
		}
		l, s, err := plotter.NewLinePoints(sx)
		if err != nil {
			return nil, err
		}
		l.Color, s.Color = plotutil.Color(i), plotutil.Color(i)
		s.Shape = plotutil.Shape(i)
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{sx, se})
		if err != nil {
			return nil, err
		}
		eb.Color = plotutil.Color(i)
		p.Add(l, s, eb)
		p.Legend.Add(n, l, s)
	}
	p.Legend.Top = true
	return p, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// bars draws grouped bars: one group per x label (in first-seen order),
// one bar per series within it.
func bars(title, yl string, rs []Result, group, series func(Result) string, y func(Result) Figure) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.Y.Label.Text = title, yl
	var groups, names []string
	val := map[[2]string]float64{}
	for _, r := range rs {
		f := y(r)
		if f.N == 0 {
			continue
		}
		g, n := group(r), series(r)
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
		val[[2]string{g, n}] = f.Median
	}
	if len(groups) == 0 {
		return nil, nil
	}
	w := vg.Points(float64(360 / max(len(groups)*len(names), 1)))
	w = min(max(w, vg.Points(4)), vg.Points(30))
	for i, n := range names {
		vs := make(plotter.Values, len(groups))
		for j, g := range groups {
			vs[j] = val[[2]string{g, n}]
		}
		b, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return nil, err
		}
		b.Color = plotutil.Color(i)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(i)-float64(len(names)-1)/2)
		p.Add(b)
		p.Legend.Add(n, b)
	}
	p.NominalX(groups...)
	p.Legend.Top = true
	return p, nil
}
