package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/latency"
)

// writeHlog writes an interval log of 1 s intervals with the given
// latencies (ms) into dir/load.hlog.
func writeHlog(t *testing.T, dir string, intervals [][]float64) {
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
		from := start.Add(time.Duration(i) * time.Second)
		if err := l.Write(from, from.Add(time.Second), h); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadTimeline(t *testing.T) {
	dir := t.TempDir()
	// A steady second, a stall (nothing completed), then the backlog.
	writeHlog(t, dir, [][]float64{{1, 1, 1, 2}, nil, {300, 900}})
	pts, err := ReadTimeline(filepath.Join(dir, HlogFile))
	if err != nil {
		t.Fatal(err)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= want*0.01 } // HDR keeps 3 digits
	if len(pts) != 3 || pts[0].End != time.Second || pts[2].End != 3*time.Second || pts[1].Count != 0 ||
		!near(pts[0].P50, 1) || !near(pts[0].Max, 2) || !near(pts[2].P99, 900) || !near(pts[2].P50, 300) {
		t.Errorf("timeline %+v", pts)
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
// first complete run, and leaves the section out without any.
func TestWriteTimelines(t *testing.T) {
	withLog, without, out := t.TempDir(), t.TempDir(), t.TempDir()
	writeHlog(t, withLog, [][]float64{{1, 2}, {1, 3}, nil, {40, 80}, {2, 2}})
	rep := &Report{Groups: []*Group{
		{Phase: "fixed", Name: "carrier+ws", all: []Result{{Dir: without}, {Dir: withLog}}},
		{Phase: "fixed", Name: "nethttp", all: []Result{{Dir: without}}},
	}}
	drawn := map[string]error{}
	plot := func(name string, draw func(path string) error) string {
		drawn[name] = draw(filepath.Join(out, name))
		return "![" + name + "]\n"
	}
	var b strings.Builder
	rep.writeTimelines(&b, plot)
	md := b.String()
	if !strings.Contains(md, "## Latency over time") || !strings.Contains(md, "timeline-fixed-carrier-ws.png") || strings.Contains(md, "nethttp") {
		t.Errorf("section:\n%s", md)
	}
	if err, ok := drawn["timeline-fixed-carrier-ws.png"]; !ok || err != nil {
		t.Fatalf("plot: %v (drawn %v)", err, drawn)
	}
	checkPNG(t, filepath.Join(out, "timeline-fixed-carrier-ws.png"))

	b.Reset()
	(&Report{Groups: []*Group{{Phase: "max", Name: "nethttp", all: []Result{{Dir: without}}}}}).writeTimelines(&b, plot)
	if b.Len() != 0 {
		t.Errorf("section without any log: %q", b.String())
	}
	// A log without any latency is not drawn, with the reason.
	empty := t.TempDir()
	writeHlog(t, empty, [][]float64{nil, nil})
	pts, err := ReadTimeline(filepath.Join(empty, HlogFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := timelinePlot(pts, "x", filepath.Join(out, "empty.png")); err == nil || !strings.Contains(err.Error(), "no interval has a latency") {
		t.Errorf("empty timeline: %v", err)
	}
}
