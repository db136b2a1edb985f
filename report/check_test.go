package report

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/observe"
)

// summaryOf is the latency summary of values given in µs.
func summaryOf(t *testing.T, us ...int64) *latency.Summary {
	t.Helper()
	h := latency.New()
	for _, v := range us {
		latency.Record(h, v*int64(time.Microsecond))
	}
	s, err := latency.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

// repeat is n copies of v followed by tail.
func repeat(v int64, n int, tail ...int64) []int64 {
	out := make([]int64, 0, n+len(tail))
	for range n {
		out = append(out, v)
	}
	return append(out, tail...)
}

func TestCheck(t *testing.T) {
	other := func(v float64) *float64 { return &v }
	p50 := summaryOf(t, repeat(1300, 100)...) // every request 1.3 ms
	ok := Summary{Complete: true, Rate: 1000, Throughput: 999, Requests: 3000, LoadCPUs: "1", ServerCPUs: "0", Threads: 1,
		Load: &ThreadFigures{CPUs: 0.5, WaitPct: 3}, OtherCPUs: other(0.1), Latency: p50}
	onTime := summaryOf(t, repeat(20, 950, repeat(400, 49, 9000)...)...) // p90 20 µs, p99 400 µs
	late := summaryOf(t, repeat(20, 800, repeat(2000, 200)...)...)       // p90 2 ms
	lateShort := summaryOf(t, repeat(20, 800, repeat(600, 200)...)...)   // p90 600 µs
	max := func(s *Summary) { s.Rate, s.Throughput, s.SendLag = 0, 10, nil }
	tests := []struct {
		name string
		edit func(*Summary)
		want string // part of why; "" passes
	}{
		{"passes", func(*Summary) {}, ""},
		{"max throughput has no rate to achieve", max, ""},
		{"fell behind the rate", func(s *Summary) { s.Throughput = 754 }, "achieved 754 of 1000 req/s (75%, under 95%)"},
		{"at 95% of the rate", func(s *Summary) { s.Throughput = 950 }, ""},
		{"a sweep point past saturation", func(s *Summary) { s.Phase, s.Throughput = "sweep-110", 754 }, ""},
		{"errors", func(s *Summary) { s.Errors = 100 }, "100 errors in 3100 requests"},
		{"few errors", func(s *Summary) { s.Errors = 3 }, ""},
		{"busy machine", func(s *Summary) { s.OtherCPUs = other(0.96) }, "other load on the machine 0.96 CPUs"},
		{"no other-load gauge", func(s *Summary) { s.OtherCPUs = nil }, ""},
		{"no load figures", func(s *Summary) { s.Load = nil }, ""},
		{"two reasons", func(s *Summary) { s.Throughput, s.Errors = 10, 2000 }, "req/s (1%, under 95%); 2000 errors"},

		// A fixed-rate run with a send lag is judged by it alone.
		{"sent on time", func(s *Summary) { s.SendLag = onTime }, ""},
		{"sent on time although its threads waited", func(s *Summary) { s.SendLag, s.Load.WaitPct, s.Load.CPUs = onTime, 40, 0.97 }, ""},
		{"sent late", func(s *Summary) { s.SendLag = late },
			"the load generator sent late: p90 send lag 2.00ms (p99 2.00ms, max 2.00ms) over 650.00us (50% of the p50 1.30ms)"},
		{"sent late by the least bound", func(s *Summary) { s.SendLag, s.Latency = lateShort, summaryOf(t, 500) },
			"p90 send lag 600.00us (p99 600.00us, max 600.00us) over 500.00us (the least bound, 500.00us)"},
		{"under the bound of a slower run", func(s *Summary) { s.SendLag = lateShort }, ""},
		{"no scheduled send", func(s *Summary) { s.SendLag = &latency.Summary{} }, ""},

		// Without a send lag (results from before it), %wait and CPU.
		{"load generator saturated", func(s *Summary) { s.Load.CPUs = 0.97 }, "load generator used 0.97 of its 1 CPU (over 90%): the run is load-bound"},
		{"load generator on two CPUs", func(s *Summary) { s.Load.CPUs, s.LoadCPUs = 0.97, "2-3" }, ""},
		{"load generator waits", func(s *Summary) { s.Load.WaitPct = 40 }, "waited 40% of the time for a CPU (over 25%): the run is load-bound"},

		// Closed loop: the load generator's waiting counts only when the
		// server had CPU to spare.
		{"closed loop, server the bottleneck", func(s *Summary) {
			max(s)
			s.Load.WaitPct, s.Server = 40, &ThreadFigures{CPUs: 0.97}
		}, ""},
		{"closed loop, load-bound", func(s *Summary) {
			max(s)
			s.Load.WaitPct, s.Server = 40, &ThreadFigures{CPUs: 0.60}
		}, "waited 40% of the time for a CPU (over 25%) while the server used 0.60 of its 1 CPU (under 90%): the run is load-bound"},
		{"closed loop, spinning is not work", func(s *Summary) {
			max(s)
			s.Load.WaitPct, s.Server, s.Carrier = 40, &ThreadFigures{CPUs: 1}, &CarrierFigures{SpunCPUs: 0.3}
		}, "while the server used 0.70 of its 1 CPU"},
		{"closed loop, perf stat only", func(s *Summary) {
			max(s)
			s.Load.WaitPct, s.Perf = 40, &observe.PerfSummary{CPUsUtilized: observe.Figure{Value: 0.95}}
		}, ""},
		{"closed loop, capacity is the threads", func(s *Summary) {
			max(s)
			s.Load.WaitPct, s.Server, s.ServerCPUs, s.Threads = 40, &ThreadFigures{CPUs: 0.95}, "0-1", 1
		}, ""},
		{"closed loop, capacity is the CPU set", func(s *Summary) {
			max(s)
			s.Load.WaitPct, s.Server, s.ServerCPUs, s.Threads = 40, &ThreadFigures{CPUs: 0.95}, "0-1", 8
		}, "while the server used 0.95 of its 2 CPUs"},
		{"closed loop, no server figures", func(s *Summary) { max(s); s.Load.WaitPct = 40 }, "waited 40% of the time for a CPU (over 25%): the run is load-bound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			l := *ok.Load
			s.Load = &l
			tt.edit(&s)
			got := Check(s)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("Check = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLeftOutAndLoadFactor leaves one carrier run of the fixture out (its
// rate not achieved) and checks it is listed with why, counted, and out
// of the figures; and the load factor of each fixed configuration.
func TestLeftOutAndLoadFactor(t *testing.T) {
	rs := loadAll(t, filepath.Join("testdata", "compare"))
	for i := range rs {
		if s := &rs[i].Summary; s.Phase == "fixed" && s.Name == unpinned && s.Round == 2 {
			s.Throughput = s.Throughput / 2
		}
	}
	rep, err := Build(rs)
	if err != nil {
		t.Fatal(err)
	}
	g := rep.Find("fixed", unpinned)
	if len(rep.LeftOut) != 1 || g.LeftOut != 1 || g.Runs != 1 || !strings.Contains(rep.LeftOut[0].Why, "achieved") {
		t.Fatalf("left out %+v; carrier fixed runs %d, left out %d", rep.LeftOut, g.Runs, g.LeftOut)
	}
	if runs(g) != "1 (+1 left out)" {
		t.Errorf("runs = %q", runs(g))
	}
	m := rep.Find("max", unpinned)
	want := float64(g.Rate) / m.Throughput.Median
	if got := rep.loadFactor(g); math.Abs(got-want) > 1e-9 || want <= 0 {
		t.Errorf("load factor %v, want %v", got, want)
	}
	if !math.IsNaN(rep.loadFactor(m)) {
		t.Error("a max-throughput group has a load factor")
	}
	m.Throughput.Median = float64(g.Rate) / 0.9
	if got := rep.LoadFactor(g); got != "0.90 (near saturation)" {
		t.Errorf("LoadFactor at 90%% = %q", got)
	}
}

func TestStallsSeen(t *testing.T) {
	// 1000 latencies: p99 the 990th, p99.9 the 999th.
	tail := func(p99, p999 int64) []int64 {
		return repeat(1000, 989, repeat(p99, 9, p999, p999)...)
	}
	for _, tc := range []struct {
		name string
		lat  *latency.Summary
		want string // "" none
	}{
		{"smooth tail", summaryOf(t, tail(2000, 4000)...), ""},
		{"just under the factor", summaryOf(t, tail(2000, 9950)...), ""},
		{"over it", summaryOf(t, tail(2000, 11000)...), "stalls seen: p99.9 11.01ms is 5.5x p99 2.00ms (over 5x)"},
		{"far over it", summaryOf(t, tail(1760, 66600)...), "stalls seen: p99.9 66.62ms is 38x p99 1.76ms (over 5x)"},
		{"too few latencies to tell", summaryOf(t, tail(2000, 66600)[1:]...), ""},
		{"no latency", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Stalls(Summary{Complete: true, Latency: tc.lat})
			if got != tc.want {
				t.Errorf("Stalls = %q, want %q", got, tc.want)
			}
		})
	}
	// The host steal of the load generator's host: named when it had a
	// burst, whoever's stall it was; not when it had none, none was
	// measured, or the load.json is older than the figure.
	burst := &load.HostSteal{Samples: 200, SampleMs: 100, TotalMs: 60, PerCPUMs: map[int]int64{0: 20, 1: 40},
		MaxMs: 40, MaxCPU: 1, MaxAtS: 9.3, MaxSampleMs: 100, Bursts: 2}
	stalled := summaryOf(t, tail(1760, 66600)...)
	const stallText = "stalls seen: p99.9 66.62ms is 38x p99 1.76ms (over 5x)"
	for _, tc := range []struct {
		name  string
		steal *load.HostSteal
		hosts string
		want  string
	}{
		{"a steal burst", burst, "", stallText + "; the host lost 60 ms to its hypervisor in the window (most: cpu1 40 ms in 100 ms at 9.3 s; 2 bursts of 20 ms or more)"},
		{"a burst on a load host", burst, "server h1, mock h1, load h2", stallText + "; the load generator's host lost 60 ms"},
		{"steal, no burst", &load.HostSteal{Samples: 200, SampleMs: 100, TotalMs: 10, MaxMs: 10, MaxSampleMs: 100}, "", stallText},
		{"none", &load.HostSteal{Samples: 200, SampleMs: 100}, "", stallText},
		{"n/a", &load.HostSteal{NA: "open /proc/stat: no such file or directory"}, "", stallText},
		{"an older load.json", nil, "", stallText},
	} {
		got := Stalls(Summary{Complete: true, Latency: stalled, HostSteal: tc.steal, Hosts: tc.hosts})
		if !strings.HasPrefix(got, tc.want) || (tc.want == stallText && got != stallText) {
			t.Errorf("%s: Stalls = %q, want %q", tc.name, got, tc.want)
		}
	}
	// The backend's CPUs: named from MaxBackendBusy on, before the host's
	// steal; not below it, nor when the run lacks the figure; no stall,
	// no words however busy the backend was.
	busy := func(f float64) *float64 { return &f }
	for _, tc := range []struct {
		name    string
		latency *latency.Summary
		backend *float64
		steal   *load.HostSteal
		want    string
	}{
		{"a busy backend", stalled, busy(0.912), nil, stallText + "; the backend's CPUs were 91% busy (90% or more: it queues), so the stalls may be the backend's"},
		{"and a steal burst", stalled, busy(0.95), burst, stallText + "; the backend's CPUs were 95% busy (90% or more: it queues), so the stalls may be the backend's; the host lost 60 ms"},
		{"just under", stalled, busy(0.8949), nil, stallText},
		{"no figure", stalled, nil, nil, stallText},
		{"no stall", summaryOf(t, tail(2000, 3000)...), busy(0.99), nil, ""},
	} {
		got := Stalls(Summary{Complete: true, Latency: tc.latency, BackendBusy: tc.backend, HostSteal: tc.steal})
		if !strings.HasPrefix(got, tc.want) || (tc.want == stallText && got != stallText) || (tc.want == "" && got != "") {
			t.Errorf("%s: Stalls = %q, want %q", tc.name, got, tc.want)
		}
	}
	// The server's GC pauses: named from MaxGCPauseUs on, before the
	// host's steal; not below it, without a pause in the window (NaN), nor
	// when the run lacks the figures.
	for _, tc := range []struct {
		name  string
		rt    *RuntimeFigures
		steal *load.HostSteal
		want  string
	}{
		{"a long pause", &RuntimeFigures{GOMAXPROCS: 2, GCPauseMaxUs: 1110}, nil, stallText + "; the server's GC stopped the world for up to 1.11ms (GOMAXPROCS 2)"},
		{"and a steal burst", &RuntimeFigures{GOMAXPROCS: 2, GCPauseMaxUs: 1110}, burst, stallText + "; the server's GC stopped the world for up to 1.11ms (GOMAXPROCS 2); the host lost 60 ms"},
		{"a short pause", &RuntimeFigures{GOMAXPROCS: 1, GCPauseMaxUs: 83}, nil, stallText},
		{"no pause", &RuntimeFigures{GOMAXPROCS: 1, GCPauseMaxUs: Num(math.NaN())}, nil, stallText},
		{"no figures", nil, nil, stallText},
	} {
		got := Stalls(Summary{Complete: true, Latency: stalled, Runtime: tc.rt, HostSteal: tc.steal})
		if !strings.HasPrefix(got, tc.want) || (tc.want == stallText && got != stallText) {
			t.Errorf("%s: Stalls = %q, want %q", tc.name, got, tc.want)
		}
	}
	// A warning, not a check: the run passes and counts.
	s := Summary{Complete: true, Rate: 1000, Throughput: 1000, Requests: 3000, Latency: summaryOf(t, tail(1760, 66600)...)}
	if Stalls(s) == "" || Check(s) != "" {
		t.Errorf("a run with stalls: Stalls %q, Check %q; want a warning and no check failed", Stalls(s), Check(s))
	}
	rep, err := Build([]Result{{Dir: "r1", Summary: s}})
	if err != nil {
		t.Fatal(err)
	}
	if g := rep.Groups[0]; g.Runs != 1 || len(rep.LeftOut) != 0 || len(rep.Stalled()) != 1 || rep.Stalled()[0].Dir != "r1" {
		t.Errorf("report of a run with stalls: %d runs, left out %v, stalled %v", g.Runs, rep.LeftOut, rep.Stalled())
	}
}

// A lone load.json's host steal reaches the summary and report.md's "Runs
// with stalls"; one written before the field existed reads as before, with
// no steal text.
func TestStallsHostStealFromLoad(t *testing.T) {
	h := latency.New()
	for _, v := range repeat(1000, 989, repeat(1760, 9, 66600, 66600)...) {
		h.RecordValue(v)
	}
	lat, err := latency.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	steal := &load.HostSteal{Samples: 200, SampleMs: 100, TotalMs: 60, PerCPUMs: map[int]int64{0: 20, 1: 40},
		MaxMs: 40, MaxCPU: 1, MaxAtS: 9.3, MaxSampleMs: 100, Bursts: 2}
	for _, tc := range []struct {
		name  string
		steal *load.HostSteal
		want  string // in report.md's "Runs with stalls"; "": no "hypervisor" there
	}{
		{"with host steal", steal, "the host lost 60 ms to its hypervisor in the window (most: cpu1 40 ms in 100 ms at 9.3 s; 2 bursts of 20 ms or more)"},
		{"an older load.json", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, md := loneReport(t, "carrier", lat, tc.steal)
			if (res.Summary.HostSteal == nil) != (tc.steal == nil) {
				t.Fatalf("summary's host steal %+v, load.json's %+v", res.Summary.HostSteal, tc.steal)
			}
			_, section, _ := strings.Cut(md, "## Runs with stalls\n")
			section, _, _ = strings.Cut(section, "\n## ")
			line := section[strings.Index(section, "\n- ")+1:]
			switch {
			case section == "":
				t.Fatalf("no \"Runs with stalls\" in:\n%s", md)
			case tc.want != "" && !strings.Contains(line, "stalls seen: p99.9 66.62ms is 38x p99 1.76ms (over 5x); "+tc.want):
				t.Errorf("the run's line lacks the host steal:\n%s", section)
			case tc.want == "" && strings.Contains(line, "hypervisor"):
				t.Errorf("an older load.json's line names the hypervisor:\n%s", section)
			}
		})
	}
}

// loneReport writes a lone load.json of 1000 requests at 1000/s with lat
// and steal, reads it back as name (LoadResult) and returns it with its
// report.md.
func loneReport(t *testing.T, name string, lat latency.Summary, steal *load.HostSteal) (Result, string) {
	t.Helper()
	lr := &load.Result{SchemaVersion: load.SchemaVersion, Config: load.Config{Rate: 1000}, DurationS: 1,
		Intended: 1000, Completed: 1000, ByStatus: load.StatusCounts{C2xx: 1000}, Sent: 1000, AchievedRate: 1000,
		Corrected: lat, Uncorrected: lat, HostSteal: steal}
	path := filepath.Join(t.TempDir(), "load.json")
	if err := WriteJSON(path, lr); err != nil {
		t.Fatal(err)
	}
	res, err := LoadResult(path, name)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Build([]Result{res})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteMarkdown(&b, Options{}, func(string, func(string) error) string { return "" }); err != nil {
		t.Fatal(err)
	}
	return res, b.String()
}

// A report of a lone load result says why each server figure is missing,
// in every cell: the server CPUs cell was blank and the Go runtime
// columns after the first said "n/a" alone.
func TestLoneLoadResultSaysWhy(t *testing.T) {
	h := latency.New()
	h.RecordValue(1000)
	lat, err := latency.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	_, md := loneReport(t, "lone", lat, nil)
	if !strings.Contains(md, "| lone | n/a (a lone load result) | 1 | 1000 |") {
		t.Errorf("the fixed-rate table's server CPUs cell does not say why:\n%s", md)
	}
	if strings.Contains(md, "| n/a |") {
		t.Errorf("report.md has an n/a cell without its reason:\n%s", md)
	}
}
