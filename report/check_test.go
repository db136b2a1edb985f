package report

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	other := func(v float64) *float64 { return &v }
	ok := Summary{Complete: true, Rate: 1000, Throughput: 999, Requests: 3000, LoadCPUs: "1",
		Load: &ThreadFigures{CPUs: 0.5, WaitPct: 3}, OtherCPUs: other(0.1)}
	tests := []struct {
		name string
		edit func(*Summary)
		want string // part of why; "" passes
	}{
		{"passes", func(*Summary) {}, ""},
		{"max throughput has no rate to achieve", func(s *Summary) { s.Rate, s.Throughput = 0, 10 }, ""},
		{"fell behind the rate", func(s *Summary) { s.Throughput = 754 }, "achieved 754 of 1000 req/s (75%, under 95%)"},
		{"at 95% of the rate", func(s *Summary) { s.Throughput = 950 }, ""},
		{"a sweep point past saturation", func(s *Summary) { s.Phase, s.Throughput = "sweep-110", 754 }, ""},
		{"errors", func(s *Summary) { s.Errors = 100 }, "100 errors in 3100 requests"},
		{"few errors", func(s *Summary) { s.Errors = 3 }, ""},
		{"busy machine", func(s *Summary) { s.OtherCPUs = other(0.96) }, "other load on the machine 0.96 CPUs"},
		{"no other-load gauge", func(s *Summary) { s.OtherCPUs = nil }, ""},
		{"load generator saturated", func(s *Summary) { s.Load.CPUs = 0.97 }, "load generator used 0.97 of its 1 CPUs"},
		{"load generator on two CPUs", func(s *Summary) { s.Load.CPUs, s.LoadCPUs = 0.97, "2-3" }, ""},
		{"load generator waits", func(s *Summary) { s.Load.WaitPct = 40 }, "waited 40% of the time for a CPU"},
		{"no load figures", func(s *Summary) { s.Load = nil }, ""},
		{"two reasons", func(s *Summary) { s.Throughput, s.Errors = 10, 2000 }, "req/s (1%, under 95%); 2000 errors"},
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
