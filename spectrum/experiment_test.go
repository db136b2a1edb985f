package spectrum

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
)

func TestRunOptionErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    RunOptions
		plan bool // the error is a *PlanError
	}{
		{"no repeats", RunOptions{Presets: []string{PresetKnee}}, false},
		{"unknown preset", RunOptions{Presets: []string{"bogus"}, Repeats: 1, Plan: PlanOptions{Quick: true}}, true},
	} {
		_, err := Run(context.Background(), tt.o, &bytes.Buffer{}, nil)
		var pe *PlanError
		if err == nil || errors.As(err, &pe) != tt.plan {
			t.Errorf("%s: err %v, want an error that is a *PlanError: %v", tt.name, err, tt.plan)
		}
	}
}

// TestRunKnee runs the smallest knee there is (one thread, one kernel, one
// short run) and writes its text and files.
func TestRunKnee(t *testing.T) {
	allowed, err := cpu.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("B is measured between two CPUs, this process may use %s", allowed)
	}
	o := RunOptions{Presets: []string{PresetKnee}, Repeats: 1, CPUs: allowed[:1],
		Plan: PlanOptions{Kernels: []string{"scalar"}, Duration: 20 * time.Millisecond, Quick: true}}
	var log, out bytes.Buffer
	rep, err := Run(context.Background(), o, &log, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(log.String(), "spectrum: 1 cells x 1 repeats on CPUs ") {
		t.Errorf("log line %q", log.String())
	}
	if len(rep.Results) != 1 || rep.Results[0].Skipped != "" {
		t.Fatalf("results %+v, want one knee cell that ran", rep.Results)
	}
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"1 repeats of 20ms; B = ", "== knee ==", "scalar fg=1 baseline"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	dir := filepath.Join(t.TempDir(), "out")
	out.Reset()
	if err := rep.WriteFiles(dir, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "spectrum.json")); err != nil {
		t.Error(err)
	}
	if !strings.HasPrefix(out.String(), "wrote "+filepath.Join(dir, "spectrum.json")+" and ") {
		t.Errorf("WriteFiles said %q", out.String())
	}
}
