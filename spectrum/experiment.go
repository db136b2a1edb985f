package spectrum

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/observe"
)

// QuickCalibration is the power and frequency sources' calibration with
// RunOptions.Quick: short enough to keep a quick run quick, long enough for
// a counter to move.
const QuickCalibration = 50 * time.Millisecond

// RunOptions is one spectrum experiment: which presets, on which CPUs, for
// how long. The caller checks names (Presets, KernelByName, Modes, Scales)
// beforehand; Plan's errors wrap what is still wrong.
type RunOptions struct {
	// Presets to run, in order; empty means all of Presets.
	Presets []string
	// Plan is passed to Plan for each preset (kernels, modes, counts,
	// Duration per run, Quick, scales).
	Plan PlanOptions
	// Repeats is how many interleaved runs each cell gets (at least 1).
	Repeats int
	// CPUs restricts the experiment; empty means every CPU this process
	// may use.
	CPUs cpu.Set
	// Seed seeds the matrices and burst schedules.
	Seed uint64
	// DriverSpin is how long before each flip the burst driver spins on
	// the clock (0: measure the sleep overshoot; negative: sleep only).
	DriverSpin time.Duration
	// SysRoot is the sysfs root the topology is read from; "" means
	// cpu.DefaultSysRoot.
	SysRoot string
}

// PlanError is Run's error for options Plan rejects (a bad kernel, no
// allowed CPUs): the caller's input, not the machine, is wrong. Its message
// is Plan's.
type PlanError struct{ Err error }

func (e *PlanError) Error() string { return e.Err.Error() }

// Unwrap returns Plan's error.
func (e *PlanError) Unwrap() error { return e.Err }

// Report is what Run measured: the machine, every cell's result and the
// adaptive-against-fixed verdicts.
type Report struct {
	Presets  []string      // the presets run, in order
	Repeats  int           // runs of every cell
	Duration time.Duration // measurement of one run of a cell
	Probe    *ProbeReport
	Results  []Result
	Verdicts []Verdict
	// BlockWake is B, the cost of one block-and-wake between the CPUs
	// the waiting happens on; BlockWakeNote says how it was measured.
	BlockWake     time.Duration
	BlockWakeNote string
	// DriverNote says where the burst driver ran ("" without bursts).
	DriverNote string
	// Elapsed is the wall time of the runs.
	Elapsed time.Duration
}

// plans returns the cells of every preset of o, in order, for machine m.
func plans(m Machine, o RunOptions) ([]Cell, error) {
	var cells []Cell
	for _, p := range o.Presets {
		cs, err := Plan(p, m, o.Plan)
		if err != nil {
			return nil, &PlanError{err}
		}
		cells = append(cells, cs...)
	}
	return cells, nil
}

// Run probes the machine, plans the cells of o's presets, measures B
// between the wake pair, runs every cell o.Repeats times interleaved and
// returns the report. It writes one line on log before the runs (cells,
// repeats, CPUs, B) and calls progress for each run. A cancelled ctx stops
// the runs early; the report then holds what finished and the caller
// decides what to make of ctx.Err(). Plan's errors come as a *PlanError (bad
// options); others are the machine's.
func Run(ctx context.Context, o RunOptions, log io.Writer, progress Progress) (*Report, error) {
	if len(o.Presets) == 0 {
		o.Presets = Presets
	}
	if o.Repeats < 1 {
		return nil, fmt.Errorf("spectrum: %d repeats: must be at least 1", o.Repeats)
	}
	if o.SysRoot == "" {
		o.SysRoot = cpu.DefaultSysRoot
	}
	calib := observe.DefaultCalibration
	if o.Plan.Quick {
		calib = QuickCalibration
	}
	probe, meters, err := Probe(ProbeOptions{Calibrate: calib})
	if err != nil {
		return nil, err
	}
	defer meters.Close()
	allowed := probe.Topology.Allowed
	if len(o.CPUs) > 0 {
		allowed = o.CPUs
	}
	topo, err := cpu.ReadTopology(o.SysRoot)
	if err != nil {
		topo = nil // planning falls back to one core per CPU; placement is skipped
	}
	var avail []string
	for _, k := range Kernels() {
		avail = append(avail, k.Name)
	}
	cells, err := plans(Machine{Topo: topo, Allowed: allowed, Kernels: avail, ModeErr: ModeAvailable}, o)
	if err != nil {
		return nil, err
	}

	// B is measured between the CPUs the waiting happens on, through the
	// line the pollers block on: the probe's B (wait.MeasureBlockWakeAfter)
	// always runs between the first two allowed CPUs, through epoll.
	b := time.Duration(probe.BlockWakeUs * 1e3)
	bNote := "epoll, first two allowed CPUs"
	if x, y, ok := WakePair(cells); ok {
		if b, err = MeasureLineWake(x, y, wait.DefaultMeasureRounds, wait.DefaultMeasureIdle); err != nil {
			return nil, err
		}
		bNote = fmt.Sprintf("CPU %d <-> %d after %v idle; %s %.1fµs", x, y, wait.DefaultMeasureIdle, bNote, probe.BlockWakeUs)
	} else if probe.BlockWakeNA != "" {
		return nil, fmt.Errorf("spectrum: cannot measure B: %s", probe.BlockWakeNA)
	}
	env := &Env{Power: meters.Power, PowerNA: meters.PowerNA, Freq: meters.Freq, FreqNA: meters.FreqNA,
		BlockWake: b, Seed: o.Seed, DriverSpin: o.DriverSpin}
	fmt.Fprintf(log, "spectrum: %d cells x %d repeats on CPUs %s; B = %.1fµs (%s)\n", len(cells), o.Repeats, allowed, float64(b)/1e3, bNote)
	start := time.Now()
	res := env.Run(ctx, cells, o.Repeats, progress)
	return &Report{
		Presets: o.Presets, Repeats: o.Repeats, Duration: o.Plan.Duration,
		Probe: probe, Results: res, Verdicts: Verdicts(res),
		BlockWake: b, BlockWakeNote: bNote, DriverNote: env.DriverNote(),
		Elapsed: time.Since(start),
	}, nil
}

// WriteText writes the report as the spectrum command prints it: a header
// line (machine, repeats, B, burst driver, wall time), one table per preset
// and the verdicts.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "spectrum on %s: %s; %d repeats of %v; B = %.1fµs (%s)",
		r.Probe.Model, r.Probe.Topology.Summary, r.Repeats, r.Duration, float64(r.BlockWake)/1e3, r.BlockWakeNote)
	if r.DriverNote != "" {
		fmt.Fprintf(w, "; burst driver on %s", r.DriverNote)
	}
	if _, err := fmt.Fprintf(w, "; %v\n\n", r.Elapsed.Round(time.Second)); err != nil {
		return err
	}
	for _, p := range r.Presets {
		if err := WriteTable(w, p, r.Results); err != nil {
			return err
		}
	}
	return WriteVerdicts(w, r.Verdicts)
}

// reportJSON is spectrum.json.
type reportJSON struct {
	Probe    *ProbeReport `json:"probe"`
	Results  []Result     `json:"results"`
	Verdicts []Verdict    `json:"adaptive_verdicts,omitempty"`
	Wait     []string     `json:"wait_strategies"`
}

// WriteFiles writes spectrum.json (the probe, every result, the verdicts
// and the wait strategies) and the PNG plots in dir, creating it, and says
// so in one line on w.
func (r *Report) WriteFiles(dir string, w io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("spectrum: %w", err)
	}
	b, err := latency.MarshalJSON(reportJSON{Probe: r.Probe, Results: r.Results, Verdicts: r.Verdicts, Wait: wait.Names()})
	if err != nil {
		return fmt.Errorf("spectrum: encode results: %w", err)
	}
	path := filepath.Join(dir, "spectrum.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("spectrum: %w", err)
	}
	plots, err := WritePlots(dir, r.Results)
	if err != nil {
		return fmt.Errorf("spectrum: %w", err)
	}
	_, err = fmt.Fprintf(w, "wrote %s and %d plots in %s\n", path, len(plots), dir)
	return err
}
