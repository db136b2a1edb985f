package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/report"
)

// A run reads the server's /debug/runtime at both ends of the observers'
// window into runtime.json and the summary; a server without the endpoint
// leaves the reason, not figures of 0.
func TestRunRuntime(t *testing.T) {
	for _, tc := range []struct {
		name, mode string
		noEndpoint bool
	}{
		{"carrier", ModeCarrier, false},
		{"nethttp", ModeNetHTTP, false},
		{"without the endpoint", ModeCarrier, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := fakeOptions(t)
			if tc.noEndpoint {
				t.Setenv(fakeNoRuntimeEnv, "1")
			}
			cfg := fakeConfig(t, tc.mode)
			cfg.PerfStat, cfg.Pidstat = false, false
			sum, err := Run(context.Background(), cfg, opt)
			if err != nil {
				t.Fatal(err)
			}
			if tc.noEndpoint {
				if sum.Runtime != nil || !strings.Contains(sum.NA["runtime"], "read /debug/runtime: 404 Not Found") {
					t.Errorf("runtime figures %+v, reason %q; want none, with the 404", sum.Runtime, sum.NA["runtime"])
				}
				return
			}
			// The fake server forces a GC at each read: one in the window.
			rt := sum.Runtime
			if rt == nil || rt.GCCycles < 1 || rt.GCCyclesForced < 1 || rt.GOMAXPROCS < 1 || !(rt.GCPauseMaxUs > 0) ||
				rt.Window < sum.ObserveWindow || sum.NA["runtime"] != "" {
				t.Fatalf("runtime figures %+v (window %v), reason %q", rt, sum.ObserveWindow, sum.NA["runtime"])
			}
			var f runtimeFile
			if err := latency.ReadJSONFile(filepath.Join(opt.Dir, report.RuntimeFile), &f); err != nil {
				t.Fatal(err)
			}
			if f.Summary.GCCycles != rt.GCCycles || f.Diff.GCCycles != rt.GCCycles || f.Diff.GCPauses.Total() < 1 ||
				len(f.Diff.SchedLatencies.Buckets) != len(f.Diff.SchedLatencies.Counts)+1 {
				t.Errorf("%s: %+v, summary %+v", report.RuntimeFile, f, rt)
			}
			back, err := report.Load(opt.Dir)
			if err != nil || back.Summary.Runtime == nil || back.Summary.Runtime.GCCycles != rt.GCCycles {
				t.Errorf("summary.json read back: %+v, %v", back.Summary.Runtime, err)
			}
		})
	}
}
