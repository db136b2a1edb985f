package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"spindle/latency"
)

// Plot size: a 16:10 image that reads well inline in Markdown.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 5 * vg.Inch
)

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

// latencyPlot draws the corrected latency distributions of groups.
func latencyPlot(groups []*Group, title, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency (ms)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.ConstantTicks(percentileTicks)
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.YOffs = -vg.Points(12) // below the title
	p.Add(plotter.NewGrid())
	drawn := 0
	for i, g := range groups {
		if g.Hist == nil || g.Hist.TotalCount() < 2 {
			continue
		}
		line, err := plotter.NewLine(percentileCurve(g.Hist))
		if err != nil {
			return fmt.Errorf("plot %s: %w", g.Name, err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(g.Name, line)
		drawn++
	}
	if drawn == 0 {
		return fmt.Errorf("plot %s: no latency recorded", filepath.Base(path))
	}
	return p.Save(plotWidth, plotHeight, path)
}

// barPlot draws one bar per group: the median of stat, with the min-max
// range over rounds as error bars. Groups without the figure are left out.
func barPlot(groups []*Group, stat func(*Group) Stat, title, ylabel, path string) error {
	var vals plotter.Values
	var errs plotter.YErrors
	var names []string
	for _, g := range groups {
		s := stat(g)
		if s.N == 0 {
			continue
		}
		vals = append(vals, s.Median)
		errs = append(errs, struct{ Low, High float64 }{s.Median - s.Min, s.Max - s.Median})
		names = append(names, g.Name)
	}
	if len(vals) == 0 {
		return fmt.Errorf("plot %s: no figures", filepath.Base(path))
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return fmt.Errorf("plot %s: %w", filepath.Base(path), err)
	}
	bars.Color = color.RGBA{R: 74, G: 158, B: 255, A: 255} // the study's carrier blue
	bars.LineStyle.Width = 0
	p.Add(bars)
	xys := make(plotter.XYs, len(vals))
	for i, v := range vals {
		xys[i] = plotter.XY{X: float64(i), Y: v}
	}
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{xys, errs})
	if err != nil {
		return fmt.Errorf("plot %s: %w", filepath.Base(path), err)
	}
	p.Add(eb)
	p.NominalX(names...)
	return p.Save(plotWidth, plotHeight, path)
}
