package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/observe"
	"github.com/spindle-lab/spindle/spectrum"
)

func TestProbeJSON(t *testing.T) {
	var out, text bytes.Buffer // --json - as load, bench and compare take it: the text to stderr
	if err := run(context.Background(), []string{"probe", "--json", "-", "--calibrate", "5ms"}, &out, &text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "pollers:") {
		t.Errorf("probe --json -: the text on stderr lacks its pollers line:\n%s", text.String())
	}
	var r struct {
		Caps       map[string]bool         `json:"capabilities"`
		Power      []struct{ Name string } `json:"power_sources"`
		Freq       []struct{ Name string } `json:"frequency_sources"`
		Strategies map[string]string       `json:"wait_strategies"`
		B          float64                 `json:"block_wake_us"`
		BNA        string                  `json:"block_wake_na"`
		Steal      string                  `json:"steal_since_boot"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if _, ok := r.Caps["WAITPKG"]; !ok || len(r.Power) != 2 || len(r.Freq) != 2 || r.Strategies["block"] != "available" {
		t.Errorf("probe JSON incomplete:\n%s", out.String())
	}
	if (r.B <= 0) == (r.BNA == "") || r.Steal == "" {
		t.Errorf("B %v (%q), steal %q", r.B, r.BNA, r.Steal)
	}
}

func TestProbeText(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"probe", "--calibrate", "5ms"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"capabilities:", "WAITPKG", "topology:", "power sources:", "frequency sources:", "block-and-wake:", "idle:", "PAUSE:", "steal:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("probe output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSpectrumBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"spectrum", "figure9"},
		{"spectrum", "--repeats", "0"},
		{"spectrum", "--duration", "-1s"},
		{"spectrum", "--kernel", "sse"},
		{"spectrum", "--modes", "nap"},
		{"spectrum", "--scales", "ns"},
		{"spectrum", "--cpus", "4000"},
		{"probe", "extra"},
	} {
		err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
		if !errors.Is(err, errBadInput) {
			t.Errorf("%q: %v, want bad input", args, err)
		}
	}
}

// TestSpectrumSmoke is CI's smoke test of spindle spectrum: every preset
// with tiny durations (about 1.5s on dev-2vcpu), the table, the JSON and
// the plots.
func TestSpectrumSmoke(t *testing.T) {
	allowed, err := cpu.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("the presets need two CPUs, this process may use %s", allowed)
	}
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	start := time.Now()
	args := []string{"spectrum", "--quick", "--duration", "20ms", "--repeats", "1", "--scales", "us,ms",
		"--modes", "busy,block,adaptive,tpause", "--kernel", "scalar", "--cpus", cpu.Set(allowed[:2]).String(), "--out", dir}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	t.Logf("smoke run: %v (CI budget 10s; timing is not asserted on a shared machine)", time.Since(start))
	text := out.String()
	for _, want := range []string{"== knee ==", "== background ==", "== placement ==", "== bursty ==",
		"fg Mop/s", "wake p99 µs", "scalar fg=1 ms 5:5 bg=1 adaptive", "pkg W"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	var doc struct {
		Results []map[string]any `json:"results"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "spectrum.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Results) == 0 {
		t.Fatalf("spectrum.json: %v, %d results", err, len(doc.Results))
	}
	// Every cell that ran keeps its one round; a figure that could not be had is null.
	ran := 0
	for _, r := range doc.Results {
		if _, skipped := r["skipped"]; skipped {
			continue
		}
		ran++
		rounds, _ := r["rounds"].([]any)
		if len(rounds) != 1 {
			t.Errorf("%v %v: %d rounds in the JSON, want 1", r["preset"], r["mode"], len(rounds))
			continue
		}
		// Watts are null where no power source exists, else positive.
		w, ok := rounds[0].(map[string]any)["package_watts"]
		if x, isNum := w.(float64); !ok || (w != nil && (!isNum || x <= 0)) {
			t.Errorf("%v: package_watts %v in a round, want null or a positive number", r["preset"], w)
		}
	}
	if ran == 0 {
		t.Error("no cell ran")
	}
	pngs, _ := filepath.Glob(filepath.Join(dir, "*.png"))
	if len(pngs) < 4 {
		t.Errorf("%d plots: %v", len(pngs), pngs)
	}
	for _, p := range pngs {
		if b, err := os.ReadFile(p); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s is not a PNG (%v)", p, err)
		}
	}
}

// probe suggests polling carriers only where idle CPUs halt at once (a
// KVM guest with its halt-polling off).
func TestProbeIdleHint(t *testing.T) {
	tests := []struct {
		name string
		idle observe.Idle
		hint bool
	}{
		{"guest, halt-polling off", observe.Idle{Driver: "haltpoll", Governor: "haltpoll", HaltPollNs: 0}, true},
		{"guest, halt-polling on", observe.Idle{Driver: "haltpoll", Governor: "haltpoll", HaltPollNs: 200000}, false},
		{"bare metal", observe.Idle{Driver: "intel_idle", Governor: "menu", HaltPollNs: -1}, false},
		{"no cpuidle", observe.Idle{HaltPollNs: -1, NA: "no cpuidle"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := writeProbe(&out, &spectrum.ProbeReport{Idle: tt.idle}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(out.String(), "--wait-b 200us"); got != tt.hint {
				t.Errorf("hint shown %v, want %v:\n%s", got, tt.hint, out.String())
			}
		})
	}
}

// probe's time slice line: what a carrier's --slice gets on this kernel.
func TestSliceLine(t *testing.T) {
	tests := []struct {
		name          string
		def, granted  time.Duration
		err           error
		want, wantNot string
	}{
		{"6.12 and later", 1400 * time.Microsecond, 700 * time.Microsecond, nil, "the kernel's default 1.4ms, a carrier's 700µs (a carrier woken by I/O preempts", "n/a"},
		{"a default no longer than the carrier's", 700 * time.Microsecond, 700 * time.Microsecond, nil, "not shorter, so a carrier woken by I/O waits for the running thread's slice to end (set --slice below 700µs)", "preempts"},
		{"before 6.12", 0, 0, nil, "n/a (the kernel keeps no time slice per thread (before Linux 6.12)", "default"},
		{"refused", 0, 0, errors.New("sched_getattr: operation not permitted"), "n/a (sched_getattr: operation not permitted)", "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sliceLine(tt.def, tt.granted, tt.err)
			if !strings.Contains(got, tt.want) || strings.Contains(got, tt.wantNot) {
				t.Errorf("sliceLine = %q: want it to contain %q and not %q", got, tt.want, tt.wantNot)
			}
		})
	}
}

// probe's other threads line: whether carriers' --batch-others works here.
func TestBatchLine(t *testing.T) {
	tests := []struct {
		name          string
		err           error
		want, wantNot string
	}{
		{"works", nil, "under SCHED_BATCH while carriers block", "n/a"},
		{"refused", errors.New("sched_setattr: operation not permitted"), "n/a (sched_setattr: operation not permitted: --batch-others has no effect", "under SCHED_BATCH while"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := batchLine(tt.err); !strings.Contains(got, tt.want) || strings.Contains(got, tt.wantNot) {
				t.Errorf("batchLine = %q: want it to contain %q and not %q", got, tt.want, tt.wantNot)
			}
		})
	}
}
