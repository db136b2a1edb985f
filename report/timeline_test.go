package report

import (
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/latency"
)

// writeHlog writes an interval log of intervals of length step with the
// given latencies (ms) into dir/load.hlog.
func writeHlog(t *testing.T, dir string, intervals [][]float64, step time.Duration) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, HlogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l := latency.NewIntervalLog(f)
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, ms := range intervals {
		h := latency.NewNs()
		for _, v := range ms {
			latency.RecordNs(h, int64(v*1e6))
		}
		from := start.Add(time.Duration(i) * step)
		if err := l.Write(from, from.Add(step), h); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadTimeline(t *testing.T) {
	near := func(got, want float64) bool { return math.Abs(got-want) <= want*0.01 } // HDR keeps 3 digits
	dir := t.TempDir()
	// A steady interval, a stall (nothing completed), then the backlog, at
	// 1 s (HdrHistogram's convention) and at the 100 ms of bench's logs.
	for _, step := range []time.Duration{time.Second, 100 * time.Millisecond} {
		t.Run(step.String(), func(t *testing.T) {
			writeHlog(t, dir, [][]float64{{1, 1, 1, 2}, nil, {300, 900}}, step)
			pts, err := ReadTimeline(filepath.Join(dir, HlogFile))
			if err != nil {
				t.Fatal(err)
			}
			if len(pts) != 3 || pts[0].Start != 0 || pts[0].End != step || pts[2].Start != 2*step || pts[2].End != 3*step ||
				pts[1].Count != 0 || !near(pts[0].P50, 1) || !near(pts[0].Max, 2) || !near(pts[2].P99, 900) || !near(pts[2].P50, 300) {
				t.Errorf("timeline %+v", pts)
			}
			if got := intervalOf(pts); got != step {
				t.Errorf("intervalOf = %v, want %v", got, step)
			}
		})
	}
	if _, err := ReadTimeline(filepath.Join(dir, "missing.hlog")); err == nil {
		t.Error("missing log: no error")
	}
	bad := filepath.Join(dir, "bad.hlog")
	os.WriteFile(bad, []byte("0.0,1.0,1.0,not-a-histogram\n"), 0o644)
	if _, err := ReadTimeline(bad); err == nil {
		t.Error("corrupt log: no error")
	}
}

// The report draws one timeline per configuration that has a log, from its
// first complete run that passed the checks, or marked from a left-out
// one; names those it has none of; and leaves the section out without any
// log.
func TestWriteTimelines(t *testing.T) {
	withLog, leftOut, without, out := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	writeHlog(t, withLog, [][]float64{{1, 2}, {1, 3}, nil, {40, 80}, {2, 2}}, 100*time.Millisecond)
	writeHlog(t, leftOut, [][]float64{{1, 2}}, 100*time.Millisecond)
	rep := &Report{Groups: []*Group{
		{Phase: "fixed", Name: "carrier+ws", Runs: 2, all: []Result{{Dir: without}, {Dir: withLog}}},
		{Phase: "fixed", Name: "nethttp", Runs: 1, all: []Result{{Dir: without}}},
		{Phase: "fixed", Name: "carrier", LeftOut: 1, all: []Result{{Dir: leftOut}}},
	}, LeftOut: []LeftOut{{Result: Result{Dir: leftOut}, Why: "errors"}}}
	drawn := map[string]error{}
	plot := func(name string, draw func(path string) error) string {
		drawn[name] = draw(filepath.Join(out, name))
		return "![" + name + "]\n"
	}
	var b strings.Builder
	rep.writeTimelines(&b, plot)
	md := b.String()
	for _, want := range []string{"## Latency over time", "![timeline-fixed-carrier-ws.png]", "![timeline-fixed-carrier.png]",
		"No timeline for:", "- nethttp, Fixed rate: no run has an interval log\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
	if len(drawn) != 2 {
		t.Errorf("drew %v, want carrier+ws's timeline and carrier's", drawn)
	}
	for _, png := range []string{"timeline-fixed-carrier-ws.png", "timeline-fixed-carrier.png"} {
		if err, ok := drawn[png]; !ok || err != nil {
			t.Fatalf("plot %s: %v (drawn %v)", png, err, drawn)
		}
		checkPNG(t, filepath.Join(out, png))
	}

	b.Reset()
	(&Report{Groups: []*Group{{Phase: "max", Name: "nethttp", all: []Result{{Dir: without}}}}}).writeTimelines(&b, plot)
	if b.Len() != 0 {
		t.Errorf("section without any log: %q", b.String())
	}
	// A log without any latency is not drawn, with the reason.
	empty := t.TempDir()
	writeHlog(t, empty, [][]float64{nil, nil}, time.Second)
	pts, err := ReadTimeline(filepath.Join(empty, HlogFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := timelinePlot(pts, "x", nil, false, 0, filepath.Join(out, "empty.png")); err == nil || !strings.Contains(err.Error(), "no interval has a latency") {
		t.Errorf("empty timeline: %v", err)
	}
}

func TestStalls(t *testing.T) {
	const ms = time.Millisecond
	pt := func(i int, count int64) TimePoint {
		return TimePoint{Start: time.Duration(i) * 100 * ms, End: time.Duration(i+1) * 100 * ms, Count: count}
	}
	for _, tc := range []struct {
		name   string
		points []TimePoint
		want   [][2]float64
	}{
		{"none", []TimePoint{pt(0, 5), pt(1, 3)}, nil},
		{"one interval", []TimePoint{pt(0, 5), pt(1, 0), pt(2, 4)}, [][2]float64{{0.1, 0.2}}},
		{"a run of three, merged", []TimePoint{pt(0, 5), pt(1, 0), pt(2, 0), pt(3, 0), pt(4, 9)}, [][2]float64{{0.1, 0.4}}},
		{"at both ends", []TimePoint{pt(0, 0), pt(1, 2), pt(2, 0)}, [][2]float64{{0, 0.1}, {0.2, 0.3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stalls(tc.points)
			if len(got) != len(tc.want) {
				t.Fatalf("stalls = %v, want %v", got, tc.want)
			}
			for i := range got {
				if math.Abs(got[i][0]-tc.want[i][0]) > 1e-9 || math.Abs(got[i][1]-tc.want[i][1]) > 1e-9 {
					t.Errorf("stalls = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestStallNote(t *testing.T) {
	const ms = time.Millisecond
	pt := func(i int, count int64, p99 float64) TimePoint {
		return TimePoint{Start: time.Duration(i) * 100 * ms, End: time.Duration(i+1) * 100 * ms, Count: count, P99: p99}
	}
	many := []TimePoint{}
	for i := range 20 {
		p99 := 1.0
		if i%2 == 1 {
			p99 = 30
		}
		many = append(many, pt(i, 10, p99))
	}
	for _, tc := range []struct {
		name    string
		points  []TimePoint
		stallMs float64
		spans   [][2]float64
		want    string
	}{
		{"none over", []TimePoint{pt(0, 5, 1), pt(1, 5, 9.9)}, 10, nil, ""},
		{"no threshold", []TimePoint{pt(0, 5, 1), pt(1, 5, 99)}, 0, nil, ""},
		{"one interval", []TimePoint{pt(0, 5, 1), pt(1, 5, 66.6), pt(2, 5, 1)}, 10, [][2]float64{{0.1, 0.2}},
			"Marked (orange): 1 stretch of intervals whose p99 is over 5x the run's p99, 10.00ms: 0.1–0.2 s (p99 66.60ms)."},
		{"a stretch, its worst p99; an empty interval breaks it", []TimePoint{pt(0, 5, 20), pt(1, 5, 40), pt(2, 0, 0), pt(3, 5, 12)}, 10,
			[][2]float64{{0, 0.2}, {0.3, 0.4}},
			"2 stretches of intervals whose p99 is over 5x the run's p99, 10.00ms: 0.0–0.2 s (p99 40.00ms), 0.3–0.4 s (p99 12.00ms)."},
		{"at most 8 listed", many, 10, nil, "1.5–1.6 s (p99 30.00ms), and 2 more."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := spans(tc.points, overStall(tc.stallMs))
			if tc.spans != nil && len(got) != len(tc.spans) {
				t.Errorf("spans %v, want %v", got, tc.spans)
			}
			for i := range tc.spans {
				if i < len(got) && (math.Abs(got[i][0]-tc.spans[i][0]) > 1e-9 || math.Abs(got[i][1]-tc.spans[i][1]) > 1e-9) {
					t.Errorf("spans %v, want %v", got, tc.spans)
				}
			}
			note := stallNote(tc.points, tc.stallMs)
			if (tc.want == "") != (note == "") || !strings.Contains(note, tc.want) {
				t.Errorf("note %q, want %q", note, tc.want)
			}
		})
	}
}

// Of the runs that passed the checks, the timeline draws the first with
// stalls seen, and its caption names the stall's interval; without one,
// the first.
func TestTimelineDrawsStalls(t *testing.T) {
	smooth, stalled, out := t.TempDir(), t.TempDir(), t.TempDir()
	writeHlog(t, smooth, [][]float64{{1, 2}, {1, 2}}, 100*time.Millisecond)
	writeHlog(t, stalled, [][]float64{{1, 2}, {1, 60}, {1, 2}}, 100*time.Millisecond)
	even := summaryOf(t, repeat(1000, 1000)...)
	withStall := summaryOf(t, repeat(1000, 995, 60000, 60000, 60000, 60000, 60000)...) // p99 1 ms, p99.9 60 ms
	g := &Group{Phase: "fixed", Name: "carrier", Runs: 2, all: []Result{
		{Dir: smooth, Summary: Summary{Complete: true, Latency: even}},
		{Dir: stalled, Summary: Summary{Complete: true, Latency: withStall}},
	}}
	rep := &Report{Groups: []*Group{g}}
	tl := rep.timelineOf(g)
	if tl.dir != stalled || !strings.Contains(tl.note, "the first run of carrier that passed the checks and has stalls; stalls seen: p99.9 60.03ms is 60x p99 1.00ms") {
		t.Errorf("timeline of %s: %q, want the stalled run's", tl.dir, tl.note)
	}
	rep.writeTimelines(&strings.Builder{}, func(name string, draw func(path string) error) string {
		if err := draw(filepath.Join(out, name)); err != nil {
			t.Fatal(err)
		}
		return ""
	})
	checkPNG(t, filepath.Join(out, "timeline-fixed-carrier.png"))
	pts, err := ReadTimeline(filepath.Join(tl.dir, HlogFile))
	if err != nil {
		t.Fatal(err)
	}
	if notes := tl.notes(pts); len(notes) != 2 || notes[0] != tl.note ||
		!strings.Contains(notes[1], "over 5x the run's p99, 5.00ms: 0.1–0.2 s (p99 60.03ms)") {
		t.Errorf("caption %q", notes)
	}
	// The stall's interval is shaded orange; a run without one has none.
	if !hasColor(t, filepath.Join(out, "timeline-fixed-carrier.png"), overColor) {
		t.Error("the stalled run's timeline has no orange interval")
	}
	smoothPts, err := ReadTimeline(filepath.Join(smooth, HlogFile))
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(out, "smooth.png")
	if err := timelinePlot(smoothPts, "smooth", nil, false, stallMs(g.all[0].Summary), plain); err != nil {
		t.Fatal(err)
	}
	if hasColor(t, plain, overColor) {
		t.Error("a timeline without a stall interval has orange in it")
	}
	g.all = g.all[:1]
	if tl := rep.timelineOf(g); tl.dir != smooth || !strings.Contains(tl.note, "(none of them has stalls seen)") {
		t.Errorf("timeline without stalls: %s, %q", tl.dir, tl.note)
	}
}

// hasColor says whether the PNG at path has a pixel of colour c.
func hasColor(t *testing.T, path string, c color.Color) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	r0, g0, b0, _ := c.RGBA()
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r == r0 && g == g0 && b == b0 {
				return true
			}
		}
	}
	return false
}
