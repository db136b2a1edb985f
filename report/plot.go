package report

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/quantile"
)

// Plot size: a 16:10 image that reads well inline in Markdown.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 5 * vg.Inch
)

// palette holds 8 colours, each with a contrast ratio of at least 3:1
// against the white background (WCAG's minimum for graphics; the lowest is
// 3.4:1) and as far apart as Okabe and Ito's palette under simulated
// protanopia, deuteranopia and tritanopia (CIELAB ΔE of 17 or more, see
// TestPaletteDistinct): their blue, vermillion, bluish green and black, a
// darker reddish purple, and violet, brown and navy in place of their
// orange, sky blue and yellow, which are too light on white (2.3:1 and
// less). dashes holds 8 dash patterns, so that each of up to 8
// configurations differs from every other in colour and in pattern.
var (
	palette = []color.Color{
		color.RGBA{0, 114, 178, 255},   // blue
		color.RGBA{213, 94, 0, 255},    // vermillion
		color.RGBA{0, 158, 115, 255},   // bluish green
		color.RGBA{190, 100, 155, 255}, // reddish purple
		color.RGBA{135, 0, 240, 255},   // violet
		color.RGBA{90, 45, 0, 255},     // brown
		color.RGBA{0, 0, 0, 255},       // black
		color.RGBA{0, 30, 135, 255},    // navy
	}
	dashes = [][]vg.Length{
		nil,
		{vg.Points(6), vg.Points(3)},
		{vg.Points(2), vg.Points(2)},
		{vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)},
		{vg.Points(12), vg.Points(4)},
		{vg.Points(4), vg.Points(2), vg.Points(1), vg.Points(2), vg.Points(1), vg.Points(2)},
		{vg.Points(1), vg.Points(3)},
		{vg.Points(10), vg.Points(2), vg.Points(2), vg.Points(2), vg.Points(2), vg.Points(2)},
	}
)

// style returns the line style of the i-th configuration.
func style(i int, width vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: palette[i%len(palette)], Dashes: dashes[i%len(dashes)], Width: width}
}

// percentileTicks label the HdrHistogram plotter's x axis, 1/(1-p).
var percentileTicks = []plot.Tick{
	{Value: 1, Label: "0%"}, {Value: 2, Label: "50%"}, {Value: 10, Label: "90%"},
	{Value: 100, Label: "99%"}, {Value: 1e3, Label: "99.9%"}, {Value: 1e4, Label: "99.99%"},
	{Value: 1e5, Label: "99.999%"}, {Value: 1e6, Label: "99.9999%"},
}

// pointsPerDecade is the resolution of a percentile curve: 20 points for
// each factor of ten in 1/(1-p).
const pointsPerDecade = 20

// percentileCurve samples h's percentile distribution as the HdrHistogram
// plotter draws it: x = 1/(1-p), y = latency in ms, from p = 0 up to the
// percentile that still has a sample behind it (1/(1-p) <= count).
func percentileCurve(h *latency.Histogram) plotter.XYs {
	var xy plotter.XYs
	n := float64(h.TotalCount())
	for i := 0; ; i++ {
		x := math.Pow(10, float64(i)/pointsPerDecade)
		if x > n || x > 1e6 {
			break
		}
		p := 100 * (1 - 1/x)
		xy = append(xy, plotter.XY{X: x, Y: float64(h.ValueAtPercentile(p)) / latency.ValueScale})
	}
	return xy
}

// latencyCurves are a group's percentile curves: one per complete run
// (round) and their median, point by point over the percentiles every
// round reaches. The median curve is what the tables show: at 50%, 99%...
// it is the median over rounds of that percentile.
func latencyCurves(g *Group) (rounds []plotter.XYs, median plotter.XYs, err error) {
	for _, s := range g.runs {
		if s.Latency == nil || s.Latency.Count < 2 {
			continue
		}
		h, err := s.Latency.Decode()
		if err != nil {
			return nil, nil, fmt.Errorf("%s round %d: %w", g.Name, s.Round, err)
		}
		rounds = append(rounds, percentileCurve(h))
	}
	if len(rounds) == 0 {
		return nil, nil, nil
	}
	n := len(rounds[0])
	for _, r := range rounds {
		n = min(n, len(r))
	}
	ys := make([]float64, len(rounds))
	for i := range n {
		for j, r := range rounds {
			ys[j] = r[i].Y
		}
		median = append(median, plotter.XY{X: rounds[0][i].X, Y: quantile.Median(ys)})
	}
	return rounds, median, nil
}

// logAxis reports whether values spanning [lo, hi] need a log axis: they
// span more than a decade.
func logAxis(lo, hi float64) bool { return lo > 0 && hi/lo > 10 }

// valueTicks labels a log axis at 1, 2 and 5 times each power of ten in
// [lo, hi], with unlabelled minor ticks at the other integers: readable
// figures instead of bare powers of ten.
func valueTicks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		d := math.Pow(10, e)
		for m := 1.0; m < 10; m++ {
			v := m * d
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = trimFloat(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// setValueAxis makes a a latency axis over ys: log scale with valueTicks
// when the values span more than a decade, else linear from 0.
func setValueAxis(a *plot.Axis, ys []float64) {
	lo, hi := math.Inf(1), 0.0
	for _, y := range ys {
		if y > 0 {
			lo, hi = min(lo, y), max(hi, y)
		}
	}
	if logAxis(lo, hi) {
		a.Scale = plot.LogScale{}
		a.Min, a.Max = lo*0.9, hi*1.1
		a.Tick.Marker = plot.TickerFunc(valueTicks)
		return
	}
	a.Min = 0
}

// latencyPlot draws the corrected latency distributions of groups: every
// round that passed the checks thin, the median of those rounds bold.
func latencyPlot(groups []*Group, title, path string) error {
	return saveTo(path)(latencyChart(groups, title))
}

// latencyChart is latencyPlot's chart, its caption naming the groups
// without a latency.
func latencyChart(groups []*Group, title string) (chart, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency (ms), each round thin, their median bold"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.ConstantTicks(percentileTicks)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.YOffs = -vg.Points(12) // below the title
	p.Add(plotter.NewGrid())
	var ys []float64
	drawn := map[*Group]bool{}
	for i, g := range groups {
		rounds, med, err := latencyCurves(g)
		if err != nil {
			return chart{}, err
		}
		if med == nil {
			continue
		}
		for _, r := range rounds {
			line, err := plotter.NewLine(r)
			if err != nil {
				return chart{}, fmt.Errorf("%s: %w", g.Name, err)
			}
			line.LineStyle = style(i, vg.Points(0.5))
			line.Dashes = nil
			p.Add(line)
			for _, xy := range r {
				ys = append(ys, xy.Y)
			}
		}
		line, err := plotter.NewLine(med)
		if err != nil {
			return chart{}, fmt.Errorf("%s: %w", g.Name, err)
		}
		line.LineStyle = style(i, vg.Points(2))
		p.Add(line)
		p.Legend.Add(g.Name, line)
		drawn[g] = true
	}
	missing := missingNotes(groups, func(g *Group) bool { return drawn[g] }, "no latency recorded")
	if len(drawn) == 0 {
		return chart{}, noData("no latency recorded", groups)
	}
	setValueAxis(&p.Y, ys)
	return chart{p, append([]string{drawnNote(groups)}, missing...)}, nil
}

// noData is the error of a plot of groups with nothing to draw: what is
// missing, or that no run passed the checks when none did.
func noData(what string, groups []*Group) error {
	var unused Group
	for _, g := range groups {
		if g.Runs > 0 {
			return errors.New(what)
		}
		unused.LeftOut += g.LeftOut
		unused.Incomplete += g.Incomplete
	}
	return fmt.Errorf("no run passed the checks (%s)", unusedRuns(&unused, ""))
}

// bar is one bar of a bar chart: a group's median with its range.
type bar struct {
	name           string
	median, lo, hi float64
	label          string // "1.20 (1.10–1.35)"
}

// bars are the bars of stat for groups that have it.
func bars(groups []*Group, stat func(*Group) Stat, prec int) []bar {
	var bs []bar
	for _, g := range groups {
		s := stat(g)
		if s.N == 0 {
			continue
		}
		bs = append(bs, bar{name: g.Name, median: s.Median, lo: s.Min, hi: s.Max, label: s.Format(prec, "")})
	}
	return bs
}

// allEqual reports whether every bar has the same value and no range: a
// chart of them carries no information.
func allEqual(bs []bar) bool {
	for _, b := range bs {
		if b.median != bs[0].median || b.lo != b.hi {
			return false
		}
	}
	return true
}

// barPlot draws one bar per group: the median of stat, with the min-max
// range over rounds as error bars, each labelled with its figures (prec
// decimals). Groups without the figure are left out, named in the
// caption; a chart whose bars are all equal is not drawn (the error says
// why).
func barPlot(groups []*Group, stat func(*Group) Stat, prec int, title, ylabel, path string) error {
	return saveTo(path)(barChart(groups, stat, prec, title, ylabel))
}

// barChart is barPlot's chart.
func barChart(groups []*Group, stat func(*Group) Stat, prec int, title, ylabel string) (chart, error) {
	bs := bars(groups, stat, prec)
	missing := missingNotes(groups, func(g *Group) bool { return stat(g).N > 0 }, "no figure recorded")
	if len(bs) == 0 {
		return chart{}, noData("no figures", groups)
	}
	if len(bs) > 1 && allEqual(bs) {
		return chart{}, fmt.Errorf("every configuration has %s, nothing to compare", bs[0].label)
	}
	vals := make(plotter.Values, len(bs))
	errs := make(plotter.YErrors, len(bs))
	tops := make(plotter.XYs, len(bs))
	labels := make([]string, len(bs))
	names := make([]string, len(bs))
	for i, b := range bs {
		vals[i] = b.median
		errs[i] = struct{ Low, High float64 }{b.median - b.lo, b.hi - b.median}
		tops[i] = plotter.XY{X: float64(i), Y: b.hi}
		// Median over its range, on two lines: eight bars' labels side
		// by side on one line run into each other.
		labels[i], names[i] = strings.Replace(b.label, " (", "\n(", 1), b.name
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel + " (median; bars: min–max over rounds)"
	p.Y.Min = 0
	p.Y.Max = slices.MaxFunc(bs, func(a, b bar) int { return cmp.Compare(a.hi, b.hi) }).hi * 1.15 // room for the labels
	p.Add(plotter.NewGrid())
	bc, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return chart{}, err
	}
	bc.Color = palette[0]
	bc.LineStyle.Width = 0
	p.Add(bc)
	xys := make(plotter.XYs, len(vals))
	for i, v := range vals {
		xys[i] = plotter.XY{X: float64(i), Y: v}
	}
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{xys, errs})
	if err != nil {
		return chart{}, err
	}
	eb.LineStyle.Width = vg.Points(1.5)
	p.Add(eb)
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: tops, Labels: labels})
	if err != nil {
		return chart{}, err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YBottom
		lb.TextStyle[i].Font.Size = vg.Points(8)
	}
	lb.Offset = vg.Point{Y: vg.Points(4)}
	p.Add(lb)
	p.NominalX(names...)
	if len(names) > 5 { // long configuration names side by side overlap: slant them
		p.X.Tick.Label.Rotation = math.Pi / 8
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	}
	return chart{p, append([]string{drawnNote(groups)}, missing...)}, nil
}

// curveLines are the lines of the latency–load plot: per configuration,
// p50 and p99 (ms, median over rounds) against the achieved throughput
// (req/s, median), by offered rate; points without latency are skipped.
func curveLines(c Curve) (p50, p99 plotter.XYs) {
	for _, pt := range c.Points {
		if pt.Throughput.N == 0 || pt.P50.N == 0 {
			continue
		}
		p50 = append(p50, plotter.XY{X: pt.Throughput.Median, Y: pt.P50.Median})
		p99 = append(p99, plotter.XY{X: pt.Throughput.Median, Y: pt.P99.Median})
	}
	return p50, p99
}

// curvePlot draws the latency–load curves: p99 solid and p50 thin and
// dashed, in each configuration's colour, against achieved throughput,
// with the objective as a horizontal line.
func curvePlot(cs []Curve, slo time.Duration, path string) error {
	return saveTo(path)(curveChart(cs, slo))
}

// curveChart is curvePlot's chart. Its caption counts the runs left out
// at every rate of the curves.
func curveChart(cs []Curve, slo time.Duration) (chart, error) {
	p := linePlot("Latency against achieved throughput (p99 solid, p50 dashed)", "achieved throughput (requests/s)", "latency (ms)")
	limit := float64(slo.Microseconds()) / 1000
	ys := []float64{limit}
	maxX := 0.0
	var groups []*Group
	drawn := map[string]bool{}
	for i, c := range cs {
		for _, pt := range c.Points {
			groups = append(groups, pt.group)
		}
		p50, p99 := curveLines(c)
		if len(p99) == 0 {
			continue
		}
		l99, pts, err := plotter.NewLinePoints(p99)
		if err != nil {
			return chart{}, fmt.Errorf("%s: %w", c.Name, err)
		}
		l99.LineStyle = style(i, vg.Points(2))
		l99.Dashes = nil
		pts.Color = palette[i%len(palette)]
		pts.Shape = draw.CircleGlyph{}
		l50, err := plotter.NewLine(p50)
		if err != nil {
			return chart{}, fmt.Errorf("%s: %w", c.Name, err)
		}
		l50.LineStyle = style(i, vg.Points(1))
		l50.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l99, pts, l50)
		p.Legend.Add(c.Name, l99, pts)
		drawn[c.Name] = true
		for _, xy := range append(p50, p99...) {
			ys = append(ys, xy.Y)
			maxX = max(maxX, xy.X)
		}
	}
	missing := missingNotes(groups, func(g *Group) bool { return drawn[g.Name] }, "no latency recorded")
	if maxX == 0 {
		return chart{}, noData("no latency recorded", groups)
	}
	obj, err := plotter.NewLine(plotter.XYs{{X: 0, Y: limit}, {X: maxX * 1.05, Y: limit}})
	if err != nil {
		return chart{}, err
	}
	obj.Color = color.Gray{Y: 120}
	obj.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(obj)
	p.Legend.Add("objective: "+sloLabel(slo), obj)
	setValueAxis(&p.Y, ys)
	return chart{p, append([]string{drawnNote(groups)}, missing...)}, nil
}

// linePlot returns a plot with a grid, an x axis from 0 and the legend at
// the top left, under the title.
func linePlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.YOffs = -vg.Points(12) // below the title
	p.Add(plotter.NewGrid())
	return p
}
