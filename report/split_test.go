package report

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSplit checks the gain split: with nethttp-carrier at 1.5x nethttp's
// throughput and carrier at 3x, the scheduler's part is 1.50, the code
// path's 2.00, the whole 3.00; without nethttp-carrier there is no split.
func TestSplit(t *testing.T) {
	rs := loadAll(t, filepath.Join("testdata", "compare"))
	var b strings.Builder
	rep, err := Build(rs)
	if err != nil {
		t.Fatal(err)
	}
	rep.writeSplit(&b)
	if b.Len() != 0 {
		t.Fatalf("a split without nethttp-carrier runs:\n%s", b.String())
	}
	factor := map[string]float64{"nethttp": 1, "handoff": 1.5, "carrier": 3}
	for i := range rs {
		s := &rs[i].Summary
		f, ok := factor[s.Name]
		if !ok || s.Phase != "max" {
			continue
		}
		if s.Name == "handoff" {
			s.Name, s.Mode = "nethttp-carrier", "nethttp-carrier"
		}
		s.Throughput = 1000 * f
	}
	if rep, err = Build(rs); err != nil {
		t.Fatal(err)
	}
	rep.writeSplit(&b)
	var row string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "| max throughput |") {
			row = l
		}
	}
	cells := strings.Split(row, "|")
	if len(cells) != 6 {
		t.Fatalf("no max throughput row in:\n%s", b.String())
	}
	for i, want := range []string{"3.00", "1.50", "2.00"} {
		if got := strings.TrimSpace(cells[i+2]); !strings.HasPrefix(got, want) {
			t.Errorf("column %d = %q, want %s\n%s", i+2, got, want, b.String())
		}
	}
}
