package spectrum

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
)

// The presets, one per figure kind of the paper.
const (
	PresetKnee       = "knee"       // throughput against foreground thread count (Fig. 2, 3)
	PresetBackground = "background" // foreground against background threads by mode (Fig. 4, 5)
	PresetPlacement  = "placement"  // SMT, Die, Socket placements, busy and pause (Fig. 6)
	PresetBursty     = "bursty"     // both applications by scale, ratio and mode (Fig. 7, 8)
)

// Presets lists the presets in run order.
var Presets = []string{PresetKnee, PresetBackground, PresetPlacement, PresetBursty}

// Defaults for PlanOptions, also the spectrum command's flag defaults.
const (
	DefaultDuration      = 2 * time.Second
	DefaultQuickDuration = 500 * time.Millisecond
	DefaultRepeats       = 3
	// DefaultSeed seeds the matrices and the burst schedules.
	DefaultSeed = 1
	// maxSteps bounds the thread counts a sweep visits (knee, background):
	// enough points to show a knee without a sweep of every count.
	maxSteps = 8
)

// Machine is what planning needs to know about the machine.
type Machine struct {
	Topo    *cpu.Topology
	Allowed cpu.Set
	// Kernels are the kernel names this machine can run.
	Kernels []string
	// ModeErr says whether a background mode can run (ModeAvailable).
	ModeErr func(mode string) error
}

// PlanOptions choose what a preset runs.
type PlanOptions struct {
	Kernels  []string      // kernels to run (nil: every available one; placement and bursty use the first)
	Modes    []string      // background modes (nil: the preset's own list)
	FG       int           // foreground threads (0: the preset's default)
	BG       int           // background threads (0: the preset's default)
	Duration time.Duration // one run's measurement (0: DefaultDuration)
	Quick    bool          // skip the second-scale bursts (their period is 10 s)
	Scales   []Scale       // burst scales (nil: Scales)
}

// presetModes returns the background modes of a preset, after the paper:
// the background preset runs every mode and the bursty preset every wait
// strategy, both derived from carrier/wait's registry; the placement preset
// studies where the paper's two spinning pollers, busy and pause, sit
// relative to the foreground (its own choice, not a list of strategies).
func presetModes(preset string) []string {
	switch preset {
	case PresetBackground:
		return Modes()
	case PresetPlacement:
		return []string{"busy", "pause"}
	case PresetBursty:
		return wait.Names()
	}
	return nil
}

// Plan lists the cells of a preset on machine m. Cells the machine cannot
// run are included with Skipped set, so that tables list them.
func Plan(preset string, m Machine, o PlanOptions) ([]Cell, error) {
	if o.Duration <= 0 {
		o.Duration = DefaultDuration
	}
	kernels := o.Kernels
	if len(kernels) == 0 {
		kernels = m.Kernels
	}
	if len(kernels) == 0 {
		return nil, errors.New("plan: no kernel")
	}
	modes := o.Modes
	if len(modes) == 0 {
		modes = presetModes(preset)
	}
	cores := coresOf(m)
	if len(cores) == 0 {
		return nil, fmt.Errorf("plan %s: no allowed CPUs", preset)
	}
	if err := checkCounts(preset, m, cores, o); err != nil {
		return nil, err
	}
	switch preset {
	case PresetKnee:
		return planKnee(m, cores, kernels, o), nil
	case PresetBackground:
		return planBackground(m, cores, kernels, modes, o), nil
	case PresetPlacement:
		return planPlacement(m, kernels[0], modes, o), nil
	case PresetBursty:
		return planBursty(m, cores, kernels[0], modes, o), nil
	}
	return nil, fmt.Errorf("unknown preset %q (want one of %v)", preset, Presets)
}

// CountError is Plan's error for a thread count (PlanOptions.FG or BG)
// above what the preset can run on the machine's CPUs: the cells would be
// labelled with the count asked for and run fewer threads.
type CountError struct {
	// Option is "FG" or "BG"; Value the count asked for; Max the most the
	// preset runs here; Why says what bounds it.
	Option     string
	Value, Max int
	Preset     string
	Why        string
}

func (e *CountError) Error() string {
	return fmt.Sprintf("%s %d: the %s preset runs at most %d here (%s)", e.Option, e.Value, e.Preset, e.Max, e.Why)
}

// checkCounts refuses an FG or BG that the preset would have to cap: the
// knee's threads are the allowed CPUs, the background preset's foreground
// and background threads the first threads of the cores, the bursty
// preset's foreground the cores its layout leaves. The placement preset
// and the bursty background list a count they cannot place as skipped,
// with the reason, rather than capping it.
func checkCounts(preset string, m Machine, cores []cpu.Set, o PlanOptions) error {
	refuse := func(option string, value, most int, why string) error {
		if value > most {
			return &CountError{Option: option, Value: value, Max: most, Preset: preset, Why: why}
		}
		return nil
	}
	first := firstThreads(cores)
	switch preset {
	case PresetKnee:
		return refuse("FG", o.FG, len(threadOrder(cores)), "one foreground thread per allowed CPU, "+m.Allowed.String())
	case PresetBackground:
		if err := refuse("FG", o.FG, len(first), fmt.Sprintf("one thread per core, %d cores", len(first))); err != nil {
			return err
		}
		fg := o.FG
		if fg <= 0 {
			fg = defaultFG(len(first))
		}
		if len(first) > fg { // none left: its cells say so, skipped
			return refuse("BG", o.BG, len(first)-fg, fmt.Sprintf("one thread per core left after %d foreground of %d cores", fg, len(first)))
		}
	case PresetBursty:
		if fgs, _, _, err := burstyLayout(cores, o.BG); err == nil {
			return refuse("FG", o.FG, len(fgs), fmt.Sprintf("the cores left by the background threads and the burst driver, of %d", len(first)))
		}
	}
	return nil
}

// coresOf lists the allowed CPUs core by core: each element is one core's
// allowed CPUs, in CPU order.
func coresOf(m Machine) []cpu.Set { return cpu.CoresOf(m.Allowed, m.Topo) }

// steps returns up to maxSteps counts from lo to hi, both included, evenly
// spread.
func steps(lo, hi int) []int {
	if hi < lo {
		return nil
	}
	if hi-lo+1 <= maxSteps {
		var out []int
		for i := lo; i <= hi; i++ {
			out = append(out, i)
		}
		return out
	}
	var out []int
	for i := range maxSteps {
		out = append(out, lo+(hi-lo)*i/(maxSteps-1))
	}
	return slices.Compact(out)
}

// threadOrder is the order the knee adds threads: the first thread of
// every core, then the second threads (SMT), and so on (Fig. 3).
func threadOrder(cores []cpu.Set) cpu.Set {
	var out cpu.Set
	for th := 0; ; th++ {
		added := false
		for _, c := range cores {
			if th < len(c) {
				out = append(out, c[th])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

func firstThreads(cores []cpu.Set) cpu.Set {
	out := make(cpu.Set, len(cores))
	for i, c := range cores {
		out[i] = c[0]
	}
	return out
}

func sorted(s cpu.Set) cpu.Set {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func planKnee(m Machine, cores []cpu.Set, kernels []string, o PlanOptions) []Cell {
	order := threadOrder(cores)
	lo, hi := 1, len(order)
	if o.FG > 0 {
		hi = min(o.FG, hi)
	}
	var cells []Cell
	for _, k := range kernels {
		for _, n := range steps(lo, hi) {
			cells = append(cells, Cell{Preset: PresetKnee, Kernel: k, FG: sorted(order[:n]), Driver: -1, Duration: o.Duration})
		}
	}
	return cells
}

// defaultFG is the background preset's foreground: the paper runs 8
// threads on a 96-core machine, one twelfth, at least one.
func defaultFG(cores int) int { return max(1, cores/12) }

func skippedCell(c Cell, err error) Cell {
	c.Skipped = err.Error()
	return c
}

func planBackground(m Machine, cores []cpu.Set, kernels, modes []string, o PlanOptions) []Cell {
	first := firstThreads(cores)
	fg := o.FG
	if fg <= 0 {
		fg = defaultFG(len(first))
	}
	fg = min(fg, len(first))
	maxBG := len(first) - fg
	if o.BG > 0 {
		maxBG = min(o.BG, maxBG)
	}
	var cells []Cell
	for _, k := range kernels {
		base := Cell{Preset: PresetBackground, Kernel: k, FG: sorted(first[:fg]), Driver: -1, Duration: o.Duration}
		cells = append(cells, base)
		for _, mode := range modes {
			if err := m.modeErr(mode); err != nil {
				c := base
				c.Mode, c.Baseline = mode, base.Key()
				c.BG = sorted(first[fg : fg+min(1, maxBG)])
				cells = append(cells, skippedCell(c, err))
				continue
			}
			if maxBG == 0 {
				c := base
				c.Mode, c.Baseline = mode, base.Key()
				cells = append(cells, skippedCell(c, fmt.Errorf("skipped: topology: no core left for background threads after %d foreground", fg)))
				continue
			}
			for _, n := range steps(1, maxBG) {
				c := base
				c.Mode, c.Baseline = mode, base.Key()
				c.BG = sorted(first[fg : fg+n])
				cells = append(cells, c)
			}
		}
	}
	return cells
}

func (m Machine) modeErr(mode string) error {
	if m.ModeErr == nil {
		return nil
	}
	if err := m.ModeErr(mode); err != nil {
		return fmt.Errorf("skipped: %w", err)
	}
	return nil
}

// placements are the paper's three, in its order.
var placements = []Placement{SameCore, SameDie, OtherDie}

// defaultPlacementThreads is the placement preset's thread count on each
// side: the paper's 16, capped at half the smallest die so that Die fits.
func defaultPlacementThreads(m Machine) int {
	n := 16
	if m.Topo != nil {
		for _, d := range m.Topo.Dies() {
			if cores := len(coresOf(Machine{Topo: m.Topo, Allowed: d.Intersect(m.Allowed)})); cores > 0 {
				n = min(n, max(1, cores/2))
			}
		}
	}
	return n
}

// planPlacement runs, for each placement the topology has, the foreground
// alone on its CPUs (the baseline) and with background threads per mode.
func planPlacement(m Machine, kernel string, modes []string, o PlanOptions) []Cell {
	n := o.FG
	if n <= 0 {
		n = defaultPlacementThreads(m)
	}
	if m.Topo == nil {
		return []Cell{{Preset: PresetPlacement, Kernel: kernel, Driver: -1, Skipped: "skipped: topology: unknown (no sysfs topology)"}}
	}
	var cells []Cell
	for _, p := range placements {
		pair, err := Place(m.Topo, m.Allowed, n, n, p)
		base := Cell{Preset: PresetPlacement, Kernel: kernel, Placement: p.String(),
			FG: sorted(pair.Foreground), Driver: -1, Duration: o.Duration}
		if err == nil {
			cells = append(cells, base)
		}
		for _, mode := range modes {
			c := base
			c.Mode, c.BG, c.Baseline = mode, sorted(pair.Background), base.Key()
			cerr := err
			if cerr == nil {
				cerr = m.modeErr(mode)
			}
			if cerr != nil {
				c = skippedCell(c, cerr)
			}
			cells = append(cells, c)
		}
	}
	return cells
}

// burstyLayout splits the cores for the bursty preset: background threads
// on the last cores (one eighth, at least one), the driver on the core
// before them when one is spare, the foreground on the rest; with no spare
// core the driver shares the foreground's first CPU at real-time priority.
func burstyLayout(cores []cpu.Set, bg int) (fgs, bgs cpu.Set, driver int, err error) {
	first := firstThreads(cores)
	if bg <= 0 {
		bg = max(1, len(first)/8)
	}
	if len(first) < bg+1 {
		return nil, nil, -1, fmt.Errorf("skipped: topology: %d background threads and a foreground need %d cores, %d allowed", bg, bg+1, len(first))
	}
	bgs = sorted(first[len(first)-bg:])
	rest := first[:len(first)-bg]
	if len(rest) >= 2 {
		return sorted(rest[:len(rest)-1]), bgs, rest[len(rest)-1], nil
	}
	return sorted(rest), bgs, rest[0], nil
}

// sharesCore reports whether mode's pollers give their core back while they
// wait (wait.Spec.SharesCore: they block in the kernel): in the bursty
// preset more foreground threads run on the pollers' CPUs, as in the paper's
// Figures 7 and 8. Spinning and halting-in-place modes keep their cores.
func sharesCore(mode string) bool {
	s, ok := wait.Lookup(mode)
	return ok && s.SharesCore
}

func planBursty(m Machine, cores []cpu.Set, kernel string, modes []string, o PlanOptions) []Cell {
	fgs, bgs, driver, layoutErr := burstyLayout(cores, o.BG)
	if o.FG > 0 && o.FG < len(fgs) {
		fgs = fgs[:o.FG]
	}
	scales := o.Scales
	if len(scales) == 0 {
		scales = Scales
	}
	var cells []Cell
	for _, sc := range scales {
		for _, r := range Ratios {
			p := Pattern{sc, r}
			d := max(o.Duration, 2*p.Period())
			// The baseline is the foreground alone on every CPU the
			// cells use (the paper normalises to matmul alone on all
			// threads), with the driver flipping a word nobody watches.
			base := Cell{Preset: PresetBursty, Kernel: kernel, Pattern: &p, PatternS: p.String(),
				FG: sorted(slices.Concat(fgs, bgs)), Driver: driver, Duration: d}
			var skip error
			switch {
			case layoutErr != nil:
				skip = layoutErr
			case o.Quick && p.Period() > 2*time.Second:
				skip = fmt.Errorf("skipped: --quick: one %s-scale period lasts %v", sc.Name, p.Period())
			}
			if skip != nil {
				cells = append(cells, skippedCell(base, skip))
			} else {
				cells = append(cells, base)
			}
			for _, mode := range modes {
				c := base
				c.Mode, c.FG, c.BG, c.Baseline = mode, fgs, bgs, base.Key()
				if sharesCore(mode) {
					c.Shared = bgs
				}
				c.Skipped = ""
				err := skip
				if err == nil {
					err = m.modeErr(mode)
				}
				if err != nil {
					c = skippedCell(c, err)
				}
				cells = append(cells, c)
			}
		}
	}
	return cells
}
