package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/spindle-lab/spindle/latency"
)

// HlogFile is the load generator's interval log in a result directory
// ("load --hlog": the corrected latency of every interval, in ns).
const HlogFile = "load.hlog"

// TimePoint is the latency of one interval of a run.
type TimePoint struct {
	// Start and End bound the interval, from the start of the first.
	Start, End time.Duration
	// Count is the number of latencies recorded in the interval.
	Count int64
	// P50, P99 and Max are the interval's corrected latencies, ms.
	P50, P99, Max float64
}

// ReadTimeline reads an interval log (latency.ReadIntervalLog) into one
// point per interval.
func ReadTimeline(path string) ([]TimePoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ivs, err := latency.ReadIntervalLog(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	const nsPerMs = 1e6
	out := make([]TimePoint, 0, len(ivs))
	for _, iv := range ivs {
		h := iv.Histogram
		out = append(out, TimePoint{Start: iv.Start.Sub(ivs[0].Start), End: iv.End.Sub(ivs[0].Start), Count: h.TotalCount(),
			P50: float64(h.ValueAtPercentile(50)) / nsPerMs, P99: float64(h.ValueAtPercentile(99)) / nsPerMs,
			Max: float64(h.Max()) / nsPerMs})
	}
	return out, nil
}

// intervalOf is the interval length of a timeline: the longest of its
// intervals (the last one may be shorter, cut by the window's end).
func intervalOf(points []TimePoint) time.Duration {
	var d time.Duration
	for _, t := range points {
		d = max(d, t.End-t.Start)
	}
	return d
}

// stalls are the spans, in seconds, of the runs of intervals of points in
// which no request completed.
func stalls(points []TimePoint) [][2]float64 {
	var out [][2]float64
	for i := 0; i < len(points); i++ {
		if points[i].Count != 0 {
			continue
		}
		j := i
		for j+1 < len(points) && points[j+1].Count == 0 {
			j++
		}
		out = append(out, [2]float64{points[i].Start.Seconds(), points[j].End.Seconds()})
		i = j
	}
	return out
}

// bands shades spans of the x axis over the plot's full height.
type bands struct {
	spans [][2]float64
	color color.Color
}

// Plot implements plot.Plotter.
func (b bands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, s := range b.spans {
		x0, x1 := trX(s[0]), trX(s[1])
		c.FillPolygon(b.color, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
	}
}

// Thumbnail implements plot.Thumbnailer: the legend's swatch.
func (b bands) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.color, []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}})
}

// stallColor shades the intervals without a completed request: a light
// grey the lines stay readable on.
var stallColor = color.Gray{Y: 215}

// maxGlyphs is the most intervals a timeline marks each point of: beyond,
// the glyphs merge into a thick line, and only a lone point between two
// gaps gets one (it has no line to show it).
const maxGlyphs = 100

// timelinePlot draws p50, p99 and max per interval against time, with
// notes under it; an interval without a latency (a stall) breaks the lines
// and is shaded. A left-out run's (marked) lines are grey and labelled so.
func timelinePlot(points []TimePoint, title string, notes []string, marked bool, path string) error {
	return saveTo(path)(timelineChart(points, title, notes, marked))
}

// markedGreys are the lines of a left-out run's timeline, max, p99 and
// p50: greys of 15:1, 7:1 and 4:1 on white, told apart by their dashes.
var markedGreys = []color.Color{color.Gray{Y: 40}, color.Gray{Y: 90}, color.Gray{Y: 130}}

// seriesStyle is the line of a timeline's i-th series: the palette's, or
// grey for a left-out run (marked).
func seriesStyle(i int, marked bool) draw.LineStyle {
	st := style(i, vg.Points(1.5))
	if marked {
		st.Color = markedGreys[i%len(markedGreys)]
	}
	return st
}

// timelineChart is timelinePlot's chart.
func timelineChart(points []TimePoint, title string, notes []string, marked bool) (chart, error) {
	p := linePlot(title, fmt.Sprintf("time (s), at the end of each %v interval", intervalOf(points)), "latency (ms), corrected")
	if st := stalls(points); len(st) > 0 {
		b := bands{st, stallColor}
		p.Add(b)
		p.Legend.Add("no request completed", b)
	}
	var ys []float64
	series := []struct {
		name string
		get  func(TimePoint) float64
	}{{"max", func(t TimePoint) float64 { return t.Max }}, {"p99", func(t TimePoint) float64 { return t.P99 }},
		{"p50", func(t TimePoint) float64 { return t.P50 }}}
	drawn := false
	for i, s := range series {
		// One line per stretch of intervals with latencies: a gap is a stall.
		var seg plotter.XYs
		first := true
		flush := func() error {
			if len(seg) == 0 {
				return nil
			}
			line, pts, err := plotter.NewLinePoints(seg)
			if err != nil {
				return err
			}
			line.LineStyle = seriesStyle(i, marked)
			pts.Color = line.LineStyle.Color
			pts.Radius = vg.Points(1.5)
			p.Add(line)
			if len(points) <= maxGlyphs || len(seg) == 1 {
				p.Add(pts)
			}
			if first {
				p.Legend.Add(seriesLabel(s.name, marked), line)
				first = false
			}
			seg = nil
			drawn = true
			return nil
		}
		for _, t := range points {
			if t.Count == 0 {
				if err := flush(); err != nil {
					return chart{}, err
				}
				continue
			}
			v := s.get(t)
			seg = append(seg, plotter.XY{X: t.End.Seconds(), Y: v})
			ys = append(ys, v)
		}
		if err := flush(); err != nil {
			return chart{}, err
		}
	}
	if !drawn {
		return chart{}, errors.New("no interval has a latency")
	}
	p.X.Max = points[len(points)-1].End.Seconds() // a stall at the end is shaded to the window's end
	setValueAxis(&p.Y, ys)
	legendRoom(&p.Y, ys)
	return chart{p, notes}, nil
}

// seriesLabel is a timeline series' legend entry: "p99", "p99 (left out)".
func seriesLabel(name string, marked bool) string {
	if marked {
		return name + " (left out)"
	}
	return name
}

// legendRoom raises the top of a value axis (setValueAxis) over ys so that
// the data stay in the lower three quarters of the plot, clear of the
// legend at the top left: a timeline's lines run across the whole width,
// under it.
func legendRoom(a *plot.Axis, ys []float64) {
	if _, ok := a.Scale.(plot.LogScale); ok {
		a.Max *= math.Pow(a.Max/a.Min, 1.0/3) // the log range times 4/3
		return
	}
	a.Max = slices.Max(ys) * 4 / 3
}

// timeline is one configuration's latency-over-time plot: the run it draws
// (Dir; "" when it has none, Note says why), whether that run failed a
// check (LeftOut: drawn marked), its title and its caption.
type timeline struct {
	g           *Group
	dir         string
	leftOut     bool
	title, note string
}

// timelineOf is g's timeline. Runs that failed a check are not drawn as
// if they counted: it draws the first complete run of g that passed the
// checks and has an interval log; where g has none, the first left-out
// run that has one, marked (grey, "left out" in the title, legend and
// caption, with the check it failed), since that run's timeline may show
// why it failed; else nothing.
func (r *Report) timelineOf(g *Group) timeline {
	var first *LeftOut
	for _, run := range g.all {
		if _, err := os.Stat(filepath.Join(run.Dir, HlogFile)); err != nil {
			continue
		}
		lo := r.leftOut(run.Dir)
		if lo == nil {
			t := r.newTimeline(g, run.Dir, false)
			t.note = fmt.Sprintf("Drawn: %s, the first run of %s that passed the checks.", filepath.Base(run.Dir), g.Name)
			if g.LeftOut > 0 {
				t.note += fmt.Sprintf(" Of its runs, %s: not drawn (see \"Runs left out\").", failed(g.LeftOut))
			}
			return t
		}
		if first == nil {
			first = lo
		}
	}
	if first != nil {
		t := r.newTimeline(g, first.Dir, true)
		none := fmt.Sprintf("No run of %s that passed the checks has an interval log", g.Name)
		if g.Runs == 0 {
			none = fmt.Sprintf("No run of %s passed the checks", g.Name)
		}
		t.note = fmt.Sprintf("Left out, drawn marked (grey): %s failed a check: %s. %s; this run's figures count in no "+
			"table, plot or verdict.", filepath.Base(first.Dir), first.Why, none)
		return t
	}
	t := timeline{g: g, note: "no run has an interval log"}
	if n := unusedRuns(g, ""); n != "" {
		t.note += " (" + n + ")"
	}
	return t
}

// newTimeline is g's timeline of the run in dir, titled.
func (r *Report) newTimeline(g *Group, dir string, leftOut bool) timeline {
	run := filepath.Base(dir)
	if leftOut {
		run += ", left out"
	}
	return timeline{g: g, dir: dir, leftOut: leftOut,
		title: fmt.Sprintf("Latency over time: %s, %s (%s)", g.Name, r.phaseTitle(g.Phase), run)}
}

// leftOut is the run in dir if it failed a check, else nil.
func (r *Report) leftOut(dir string) *LeftOut {
	i := slices.IndexFunc(r.LeftOut, func(l LeftOut) bool { return l.Dir == dir })
	if i < 0 {
		return nil
	}
	return &r.LeftOut[i]
}

// writeTimelines writes the "Latency over time" section: for every
// configuration of every phase, the interval log of one run drawn (p50,
// p99 and max per interval; timelineOf says which), so that a stall or a
// GC pause shows where it happened; a configuration without a run to draw
// is named, with why. Without any interval log (older result
// directories), the section is left out.
func (r *Report) writeTimelines(b *strings.Builder, plot func(name string, draw func(path string) error) string) {
	var drawn, none []timeline
	for _, g := range r.Groups {
		if t := r.timelineOf(g); t.dir != "" {
			drawn = append(drawn, t)
		} else {
			none = append(none, t)
		}
	}
	if len(drawn) == 0 {
		return
	}
	b.WriteString("## Latency over time\n\nThe corrected latency of each interval (p50, p99, max) of one run per " +
		"configuration, the first that passed the checks, from its " + HlogFile + " (an HdrHistogram interval log the " +
		"HdrHistogram tools read too); a shaded gap is an interval in which no request completed. A configuration none " +
		"of whose runs passed is drawn from its first left-out run, in grey and marked \"left out\".\n\n")
	for _, t := range drawn {
		name := "timeline-" + fileTag(t.g.Phase) + "-" + SafeName(t.g.Name) + ".png"
		b.WriteString(plot(name, func(path string) error {
			pts, err := ReadTimeline(filepath.Join(t.dir, HlogFile))
			if err != nil {
				return err
			}
			return timelinePlot(pts, t.title, []string{t.note}, t.leftOut, path)
		}))
	}
	if len(none) > 0 {
		b.WriteString("\nNo timeline for:\n\n")
	}
	for _, t := range none {
		fmt.Fprintf(b, "- %s, %s: %s\n", t.g.Name, r.phaseTitle(t.g.Phase), t.note)
	}
	b.WriteString("\n")
}

// SafeName makes a configuration name ("carrier+ws") usable in a file or
// directory name.
func SafeName(s string) string {
	return strings.NewReplacer("/", "_", " ", "_", "+", "-").Replace(s)
}
