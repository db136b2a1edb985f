package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/spindle-lab/spindle/latency"
)

// HlogFile is the load generator's interval log in a result directory
// ("load --hlog": the corrected latency of every interval, in ns).
const HlogFile = "load.hlog"

// TimePoint is the latency of one interval of a run.
type TimePoint struct {
	// End is the interval's end, from the start of the first interval.
	End time.Duration
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
		out = append(out, TimePoint{End: iv.End.Sub(ivs[0].Start), Count: h.TotalCount(),
			P50: float64(h.ValueAtPercentile(50)) / nsPerMs, P99: float64(h.ValueAtPercentile(99)) / nsPerMs,
			Max: float64(h.Max()) / nsPerMs})
	}
	return out, nil
}

// timelinePlot draws p50, p99 and max per interval against time; an
// interval without a latency (a stall) breaks the lines.
func timelinePlot(points []TimePoint, title, path string) error {
	p := linePlot(title, "time (s), at each interval's end", "latency (ms), corrected")
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
			line.LineStyle = style(i, vg.Points(1.5))
			pts.Color = palette[i%len(palette)]
			pts.Radius = vg.Points(1.5)
			p.Add(line, pts)
			if first {
				p.Legend.Add(s.name, line)
				first = false
			}
			seg = nil
			drawn = true
			return nil
		}
		for _, t := range points {
			if t.Count == 0 {
				if err := flush(); err != nil {
					return fmt.Errorf("plot %s: %w", filepath.Base(path), err)
				}
				continue
			}
			v := s.get(t)
			seg = append(seg, plotter.XY{X: t.End.Seconds(), Y: v})
			ys = append(ys, v)
		}
		if err := flush(); err != nil {
			return fmt.Errorf("plot %s: %w", filepath.Base(path), err)
		}
	}
	if !drawn {
		return fmt.Errorf("plot %s: no interval has a latency", filepath.Base(path))
	}
	setValueAxis(&p.Y, ys)
	return p.Save(plotWidth, plotHeight, path)
}

// writeTimelines writes the "Latency over time" section: for every
// configuration of every phase, the interval log of its first complete run
// drawn (p50, p99 and max per interval), so that a stall or a GC pause
// shows where it happened. Runs without a log (older result directories)
// are skipped; without any, the section is left out.
func (r *Report) writeTimelines(b *strings.Builder, plot func(name string, draw func(path string) error) string) {
	type entry struct {
		g   *Group
		dir string
	}
	var es []entry
	for _, g := range r.Groups {
		for _, run := range g.all {
			if _, err := os.Stat(filepath.Join(run.Dir, HlogFile)); err == nil {
				es = append(es, entry{g, run.Dir})
				break
			}
		}
	}
	if len(es) == 0 {
		return
	}
	b.WriteString("## Latency over time\n\nThe corrected latency of each interval (p50, p99, max) of one run per " +
		"configuration, from its " + HlogFile + " (an HdrHistogram interval log the HdrHistogram tools read too); " +
		"a gap is an interval in which no request completed.\n\n")
	for _, e := range es {
		name := "timeline-" + fileTag(e.g.Phase) + "-" + SafeName(e.g.Name) + ".png"
		title := fmt.Sprintf("Latency over time: %s, %s (%s)", e.g.Name, r.phaseTitle(e.g.Phase), filepath.Base(e.dir))
		b.WriteString(plot(name, func(path string) error {
			pts, err := ReadTimeline(filepath.Join(e.dir, HlogFile))
			if err != nil {
				return err
			}
			return timelinePlot(pts, title, path)
		}))
	}
	b.WriteString("\n")
}

// SafeName makes a configuration name ("carrier+ws") usable in a file or
// directory name.
func SafeName(s string) string {
	return strings.NewReplacer("/", "_", " ", "_", "+", "-").Replace(s)
}
