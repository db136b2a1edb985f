package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// leftOutFixture is sweepFixture with runs that fail a check (errors):
// one of carrier's per phase, and carrier+uring's only run per phase.
// Their latency (400 ms and up) and throughput (99999 req/s) are far from
// every valid run's (under 100 ms, under 10000 req/s), so a plot that draws
// them shows it. carrier's max-phase runs, the left-out one first, have
// interval logs of the same latencies, and so has carrier+uring's.
func leftOutFixture(t *testing.T) *Report {
	rs := sweepFixture(t)
	const uring = "carrier+uring"
	for _, phase := range []string{"max", "sweep-025", "sweep-050", "sweep-075", "sweep-100"} {
		rate := map[string]int{"sweep-025": 2000, "sweep-050": 4000, "sweep-075": 6000, "sweep-100": 8000}[phase]
		for _, name := range []string{unpinned, uring} {
			r := sweepRun(t, name, phase, 3, rate, 99999, 400_000, 900_000)
			r.Summary.Errors = r.Summary.Requests // fails Check: over MaxErrorShare
			r.Summary.Started = time.Unix(int64(rate), 0)
			rs = append(rs, r)
		}
	}
	for i := range rs {
		s := &rs[i].Summary
		if s.Name != unpinned && s.Name != uring || s.Phase != "max" {
			continue
		}
		rs[i].Dir = t.TempDir()
		ms := []float64{1, 2, 5}
		if s.Errors > 0 {
			ms = []float64{400, 900}
		}
		writeHlog(t, rs[i].Dir, [][]float64{ms, ms}, time.Second)
	}
	rep, err := Build(rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.LeftOut) != 10 {
		t.Fatalf("%d runs left out, want 10", len(rep.LeftOut))
	}
	return rep
}

// Every plot that draws runs leaves out those that failed a check, says so
// in its caption, and names the configurations it has no valid run of:
// the figures drawn are all the valid runs' (under 200 ms, under 99999
// req/s), never the left-out runs'.
func TestLeftOutNotDrawn(t *testing.T) {
	rep := leftOutFixture(t)
	var maxGroups []*Group
	for _, g := range rep.Groups {
		if g.Phase == PhaseMax {
			maxGroups = append(maxGroups, g)
		}
	}
	const noURing = "Not drawn, no valid run: carrier+uring (1 left out)."
	for _, tc := range []struct {
		name  string
		draw  func(t *testing.T) (ys []float64, notes []string)
		limit float64 // every value drawn is under it
		want  []string
	}{
		{"latency by percentile", func(t *testing.T) ([]float64, []string) {
			c, err := latencyChart(maxGroups, "t")
			if err != nil {
				t.Fatal(err)
			}
			var ys []float64
			for _, g := range maxGroups {
				rounds, med, err := latencyCurves(g)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range append(rounds, med) {
					for _, xy := range r {
						ys = append(ys, xy.Y)
					}
				}
			}
			return ys, c.notes
		}, 200, []string{"Drawn: only the runs that passed the checks; 2 runs failed one: not drawn", noURing}},
		{"bars", func(t *testing.T) ([]float64, []string) {
			stat := func(g *Group) Stat { return g.Throughput }
			c, err := barChart(maxGroups, stat, 0, "t", "req/s")
			if err != nil {
				t.Fatal(err)
			}
			var ys []float64
			for _, b := range bars(maxGroups, stat, 0) {
				ys = append(ys, b.median, b.lo, b.hi)
			}
			return ys, c.notes
		}, 99999, []string{"2 runs failed one: not drawn", noURing}},
		{"latency against load", func(t *testing.T) ([]float64, []string) {
			cs := rep.Curves(DefaultSLOP99)
			c, err := curveChart(cs, DefaultSLOP99)
			if err != nil {
				t.Fatal(err)
			}
			var ys []float64
			for _, cv := range cs {
				p50, p99 := curveLines(cv)
				for _, xy := range append(p50, p99...) {
					ys = append(ys, xy.Y)
				}
			}
			return ys, c.notes
		}, 200, []string{"4 runs failed one: not drawn"}},
		{"timeline", func(t *testing.T) ([]float64, []string) {
			tl := rep.timelineOf(rep.Find(PhaseMax, unpinned))
			if tl.dir == "" || tl.leftOut {
				t.Fatalf("timeline %+v, want a run that passed", tl)
			}
			pts, err := ReadTimeline(filepath.Join(tl.dir, HlogFile))
			if err != nil {
				t.Fatal(err)
			}
			c, err := timelineChart(pts, tl.title, []string{tl.note}, tl.leftOut, stallMs(tl.sum))
			if err != nil {
				t.Fatal(err)
			}
			var ys []float64
			for _, p := range pts {
				ys = append(ys, p.P50, p.P99, p.Max)
			}
			return ys, c.notes
		}, 200, []string{"the first run of carrier that passed the checks (none of them has stalls seen). Of its runs, 1 run failed one: not drawn"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ys, notes := tc.draw(t)
			if len(ys) == 0 {
				t.Fatal("nothing drawn")
			}
			for _, y := range ys {
				if y >= tc.limit {
					t.Fatalf("drew %g, a left-out run's figure (valid ones are under %g)", y, tc.limit)
				}
			}
			caption := strings.Join(notes, "\n")
			for _, w := range tc.want {
				if !strings.Contains(caption, w) {
					t.Errorf("caption %q lacks %q", caption, w)
				}
			}
		})
	}
	// A configuration whose runs all failed a check has its first left-out
	// run's timeline, marked: "left out" in the title and the caption, with
	// the check it failed, and grey lines.
	tl := rep.timelineOf(rep.Find(PhaseMax, "carrier+uring"))
	if tl.dir == "" || !tl.leftOut || !strings.HasSuffix(tl.title, ", left out)") ||
		!strings.HasPrefix(tl.note, "Left out, drawn marked (grey): ") || !strings.Contains(tl.note, "errors in") ||
		!strings.Contains(tl.note, "No run of carrier+uring passed the checks;") {
		t.Errorf("carrier+uring's timeline: %+v", tl)
	}
	if _, err := timelineChart([]TimePoint{{End: time.Second, Count: 1, P50: 1, P99: 2, Max: 3}}, tl.title, []string{tl.note}, tl.leftOut, stallMs(tl.sum)); err != nil {
		t.Error(err)
	}
	for i := range 3 {
		c := seriesStyle(i, true).Color
		r, g, b, _ := c.RGBA()
		if r != g || g != b || slices.Contains(palette, c) || contrast(luminance(linearRGB(c)), 1) < minContrast {
			t.Errorf("series %d of a left-out run: %v, want a grey of %v:1 or more on white, none of the palette's", i, c, minContrast)
		}
		if seriesStyle(i, false).Color != palette[i] || seriesLabel("p99", true) != "p99 (left out)" || seriesLabel("p99", false) != "p99" {
			t.Errorf("series %d: %v, %q", i, seriesStyle(i, false).Color, seriesLabel("p99", true))
		}
	}
}

func TestMissingNotes(t *testing.T) {
	groups := []*Group{
		{Name: "nethttp", Phase: "max", Runs: 2},
		{Name: "carrier", Phase: "max", Runs: 1, LeftOut: 1},
		{Name: "carrier+ws", Phase: "max", LeftOut: 3},
		{Name: "carrier+uring", Phase: "max", LeftOut: 2, Incomplete: 1},
		{Name: "carrier+uring", Phase: "fixed", LeftOut: 1}, // the same name again: listed once
	}
	for _, tc := range []struct {
		name  string
		drawn func(*Group) bool
		want  []string
	}{
		{"all drawn", func(*Group) bool { return true }, nil},
		{"the valid ones drawn", func(g *Group) bool { return g.Runs > 0 },
			[]string{"Not drawn, no valid run: carrier+ws (3 left out), carrier+uring (2 left out, 1 incomplete)."}},
		{"one without the figure", func(g *Group) bool { return g.Runs > 0 && g.Name != "carrier" }, []string{
			"Not drawn, no valid run: carrier+ws (3 left out), carrier+uring (2 left out, 1 incomplete).",
			"Not drawn, no latency recorded: carrier."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := missingNotes(groups, tc.drawn, "no latency recorded")
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("missingNotes = %q, want %q", got, tc.want)
			}
		})
	}
	if got := drawnNote(groups[:1]); got != "Drawn: every complete run (all passed the checks)." {
		t.Errorf("drawnNote without a left-out run: %q", got)
	}
	if got := drawnNote(groups); !strings.Contains(got, "7 runs failed one: not drawn") {
		t.Errorf("drawnNote: %q", got)
	}
	if err := noData("no figures", groups[2:]); err == nil || err.Error() != "no run passed the checks (6 left out, 1 incomplete)" {
		t.Errorf("noData without a valid run: %v", err)
	}
	if err := noData("no figures", groups); err == nil || err.Error() != "no figures" {
		t.Errorf("noData: %v", err)
	}
}

func TestWrap(t *testing.T) {
	sty := captionStyle(plot.New())
	word := sty.Width("word")
	for _, tc := range []struct {
		name  string
		s     string
		width vg.Length
		want  []string
	}{
		{"empty", "", 100, nil},
		{"fits", "a few words", 10 * word, []string{"a few words"}},
		{"two lines", "word word word word", 2.5 * word, []string{"word word", "word word"}},
		{"a long word alone", "a extraordinarily b", word, []string{"a", "extraordinarily", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wrap(sty, tc.s, tc.width); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("wrap(%q, %v) = %q, want %q", tc.s, tc.width, got, tc.want)
			}
		})
	}
}

// A chart's caption goes under the plot, in the image's size.
func TestChartSave(t *testing.T) {
	p := linePlot("t", "x", "y")
	path := filepath.Join(t.TempDir(), "c.png")
	long := strings.Repeat("a caption long enough to wrap ", 10)
	if err := (chart{p, []string{long, "second note"}}).save(path); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, path)
	if err := (chart{p, nil}).save(filepath.Join(t.TempDir(), "c.unknown")); err == nil {
		t.Error("an unknown format: no error")
	}
}
