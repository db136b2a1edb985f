package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/report"
	"github.com/spindle-lab/spindle/slo"
)

// writeLoadRun writes a result directory whose load.json has the given
// latencies (µs), 2xx answers, failures and achieved rate.
func writeLoadRun(t *testing.T, dir string, latUs []int64, failed int64, rate float64) {
	t.Helper()
	h := latency.New()
	for _, v := range latUs {
		h.RecordValue(v)
	}
	s, err := latency.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(latUs))
	r := load.Result{SchemaVersion: load.SchemaVersion, Corrected: s, Uncorrected: s, Completed: n, Failed: failed,
		Intended: n + failed, DurationS: 1, AchievedRate: rate}
	r.ByStatus.C2xx = n
	r.Errors.Connect = failed
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(filepath.Join(dir, LoadJSON), r); err != nil {
		t.Fatal(err)
	}
}

func TestCheckSLO(t *testing.T) {
	root := t.TempDir()
	run := func(name, phase string, complete bool) report.Result {
		return report.Result{Dir: filepath.Join(root, phase+"-"+name), Summary: report.Summary{Name: name, Phase: phase, Complete: complete}}
	}
	// carrier: two rounds, 1 ms and 3 ms: merged p100 is 3 ms, mean rate 150.
	a1, a2 := run("carrier", "max", true), run("carrier", "max", true)
	a2.Dir += "-2"
	writeLoadRun(t, a1.Dir, []int64{1000, 1000}, 0, 100)
	writeLoadRun(t, a2.Dir, []int64{3000, 3000}, 1, 200)
	// nethttp: its one run is incomplete.
	b := run("nethttp", "max", false)
	ts, err := slo.Parse("max<=2ms,rps>=150,errors<=1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := CheckSLO([]report.Result{a1, b, a2}, ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "carrier" || got[0].Runs != 2 || got[1].Name != "nethttp" || got[1].Runs != 0 {
		t.Fatalf("groups %+v", got)
	}
	wantPass := []bool{false, true, true}
	for i, o := range got[0].Outcomes {
		if o.Pass != wantPass[i] {
			t.Errorf("carrier %s: pass %v (measured %s), want %v", o.Text, o.Pass, o.Measured, wantPass[i])
		}
	}
	if m := got[0].Outcomes[1].Measured; m != "150.0" {
		t.Errorf("rps measured %q, want the mean rate 150.0", m)
	}
	for _, o := range got[1].Outcomes {
		if o.Pass || o.Measured != NoCompleteRun {
			t.Errorf("nethttp without a complete run: %+v", o)
		}
	}
	// A complete run whose load.json is missing is an error, not a pass.
	c := run("handoff", "max", true)
	if _, err := CheckSLO([]report.Result{c}, ts); err == nil {
		t.Error("missing load.json: no error")
	}
}
