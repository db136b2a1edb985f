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
	return spans(points, func(t TimePoint) bool { return t.Count == 0 })
}

// spans are the spans, in seconds, of the runs of consecutive intervals of
// points that in holds for.
func spans(points []TimePoint, in func(TimePoint) bool) [][2]float64 {
	var out [][2]float64
	for i := 0; i < len(points); i++ {
		if !in(points[i]) {
			continue
		}
		j := i
		for j+1 < len(points) && in(points[j+1]) {
			j++
		}
		out = append(out, [2]float64{points[i].Start.Seconds(), points[j].End.Seconds()})
		i = j
	}
	return out
}

// overStall says whether an interval's p99 is over stallMs (ms; 0: no
// threshold), StallFactor times its run's p99: a stall's interval.
func overStall(stallMs float64) func(TimePoint) bool {
	return func(t TimePoint) bool { return stallMs > 0 && t.Count > 0 && t.P99 > stallMs }
}

// stallMs is the threshold of a run's stall intervals: StallFactor times
// its corrected p99, in ms; 0 without a latency.
func stallMs(s Summary) float64 {
	if s.Latency == nil || s.Latency.Count == 0 {
		return 0
	}
	return StallFactor * float64(s.Latency.PercentilesUs[latency.PercentileKey(99)]) / 1000
}

// maxListed is the most stall intervals a timeline's caption lists.
const maxListed = 8

// stallNote is the caption of a timeline's stall intervals (over
// stallMs): each span's times and its worst p99; "" without any.
func stallNote(points []TimePoint, stallMs float64) string {
	over := overStall(stallMs)
	ss := spans(points, over)
	if len(ss) == 0 {
		return ""
	}
	var parts []string
	for _, sp := range ss[:min(len(ss), maxListed)] {
		worst := 0.0
		for _, t := range points {
			if over(t) && t.Start.Seconds() >= sp[0] && t.End.Seconds() <= sp[1] {
				worst = max(worst, t.P99)
			}
		}
		parts = append(parts, fmt.Sprintf("%.1f–%.1f s (p99 %s)", sp[0], sp[1], fmtMs(worst)))
	}
	if len(ss) > maxListed {
		parts = append(parts, fmt.Sprintf("and %d more", len(ss)-maxListed))
	}
	return fmt.Sprintf("Marked (orange): %s whose p99 is over %gx the run's p99, %s: %s.",
		Count(len(ss), "stretch of intervals", "stretches of intervals"), StallFactor, fmtMs(stallMs), strings.Join(parts, ", "))
}

// fmtMs renders a latency in ms as the load generator's text does.
func fmtMs(ms float64) string { return latency.FormatTimeUs(ms * 1000) }

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
// grey the lines stay readable on; overColor those whose p99 is over
// StallFactor times the run's, a light orange (the p99 line's vermillion
// at a fifth of its strength); overLine is the threshold's line, the grey
// of the latency–load plot's objective.
var (
	stallColor = color.Gray{Y: 215}
	overColor  = color.RGBA{247, 223, 204, 255}
	overLine   = color.Gray{Y: 120}
)

// maxGlyphs is the most intervals a timeline marks each point of: beyond,
// the glyphs merge into a thick line, and only a lone point between two
// gaps gets one (it has no line to show it).
const maxGlyphs = 100

// timelinePlot draws p50, p99 and max per interval against time, with
// notes under it; an interval without a latency (a stall) breaks the lines
// and is shaded grey, one whose p99 is over stallMs (ms; 0: none) is
// shaded orange under a line at stallMs. A left-out run's (marked) lines
// are grey and labelled so.
func timelinePlot(points []TimePoint, title string, notes []string, marked bool, stallMs float64, path string) error {
	return saveTo(path)(timelineChart(points, title, notes, marked, stallMs))
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
func timelineChart(points []TimePoint, title string, notes []string, marked bool, stallMs float64) (chart, error) {
	p := linePlot(title, fmt.Sprintf("time (s), at the end of each %v interval", intervalOf(points)), "latency (ms), corrected")
	if st := stalls(points); len(st) > 0 {
		b := bands{st, stallColor}
		p.Add(b)
		p.Legend.Add("no request completed", b)
	}
	over := spans(points, overStall(stallMs))
	if len(over) > 0 {
		b := bands{over, overColor}
		p.Add(b)
		p.Legend.Add(fmt.Sprintf("p99 over %gx the run's p99", StallFactor), b)
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
	if len(over) > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: stallMs}, {X: p.X.Max, Y: stallMs}})
		if err != nil {
			return chart{}, err
		}
		l.Color, l.Dashes = overLine, []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%gx the run's p99 (%s)", StallFactor, fmtMs(stallMs)), l)
	}
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
// (dir and sum; dir "" when it has none, note says why), whether that run
// failed a check (leftOut: drawn marked), its title and its caption.
type timeline struct {
	g           *Group
	dir         string
	sum         Summary
	leftOut     bool
	title, note string
}

// timelineOf is g's timeline. Runs that failed a check are not drawn as
// if they counted: it draws, of g's complete runs that passed the checks
// and have an interval log, the first with stalls seen (Stalls), since
// that run shows a reader the stall, else the first; where g has none,
// the first left-out run that has one, marked (grey, "left out" in the
// title, legend and caption, with the check it failed), since that run's
// timeline may show why it failed; else nothing.
func (r *Report) timelineOf(g *Group) timeline {
	var first *LeftOut
	var passed *Result
	for _, run := range g.all {
		if _, err := os.Stat(filepath.Join(run.Dir, HlogFile)); err != nil {
			continue
		}
		if lo := r.leftOut(run.Dir); lo != nil {
			if first == nil {
				first = lo
			}
			continue
		}
		if why := Stalls(run.Summary); why != "" {
			t := r.newTimeline(g, run, false)
			t.note = fmt.Sprintf("Drawn: %s, the first run of %s that passed the checks and has stalls; %s.",
				filepath.Base(run.Dir), g.Name, why)
			return t.withLeftOut()
		}
		if passed == nil {
			passed = &run
		}
	}
	if passed != nil {
		t := r.newTimeline(g, *passed, false)
		t.note = fmt.Sprintf("Drawn: %s, the first run of %s that passed the checks (none of them has stalls seen).",
			filepath.Base(passed.Dir), g.Name)
		return t.withLeftOut()
	}
	if first != nil {
		t := r.newTimeline(g, first.Result, true)
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

// withLeftOut adds to a drawn run's note how many of its group's runs
// failed a check and are not drawn.
func (t timeline) withLeftOut() timeline {
	if t.g.LeftOut > 0 {
		t.note += fmt.Sprintf(" Of its runs, %s: not drawn (see \"Runs left out\").", failed(t.g.LeftOut))
	}
	return t
}

// notes are the caption of t drawn from points: which run and why, and
// its stall intervals (stallNote) if any.
func (t timeline) notes(points []TimePoint) []string {
	if n := stallNote(points, stallMs(t.sum)); n != "" {
		return []string{t.note, n}
	}
	return []string{t.note}
}

// newTimeline is g's timeline of run, titled.
func (r *Report) newTimeline(g *Group, run Result, leftOut bool) timeline {
	name := filepath.Base(run.Dir)
	if leftOut {
		name += ", left out"
	}
	return timeline{g: g, dir: run.Dir, sum: run.Summary, leftOut: leftOut,
		title: fmt.Sprintf("Latency over time: %s, %s (%s)", g.Name, r.phaseTitle(g.Phase), name)}
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
	fmt.Fprintf(b, "## Latency over time\n\nThe corrected latency of each interval (p50, p99, max) of one run per "+
		"configuration, from its "+HlogFile+" (an HdrHistogram interval log the HdrHistogram tools read too): of the "+
		"runs that passed the checks, the first with stalls seen (see \"Runs with stalls\"), else the first. A grey "+
		"gap is an interval in which no request completed; an orange one an interval whose p99 is over %gx the run's "+
		"p99, its times in the caption. A configuration none of whose runs passed is drawn from its first left-out "+
		"run, in grey and marked \"left out\".\n\n", StallFactor)
	for _, t := range drawn {
		name := "timeline-" + fileTag(t.g.Phase) + "-" + SafeName(t.g.Name) + ".png"
		b.WriteString(plot(name, func(path string) error {
			pts, err := ReadTimeline(filepath.Join(t.dir, HlogFile))
			if err != nil {
				return err
			}
			return timelinePlot(pts, t.title, t.notes(pts), t.leftOut, stallMs(t.sum), path)
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
