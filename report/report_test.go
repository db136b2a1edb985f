package report

import (
	"bytes"
	"errors"
	"flag"
	"image/png"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/observe"
)

var update = flag.Bool("update", false, "rewrite the golden report.md files in testdata")

func loadAll(t *testing.T, root string) []Result {
	t.Helper()
	dirs, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	var rs []Result
	for _, d := range dirs {
		r, err := Load(d)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

// TestGolden rebuilds the reports of testdata/compare (written by hand from
// the schema, with an interrupted run, runtime figures in the fixed phase
// but not the max one, as an older result has none, and a run with a
// stall: fixed/r2-03-carrier's latencies with six of 21-25 ms added, and
// an interval log of them, the stall's in one interval) and testdata/dev2vcpu (two rounds of
// a real "spindle compare" on the 2-vCPU development machine) and compares
// report.md with testdata/NAME.golden.md (go test ./report -update
// rewrites them).
func TestGolden(t *testing.T) {
	for _, name := range []string{"compare", "dev2vcpu"} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			rep, err := Write(out, loadAll(t, filepath.Join("testdata", name)), Options{Title: "spindle compare", Preamble: "Layout: fixture."})
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(out, File))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".golden.md")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("report.md differs from %s (run with -update after checking):\n%s", golden, got)
			}
			if name == "compare" && len(rep.Incomplete) == 0 {
				t.Error("the fixture's interrupted run was not listed as incomplete")
			}
			var fj FindingsJSON
			err = latency.ReadJSONFile(filepath.Join(out, FindingsFile), &fj)
			fs := fj.Findings
			if err != nil || len(fs) != 6 || fs[0].Claim == "" || fs[0].Verdict == "" {
				t.Errorf("%s: %v, %+v", FindingsFile, err, fs)
			}
			if name == "dev2vcpu" {
				// Its runs were made while other work took about a CPU of
				// the two: every one is left out, so nothing is plotted.
				if len(rep.LeftOut) != rep.Results || !strings.Contains(rep.LeftOut[0].Why, "other load") {
					t.Errorf("dev2vcpu: %d of %d runs left out, want all for other load", len(rep.LeftOut), rep.Results)
				}
				return
			}
			if st := rep.Stalled(); len(st) != 1 || runLabel(st[0].Result) != "fixed/r2-03-carrier" {
				t.Errorf("runs with stalls %+v, want the fixture's fixed/r2-03-carrier", st)
			}
			for _, png := range []string{"latency-max.png", "latency-fixed.png", "throughput.png", "cpu-fixed.png", "cswitch-fixed.png",
				"timeline-fixed-carrier.png"} {
				checkPNG(t, filepath.Join(out, png))
			}
		})
	}
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 200 {
		t.Errorf("%s: %v is too small", path, b)
	}
}

func TestStat(t *testing.T) {
	s := statOf([]float64{3, 1, 2})
	if s.Median != 2 || s.Min != 1 || s.Max != 3 || s.N != 3 {
		t.Errorf("statOf = %+v", s)
	}
	if got := s.Format(1, ""); got != "2.0 (1.0–3.0)" {
		t.Errorf("Format = %q", got)
	}
	if got := statOf([]float64{1, 4}).Median; got != 2.5 {
		t.Errorf("even median = %v", got)
	}
	if got := statOf(nil).Format(1, "perf not installed"); got != "n/a (perf not installed)" {
		t.Errorf("empty stat = %q", got)
	}
}

func TestFindingsNotMeasurable(t *testing.T) {
	rep, err := Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings() {
		if f.Verdict != NotMeasurable || f.Figures == "" {
			t.Errorf("empty report: %+v", f)
		}
	}
}

func TestFindingsPinningOneCPU(t *testing.T) {
	rep, err := Build(loadAll(t, filepath.Join("testdata", "compare")))
	if err != nil {
		t.Fatal(err)
	}
	fs := rep.Findings()
	// The fixture's server has one CPU: unpinned carriers cannot migrate,
	// so claim 1's mechanism cannot act, as claim 2's cannot.
	if fs[0].Verdict != NotMeasurable || !strings.Contains(fs[0].Figures, "cannot migrate") ||
		!strings.Contains(fs[0].Figures, "p50 carrier 0.94") {
		t.Errorf("claim 1 on one server CPU: %+v", fs[0])
	}
	if fs[1].Verdict != NotMeasurable || !strings.Contains(fs[1].Figures, "no complete run of the configuration carrier+pinning") {
		t.Errorf("claim 2 without a pinning run: %+v", fs[1])
	}
	// Fewer switches (8200 vs 21525, firmly) and CPUs 0.97 vs 1.00: both
	// rounds agree, but 3% is under the CPUs' run-to-run spread, so the
	// CPU part, and with it the claim, is confirmed weakly.
	if fs[2].Grade() != "confirmed (weak; decided by CPUs)" || len(fs[2].Parts) != 2 ||
		fs[2].Parts[0].Verdict != Confirmed || fs[2].Parts[0].Weak || !fs[2].Parts[1].Weak ||
		!strings.Contains(fs[2].Figures, "CPUs weak: the difference (1.03x) is under the CPUs run-to-run spread") {
		t.Errorf("claim 3: %+v", fs[2])
	}
	if fs[5].Verdict != Confirmed {
		t.Errorf("claim 6: %+v", fs[5])
	}
}

func TestDiscoverErrors(t *testing.T) {
	if _, err := Discover(t.TempDir()); err == nil {
		t.Error("Discover of an empty directory succeeded")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil {
		t.Error("Load of a broken summary.json succeeded")
	}
	// A summary without a field every run writes is refused, naming the
	// file and the field: "{}" made a report with a nameless configuration.
	for _, tc := range []struct{ json, field string }{
		{`{}`, `"name"`},
		{`{"name": "carrier", "started": "2026-11-30T04:01:00Z"}`, `"mode"`},
		{`{"name": "carrier", "mode": "carrier"}`, `"started"`},
	} {
		if err := os.WriteFile(filepath.Join(dir, SummaryFile), []byte(tc.json), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir)
		if !errors.Is(err, ErrIncompleteSummary) || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), filepath.Join(dir, SummaryFile)) {
			t.Errorf("Load of %s: %v, want the file and its missing %s", tc.json, err, tc.field)
		}
	}
}

// TestRatioCPUsFromProc checks that without perf stat the CPU ratio comes
// from the /proc sampling, as the tables' CPU figures do, rather than
// reading as "no paired rounds".
func TestRatioCPUsFromProc(t *testing.T) {
	rs := loadAll(t, filepath.Join("testdata", "compare"))
	for i := range rs {
		rs[i].Summary.Perf = nil
	}
	rep, err := Build(rs)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.writeRatios(&b)
	var row string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "| carrier |") {
			row = l
		}
	}
	cells := strings.Split(row, "|")
	if len(cells) != 7 {
		t.Fatalf("no carrier row in:\n%s", b.String())
	}
	if got := strings.TrimSpace(cells[5]); strings.HasPrefix(got, "n/a") {
		t.Errorf("CPU ratio without perf stat = %q; want a figure from /proc\n%s", got, b.String())
	}
	if g := rep.Find("fixed", "carrier"); g.CPUSource != sourceProc || g.CPUs.N == 0 {
		t.Errorf("carrier CPUs: source %q, %+v", g.CPUSource, g.CPUs)
	}
}

// TestFindingsSwitchesWhy checks that the context-switch claim says why its
// figures are missing, from the runs' own reasons.
func TestFindingsSwitchesWhy(t *testing.T) {
	rs := loadAll(t, filepath.Join("testdata", "compare"))
	for i := range rs {
		rs[i].Summary.Perf, rs[i].Summary.Server = nil, nil
		rs[i].Summary.NA = map[string]string{"perf-stat": "perf not installed", "threads": "off (--no-pidstat)"}
	}
	rep, err := Build(rs)
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Findings()[2]
	if f.Verdict != NotMeasurable || !strings.Contains(f.Figures, "perf not installed") || !strings.Contains(f.Figures, "--no-pidstat") {
		t.Errorf("claim 3 without figures: %+v", f)
	}
}

// TestFindingsMediansAloneDoNotDecide checks claim 1 on each side of the
// rule: the carrier's p50 median above nethttp's with one round on each
// side of it is inconclusive; both rounds above is confirmed.
func TestFindingsMediansAloneDoNotDecide(t *testing.T) {
	tests := []struct {
		name   string
		p50    map[int]int64 // carrier's fixed-rate p50 by round, µs
		want   string
		detail string
	}{
		// One round far above nethttp's (as far as the study's 3.17x), one
		// below: no order, and the study's difference not excluded.
		{"rounds disagree", map[int]int64{1: 4000, 2: 940}, Inconclusive, "p50 inconclusive: carrier 2.47 (0.94–4.00), nethttp 1.18 (1.15–1.21); carrier/nethttp 2.09"},
		// No order, and no round comes near the study's difference: its
		// finding does not reproduce, a weak refutation.
		{"rounds disagree, short of the study", map[int]int64{1: 2000, 2: 940}, Refuted,
			"allow at most 1.74x in the claimed direction, short of the study's 3.17x: its difference does not reproduce here"},
		{"rounds agree", map[int]int64{1: 2000, 2: 1800}, Confirmed, "p50 carrier 1.90 (1.80–2.00) ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := loadAll(t, filepath.Join("testdata", "compare"))
			for i := range rs {
				s := &rs[i].Summary
				// Two server CPUs, so that claim 1 can be measured.
				s.ServerCPUs = "0-1"
				if s.Phase == "fixed" && s.Name == unpinned && s.Complete {
					p := maps.Clone(s.Latency.PercentilesUs)
					p["50"] = tt.p50[s.Round]
					lat := *s.Latency
					lat.PercentilesUs = p
					s.Latency = &lat
				}
			}
			rep, err := Build(rs)
			if err != nil {
				t.Fatal(err)
			}
			f := rep.Findings()[0]
			if f.Verdict != tt.want || !strings.Contains(f.Figures, tt.detail) {
				t.Errorf("claim 1 = %s: %s; want %s with %q", f.Verdict, f.Figures, tt.want, tt.detail)
			}
		})
	}
}

// TestMigrationsNA checks that runs on a kernel without sched files show
// migrations as n/a with that reason, not as 0 or as "threads off".
func TestMigrationsNA(t *testing.T) {
	const why = "no /proc/PID/task/TID/sched (kernel without CONFIG_SCHED_DEBUG)"
	rep := &observe.ThreadReport{Window: time.Second, MigrationsNA: why,
		Threads: []observe.ThreadStats{{Process: "server", Migrations: 0, UsrPct: 50}}}
	if f := FromThreads(rep, "server"); f.MigrationsNA != why || f.Threads != 1 {
		t.Fatalf("FromThreads = %+v", f)
	}
	rs := loadAll(t, filepath.Join("testdata", "compare"))
	for i := range rs {
		if s := rs[i].Summary.Server; s != nil {
			s.MigrationsNA = why
		}
	}
	r, md := markdown(t, rs)
	if g := r.Find("fixed", "carrier"); g.Migrations.N != 0 || g.ActiveThreads.N == 0 {
		t.Errorf("carrier migrations %+v, active threads %+v; want n/a and figures", g.Migrations, g.ActiveThreads)
	}
	if !strings.Contains(md, "| n/a ("+why+") |") {
		t.Errorf("no migrations n/a with the reason in:\n%s", md)
	}
}

// TestSpread measures the spread between the fixture and a copy whose
// carrier p50 at the fixed rate is doubled and nethttp's %wait 3 points
// higher: p50 moved by 1x at most, %wait by 3 points, CPUs not at all.
func TestSpread(t *testing.T) {
	a, err := Build(loadAll(t, filepath.Join("testdata", "compare")))
	if err != nil {
		t.Fatal(err)
	}
	rs := loadAll(t, filepath.Join("testdata", "compare"))
	for i := range rs {
		s := &rs[i].Summary
		if s.Phase == "fixed" && s.Name == unpinned && s.Latency != nil {
			p := maps.Clone(s.Latency.PercentilesUs)
			p["50"] *= 2
			lat := *s.Latency
			lat.PercentilesUs = p
			s.Latency = &lat
		}
		if s.Name == baseline && s.Server != nil {
			srv := *s.Server
			srv.WaitPct += 3
			s.Server = &srv
		}
	}
	b, err := Build(rs)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]SpreadRow{}
	for _, r := range Spread(a, b) {
		rows[r.Figure] = r
	}
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	if r := rows["p50"]; !near(r.Max, 1) || r.Median != 0 || r.N == 0 {
		t.Errorf("p50 spread %+v, want max 1 (doubled), median 0", r)
	}
	if r := rows["%wait"]; !near(r.Max, 3) || !r.Absolute || r.Used != figWait.spread {
		t.Errorf("%%wait spread %+v, want max 3 points", r)
	}
	if r := rows["CPUs"]; r.Max != 0 || r.N == 0 {
		t.Errorf("CPUs spread %+v, want 0", r)
	}
	var out strings.Builder
	if err := WriteSpread(&out, Spread(a, b)); err != nil || !strings.Contains(out.String(), "p50") || !strings.Contains(out.String(), "100%") {
		t.Errorf("WriteSpread: %v\n%s", err, out.String())
	}
}

// The io_uring ring figures get their own table, only for configurations
// that have them; results without them (epoll, or written before they
// existed, where they read as 0) show none.
func TestRingTable(t *testing.T) {
	rs := loadAll(t, filepath.Join("testdata", "compare"))
	var named string
	for i := range rs {
		c := rs[i].Summary.Carrier
		if c == nil {
			continue
		}
		if named == "" {
			named = rs[i].Summary.Name
		}
		if rs[i].Summary.Name == named {
			c.RingEntersPer10s, c.SubmissionsPerEnter, c.CompletionsPerPass = 123456, 2.5, 1.25
		}
	}
	if named == "" {
		t.Fatal("the fixture has no carrier figures")
	}
	out := t.TempDir()
	if _, err := Write(out, rs, Options{Title: "rings"}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, File))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| io_uring_enter/10s | SQEs/enter | CQEs/pass |") ||
		!strings.Contains(string(md), "| "+named+" | 123456 | 2.50 | 1.25 |") {
		t.Errorf("report.md lacks the ring table row for %s:\n%s", named, md)
	}
	if n := strings.Count(string(md), "| 123456 |"); n != strings.Count(string(md), "io_uring rings") {
		t.Errorf("%d ring rows for %d ring tables: only %s has ring figures", n, strings.Count(string(md), "io_uring rings"), named)
	}
}

// TestHostsLayout: runs with roles on other hosts say so in report.md,
// each placement once; local runs say nothing.
func TestHostsLayout(t *testing.T) {
	rs := loadAll(t, filepath.Join("testdata", "compare"))
	if _, md := markdown(t, rs); strings.Contains(md, "other hosts") {
		t.Errorf("local runs mention other hosts:\n%s", md)
	}
	for i := range rs {
		rs[i].Summary.Hosts = "server h1, mock h1, load h2,h3"
	}
	_, md := markdown(t, rs)
	if n := strings.Count(md, "Roles on other hosts: server h1, mock h1, load h2,h3"); n != 1 {
		t.Errorf("the layout appears %d times in:\n%s", n, md)
	}
}

// markdown builds the report of rs and writes its report.md without plots.
func markdown(t *testing.T, rs []Result) (*Report, string) {
	t.Helper()
	r, err := Build(rs)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := r.WriteMarkdown(&b, Options{}, func(string, func(string) error) string { return "" }); err != nil {
		t.Fatal(err)
	}
	return r, b.String()
}

// TestFindingsSubstituteAndPart: a claim whose configuration has no run
// that passed the checks is judged on a substitute that did, naming both;
// a claim judged in part says which part it could not judge.
func TestFindingsSubstituteAndPart(t *testing.T) {
	leaveOut := func(rs []Result, phase, name string) {
		for i := range rs {
			if s := &rs[i].Summary; s.Phase == phase && s.Name == name {
				s.Errors = s.Requests // every request an error: left out
			}
		}
	}
	t.Run("carrier left out, carrier+ws judged", func(t *testing.T) {
		rs := loadAll(t, filepath.Join("testdata", "compare"))
		leaveOut(rs, PhaseFixed, unpinned)
		rep, err := Build(rs)
		if err != nil {
			t.Fatal(err)
		}
		f := rep.Findings()[2] // fewer switches: carrier against nethttp
		if f.Verdict == NotMeasurable || !strings.Contains(f.Figures, "context switches/s carrier+ws") ||
			!strings.Contains(f.Figures, "no run of the configuration carrier at the fixed rate passed the run checks (2 left out: see Runs left out); judged on carrier+ws instead (the same unpinned carriers with work stealing)") {
			t.Errorf("claim 3 with carrier left out: %s: %s", f.Grade(), f.Figures)
		}
	})
	t.Run("no substitute either", func(t *testing.T) {
		rs := loadAll(t, filepath.Join("testdata", "compare"))
		leaveOut(rs, PhaseFixed, unpinned)
		leaveOut(rs, PhaseFixed, "carrier+ws")
		rep, err := Build(rs)
		if err != nil {
			t.Fatal(err)
		}
		if f := rep.Findings()[2]; f.Verdict != NotMeasurable || !strings.HasSuffix(f.Figures, "; nor did carrier+ws") {
			t.Errorf("claim 3 with no carrier run: %s: %s", f.Grade(), f.Figures)
		}
	})
	t.Run("claim 6 in part", func(t *testing.T) {
		rs := loadAll(t, filepath.Join("testdata", "compare"))
		leaveOut(rs, PhaseMax, "carrier+ws")
		rep, err := Build(rs)
		if err != nil {
			t.Fatal(err)
		}
		f := rep.Findings()[5]
		if !f.Partial || f.Verdict != Confirmed || !strings.Contains(f.Grade(), "judged in part") || len(f.Parts) != 2 ||
			f.Parts[1].Verdict != NotMeasurable || !strings.Contains(f.Figures, "req/s of carrier+ws not judged: no run of the configuration carrier+ws at max throughput passed") {
			t.Errorf("claim 6 with carrier+ws left out: %s: %+v", f.Grade(), f)
		}
	})
}

// TestMixTable: runs whose load sent a mix get the request mix table,
// one row per target with its percentiles' median over the runs and the
// hand-offs; a report without a mix has no such table.
func TestMixTable(t *testing.T) {
	rs := loadAll(t, filepath.Join("testdata", "compare"))
	write := func() string {
		out := t.TempDir()
		if _, err := Write(out, rs, Options{Title: "mix"}); err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(filepath.Join(out, File))
		if err != nil {
			t.Fatal(err)
		}
		return string(md)
	}
	if md := write(); strings.Contains(md, "Request mix") {
		t.Fatal("a report without a mix has a request mix table")
	}
	named := ""
	for i := range rs {
		s := &rs[i].Summary
		if s.Phase != PhaseMax || s.Carrier == nil || (named != "" && s.Name != named) {
			continue
		}
		named = s.Name
		s.Carrier.HandoffsPer10s = 42
		fast := latency.Summary{Count: 950, PercentilesUs: map[string]int64{"50": 1000, "99": 2000 + int64(i), "99.9": 3000}}
		slow := latency.Summary{Count: 50, PercentilesUs: map[string]int64{"50": 20000, "99": 21000, "99.9": 22000}}
		s.Mix = []MixFigures{{Target: "/fruits", Weight: 95, Completed: 950, Queued: 19, Latency: fast}, {Target: "/block?kind=sleep&d=20ms", Weight: 5, Completed: 50, Latency: slow}}
	}
	if named == "" {
		t.Fatal("the fixture has no carrier run at max throughput")
	}
	md := write()
	for _, want := range []string{
		"| configuration | target | share | p50 ms | p99 ms | p99.9 ms | queued % | hand-offs/10s |",
		"| " + named + " | /fruits | 95% | 1.00 | 2.0",
		"| 3.00 | 2.00 | 42.0 |",
		"| " + named + " | /block?kind=sleep&d=20ms | 5% | 20.00 | 21.00 | 22.00 | 0.00 | 42.0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// TestOtherAppNoFindings: runs of another app than the study's (tfb) get
// no finding, and the report says why, beside the tables it still has;
// the study's runs ("fruits", or no app as before there was another) get
// the findings.
func TestOtherAppNoFindings(t *testing.T) {
	rs := loadAll(t, filepath.Join("testdata", "compare"))
	for _, app := range []string{"", StudyApp} {
		for i := range rs {
			rs[i].Summary.App = app
		}
		if r, md := markdown(t, rs); len(r.Findings()) == 0 || strings.Contains(md, "Not this study's experiment") {
			t.Errorf("app %q: %d findings; want the study's, and no note", app, len(r.Findings()))
		}
	}
	for i := range rs {
		rs[i].Summary.App = "tfb"
	}
	r, md := markdown(t, rs)
	if f := r.Findings(); len(f) != 0 {
		t.Errorf("tfb runs: findings %+v; want none", f)
	}
	for _, want := range []string{"Not this study's experiment: these runs served the tfb app", "| configuration | server CPUs | runs | req/s |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| # | claim (study) |") {
		t.Errorf("report.md has the findings' table:\n%s", md)
	}
}

// TestPerRequest derives the per-request table from the runs' perf stat
// figures and throughput: system calls per request where perf counted
// them, n/a with the reason where it could not, and where the runs
// predate the count.
func TestPerRequest(t *testing.T) {
	const why = "perf cannot count raw_syscalls:sys_enter: No permissions to read /sys/kernel/tracing/events/raw_syscalls/sys_enter"
	tests := []struct {
		name string
		sys  func(i int) *observe.Figure // run i's system calls/s
		want string                      // the fixed-rate carrier row's cell
	}{
		{"counted", func(i int) *observe.Figure { return &observe.Figure{Value: float64(1000 * (i + 1))} }, ""},
		{"perf cannot count", func(int) *observe.Figure { return &observe.Figure{NA: why} }, "n/a (" + why + ")"},
		{"an older result", func(int) *observe.Figure { return nil }, "n/a (not counted: an older result)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := loadAll(t, filepath.Join("testdata", "compare"))
			var perRun []float64
			for i := range rs {
				s := &rs[i].Summary
				if s.Perf == nil {
					continue // a run without perf stat (carrier+ws in r2)
				}
				s.Perf.SyscallsPerSec = tt.sys(i)
				if s.Phase == "fixed" && s.Name == "carrier" && tt.want == "" {
					perRun = append(perRun, s.Perf.SyscallsPerSec.Value/s.Throughput)
				}
			}
			r, md := markdown(t, rs)
			g := r.Find("fixed", "carrier")
			if tt.want != "" {
				if g.SyscallsPerRequest.N != 0 {
					t.Errorf("system calls/request %+v, want none", g.SyscallsPerRequest)
				}
				if !strings.Contains(md, "| carrier | "+g.CPUPerRequest.Format(1, "")+" | "+tt.want+" |") {
					t.Errorf("no carrier row with %q in:\n%s", tt.want, md)
				}
				return
			}
			if len(perRun) == 0 {
				t.Fatal("no fixed-rate carrier run in the fixture")
			}
			want := statOf(perRun)
			if g.SyscallsPerRequest.N != len(perRun) || math.Abs(g.SyscallsPerRequest.Median-want.Median) > 1e-9 {
				t.Errorf("system calls/request %+v, want the median of %v", g.SyscallsPerRequest, perRun)
			}
			cpu := g.CPUs.Median * 1e6 / g.Throughput.Median
			if g.CPUPerRequest.N == 0 || math.Abs(g.CPUPerRequest.Median-cpu)/cpu > 0.2 {
				t.Errorf("CPU µs/request %+v, want about %.1f (CPUs over req/s)", g.CPUPerRequest, cpu)
			}
			if !strings.Contains(md, "| "+g.SyscallsPerRequest.Format(2, "")+" |") {
				t.Errorf("no system calls/request %s in:\n%s", g.SyscallsPerRequest.Format(2, ""), md)
			}
		})
	}
}
