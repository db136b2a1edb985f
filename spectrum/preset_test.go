package spectrum

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cputest"
)

// noWaitPKG is a machine without TPAUSE/UMWAIT.
func noWaitPKG(mode string) error {
	if mode == "tpause" || mode == "umwait" {
		return fmt.Errorf("wait strategy %s: CPU lacks WAITPKG: %w", mode, ErrNotSupported)
	}
	return nil
}

func machine(topo *cpu.Topology) Machine {
	return Machine{Topo: topo, Allowed: topo.CPUs(), Kernels: []string{"scalar", "avx512"}, ModeErr: noWaitPKG}
}

func ran(cells []Cell) []Cell {
	return slices.DeleteFunc(slices.Clone(cells), func(c Cell) bool { return c.Skipped != "" })
}

func TestPlanKnee(t *testing.T) {
	for name, want := range map[string]struct{ counts []int }{
		"vm2":        {[]int{1, 2}},
		"2s-16c-smt": {[]int{1, 10, 19, 28, 37, 46, 55, 64}},
		"epyc-9654":  {[]int{1, 28, 55, 82, 110, 137, 164, 192}},
	} {
		topo := cputest.Topologies(t)[name]
		cells, err := Plan(PresetKnee, machine(topo), PlanOptions{Kernels: []string{"scalar"}})
		if err != nil {
			t.Fatal(err)
		}
		var counts []int
		for _, c := range cells {
			counts = append(counts, len(c.FG))
		}
		if !slices.Equal(counts, want.counts) {
			t.Errorf("%s: thread counts %v, want %v", name, counts, want.counts)
		}
		// Up to the number of cores, no two threads share a core.
		cores := len(topo.Cores())
		for _, c := range cells {
			if len(c.FG) > cores {
				continue
			}
			seen := map[string]bool{}
			for _, x := range c.FG {
				k := topo.SiblingsOf(x).String()
				if seen[k] {
					t.Errorf("%s: %d threads share core %s", name, len(c.FG), k)
				}
				seen[k] = true
			}
		}
	}
}

func TestPlanBackground(t *testing.T) {
	for name, want := range map[string]struct{ fg, maxBG int }{
		"vm2":        {1, 1},
		"2s-16c-smt": {2, 30},
		"epyc-9654":  {8, 88}, // the paper's 8 foreground threads on 96 cores
	} {
		topo := cputest.Topologies(t)[name]
		cells, err := Plan(PresetBackground, machine(topo), PlanOptions{Kernels: []string{"avx512"}})
		if err != nil {
			t.Fatal(err)
		}
		maxBG := 0
		for _, c := range ran(cells) {
			if len(c.FG) != want.fg {
				t.Errorf("%s: %s: %d foreground threads, want %d", name, c.Key(), len(c.FG), want.fg)
			}
			if len(c.FG.Intersect(c.BG)) > 0 {
				t.Errorf("%s: %s: foreground %s and background %s overlap", name, c.Key(), c.FG, c.BG)
			}
			maxBG = max(maxBG, len(c.BG))
			if c.Mode != "" && c.Baseline != "avx512 fg="+fmt.Sprint(want.fg)+" baseline" {
				t.Errorf("%s: %s: baseline %q", name, c.Key(), c.Baseline)
			}
		}
		if maxBG != want.maxBG {
			t.Errorf("%s: up to %d background threads, want %d", name, maxBG, want.maxBG)
		}
		var skippedModes []string
		for _, c := range cells {
			if c.Skipped != "" {
				skippedModes = append(skippedModes, c.Mode)
				if !strings.HasPrefix(c.Skipped, "skipped: ") || !strings.Contains(c.Skipped, "WAITPKG") {
					t.Errorf("%s: skip reason %q", name, c.Skipped)
				}
			}
		}
		if !slices.Equal(skippedModes, []string{"tpause", "umwait"}) {
			t.Errorf("%s: skipped modes %v", name, skippedModes)
		}
	}
}

func TestPlanPlacement(t *testing.T) {
	for name, want := range map[string]struct {
		n       int
		skipped map[string]string // placement -> reason substring; others must run
	}{
		"vm2":        {1, map[string]string{"SMT": "skipped: topology: no SMT siblings", "Socket": "skipped: topology: one package with one die"}},
		"2s-16c-smt": {8, nil},
		"epyc-9654":  {4, nil},
	} {
		topo := cputest.Topologies(t)[name]
		cells, err := Plan(PresetPlacement, machine(topo), PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cells {
			if why, skip := want.skipped[c.Placement]; skip {
				if !strings.Contains(c.Skipped, why) {
					t.Errorf("%s: %s: skipped %q, want %q", name, c.Key(), c.Skipped, why)
				}
				continue
			}
			if c.Skipped != "" {
				t.Errorf("%s: %s skipped: %s", name, c.Key(), c.Skipped)
				continue
			}
			if c.Kernel != "scalar" || len(c.FG) != want.n || (c.Mode != "" && len(c.BG) != want.n) {
				t.Errorf("%s: %s: kernel %s, %d+%d threads, want scalar %d+%d", name, c.Key(), c.Kernel, len(c.FG), len(c.BG), want.n, want.n)
			}
			for i, f := range c.FG {
				if c.Mode == "" {
					break
				}
				b := c.BG[i]
				sameCore := topo.SiblingsOf(f).Contains(b)
				sameDie := topo.DieOf(f).Contains(b)
				samePkg := topo.PackageOf(f).Contains(b)
				switch c.Placement {
				case "SMT":
					if !sameCore {
						t.Errorf("%s: SMT: %d and %d are not siblings", name, f, b)
					}
				case "Die":
					if sameCore || !sameDie {
						t.Errorf("%s: Die: %d and %d: same core %v, same die %v", name, f, b, sameCore, sameDie)
					}
				case "Socket":
					if sameDie || (len(topo.Packages()) > 1 && samePkg) {
						t.Errorf("%s: Socket: %d and %d share a die or package", name, f, b)
					}
				}
			}
		}
	}
}

func TestPlanBursty(t *testing.T) {
	for name, want := range map[string]struct {
		fg, bg int
		driver int
	}{
		"vm2":        {1, 1, 0},   // the driver shares the foreground's CPU
		"2s-16c-smt": {27, 4, 27}, // a spare core for the driver
		"epyc-9654":  {83, 12, 83},
	} {
		topo := cputest.Topologies(t)[name]
		cells, err := Plan(PresetBursty, machine(topo), PlanOptions{Quick: true, Duration: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if len(cells) != 3*3*7 {
			t.Fatalf("%s: %d cells, want 63 (3 scales x 3 ratios x baseline + 6 modes)", name, len(cells))
		}
		for _, c := range cells {
			if c.Pattern == nil || c.PatternS != c.Pattern.String() {
				t.Fatalf("%s: %s: pattern %v", name, c.Key(), c.Pattern)
			}
			switch {
			case c.Pattern.Scale == ScaleSecond:
				if !strings.Contains(c.Skipped, "--quick") {
					t.Errorf("%s: %s: s scale with --quick not skipped (%q)", name, c.Key(), c.Skipped)
				}
				continue
			case c.Mode == "tpause" || c.Mode == "umwait":
				if !strings.Contains(c.Skipped, "WAITPKG") {
					t.Errorf("%s: %s: skipped %q", name, c.Key(), c.Skipped)
				}
				continue
			case c.Skipped != "":
				t.Errorf("%s: %s skipped: %s", name, c.Key(), c.Skipped)
			}
			wantFG, wantBG, wantShared := want.fg, want.bg, 0
			switch {
			case c.Mode == "": // the baseline: the foreground alone on every CPU the cells use
				wantFG, wantBG = want.fg+want.bg, 0
			case c.Mode == "block" || c.Mode == "adaptive": // pollers that give their core back share it
				wantShared = want.bg
			}
			if len(c.FG) != wantFG || len(c.BG) != wantBG || len(c.Shared) != wantShared || c.Driver != want.driver {
				t.Errorf("%s: %s: fg %d bg %d shared %d driver %d, want %d %d %d %d", name, c.Key(),
					len(c.FG), len(c.BG), len(c.Shared), c.Driver, wantFG, wantBG, wantShared, want.driver)
			}
			if len(c.Shared) > 0 && !slices.Equal(c.Shared, c.BG) {
				t.Errorf("%s: %s: shared %s, background %s", name, c.Key(), c.Shared, c.BG)
			}
			if c.Duration < 2*c.Pattern.Period() || c.Duration < 100*time.Millisecond {
				t.Errorf("%s: %s: duration %v shorter than two periods", name, c.Key(), c.Duration)
			}
			if len(c.FG.Intersect(c.BG)) > 0 || c.BG.Contains(c.Driver) {
				t.Errorf("%s: %s: overlapping CPUs fg %s bg %s driver %d", name, c.Key(), c.FG, c.BG, c.Driver)
			}
		}
	}
}

func TestPlanErrors(t *testing.T) {
	vm := machine(cputest.Topologies(t)["vm2"])
	if _, err := Plan("figure9", vm, PlanOptions{}); err == nil {
		t.Error("unknown preset: want an error")
	}
	if _, err := Plan(PresetKnee, Machine{Topo: vm.Topo, Allowed: cpu.Set{}, Kernels: vm.Kernels}, PlanOptions{}); err == nil {
		t.Error("no CPUs: want an error")
	}
	if _, err := Plan(PresetKnee, Machine{Topo: vm.Topo, Allowed: vm.Allowed}, PlanOptions{}); err == nil {
		t.Error("no kernel: want an error")
	}
	// One CPU: the bursty preset needs a foreground and a background core.
	one := Machine{Topo: vm.Topo, Allowed: cpu.Set{0}, Kernels: vm.Kernels}
	cells, err := Plan(PresetBursty, one, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		if !strings.HasPrefix(c.Skipped, "skipped: topology: ") {
			t.Fatalf("%s on one CPU: skipped %q", c.Key(), c.Skipped)
		}
	}
	// Without a topology, placement is skipped, the rest plans by CPU.
	noTopo := Machine{Allowed: cpu.Set{0, 1}, Kernels: []string{"scalar"}}
	cells, err = Plan(PresetPlacement, noTopo, PlanOptions{})
	if err != nil || len(cells) != 1 || !strings.Contains(cells[0].Skipped, "topology") {
		t.Fatalf("placement without topology: %v %+v", err, cells)
	}
	if cells, err = Plan(PresetKnee, noTopo, PlanOptions{}); err != nil || len(cells) != 2 {
		t.Fatalf("knee without topology: %v %d cells", err, len(cells))
	}
	if err := ModeAvailable("nap"); err == nil || errors.Is(err, ErrNotSupported) {
		t.Errorf("unknown mode: %v", err)
	}
}

// A thread count a preset cannot run is refused with the bound, not
// capped: spectrum --fg 100000 knee ran fg=1 and fg=2 under that label.
func TestPlanCounts(t *testing.T) {
	vm := machine(cputest.Topologies(t)["vm2"]) // 2 CPUs
	for _, tc := range []struct {
		preset string
		o      PlanOptions
		max    int // 0: planned
	}{
		{PresetKnee, PlanOptions{FG: 100000}, 2},
		{PresetKnee, PlanOptions{FG: 3}, 2},
		{PresetKnee, PlanOptions{FG: 2}, 0},
		{PresetBackground, PlanOptions{FG: 3}, 2},
		{PresetBackground, PlanOptions{FG: 2}, 0}, // no core left: skipped cells
		{PresetBackground, PlanOptions{BG: 5}, 1},
		{PresetBackground, PlanOptions{BG: 1}, 0},
		{PresetBursty, PlanOptions{FG: 2}, 1},
		{PresetBursty, PlanOptions{FG: 1}, 0},
		{PresetBursty, PlanOptions{BG: 5}, 0}, // skipped: topology, with the reason
	} {
		_, err := Plan(tc.preset, vm, tc.o)
		var ce *CountError
		switch {
		case tc.max == 0 && err != nil:
			t.Errorf("%s %+v: %v, want cells", tc.preset, tc.o, err)
		case tc.max > 0 && (!errors.As(err, &ce) || ce.Max != tc.max):
			t.Errorf("%s %+v: %v, want a CountError at most %d", tc.preset, tc.o, err, tc.max)
		}
	}
}

func TestWakePair(t *testing.T) {
	vm := machine(cputest.Topologies(t)["vm2"])
	bursty, err := Plan(PresetBursty, vm, PlanOptions{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	if a, b, ok := WakePair(bursty); !ok || a != 0 || b != 1 {
		t.Errorf("bursty on vm2: %d %d %v, want driver 0 and background 1", a, b, ok)
	}
	bg, err := Plan(PresetBackground, vm, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a, b, ok := WakePair(bg); !ok || a != 0 || b != 1 {
		t.Errorf("background on vm2: %d %d %v", a, b, ok)
	}
	knee, err := Plan(PresetKnee, vm, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := WakePair(knee); ok {
		t.Error("knee has no background: no pair")
	}
}
