package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/spectrum"
)

func init() {
	register(command{
		name:    "spectrum",
		summary: "run the waiting-spectrum presets (knee, background, placement, bursty): table, JSON, PNG plots",
		run:     runSpectrum,
		flags:   func() *flagSet { fs, _ := spectrumFlags(); return fs },
	})
}

type spectrumArgs struct {
	quick    bool
	duration time.Duration
	repeats  int
	kernels  string
	modes    string
	fg, bg   int
	scales   string
	cpus     cpuSetFlag
	out      string
	seed     uint64
	spin     time.Duration
}

func spectrumFlags() (*flagSet, *spectrumArgs) {
	a := &spectrumArgs{}
	fs := newFlagSet("spectrum", "[PRESET...]", "Reproduces the waiting paper's figures on this machine. Presets: knee (throughput\n"+
		"against foreground threads), background (foreground throughput, frequency and power against\n"+
		"background threads by mode), placement (SMT, Die, Socket), bursty (both applications by burst\n"+
		"scale, busy:idle ratio and mode). No preset runs all four. Each cell runs --repeats times,\n"+
		"interleaved; figures are medians with [min-max]. Modes and placements this machine cannot\n"+
		"run are listed as skipped with the reason.")
	fs.BoolVar(&a.quick, "quick", false, fmt.Sprintf("short runs (%v each) and no second-scale bursts: all presets in under 3 minutes on 2 CPUs", spectrum.DefaultQuickDuration))
	cliflag.Positive(&a.duration).Var(fs.FlagSet, "duration", spectrum.DefaultDuration, "measurement of one run of a cell (bursty cells last at least two burst periods)")
	cliflag.AtLeast(&a.repeats, 1).Var(fs.FlagSet, "repeats", spectrum.DefaultRepeats, "runs of every cell")
	fs.StringVar(&a.kernels, "kernel", "", "comma-separated kernels, scalar and avx512 (default: all this CPU runs; placement and bursty use the first)")
	fs.StringVar(&a.modes, "modes", "", "comma-separated background modes (default: each preset's own): "+strings.Join(spectrum.Modes(), ", "))
	cliflag.AtLeast(&a.fg, 0).Var(fs.FlagSet, "fg", 0, "foreground threads (default: the preset's own)")
	cliflag.AtLeast(&a.bg, 0).Var(fs.FlagSet, "bg", 0, "background threads, or the largest count a sweep reaches (default: the preset's own)")
	fs.StringVar(&a.scales, "scales", "", "comma-separated burst scales: us, ms, s (default: all; --quick leaves s out)")
	fs.Var(&a.cpus, "cpus", "CPUs to use (default: all this process may use)")
	fs.StringVar(&a.out, "out", "spectrum-results", "directory for spectrum.json and the PNG plots, new or empty (\"\" writes neither; the default gets -2, -3... when taken)")
	cliflag.Any(&a.seed).Var(fs.FlagSet, "seed", spectrum.DefaultSeed, "seed of the matrices and burst schedules")
	cliflag.Any(&a.spin).Var(fs.FlagSet, "driver-spin", spectrum.DefaultDriverSpin, "how long before each flip the burst driver stops sleeping and spins on the clock\n"+
		"(0: measure the sleep overshoot on the driver's thread before the first bursty run; negative: sleep only)")
	fs.example(
		`spindle spectrum --quick`,
		`spindle spectrum --repeats 5 --out spectrum-results knee bursty`,
	)
	return fs, a
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func runSpectrum(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, a := spectrumFlags()
	presets, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(presets) == 0 {
		presets = spectrum.Presets
	}
	for _, p := range presets {
		if !slices.Contains(spectrum.Presets, p) {
			return badInput("unknown preset %q (want %s)", p, strings.Join(spectrum.Presets, ", "))
		}
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if a.out != "" { // an earlier run's files are never overwritten
		given := ""
		if explicit["out"] {
			given = a.out
		}
		if a.out, err = outputDir("out", given, a.out); err != nil {
			return err
		}
	}
	if a.quick && !explicit["duration"] {
		a.duration = spectrum.DefaultQuickDuration
	}
	kernels := splitList(a.kernels)
	for _, k := range kernels {
		if _, err := spectrum.KernelByName(k); err != nil {
			return asBadInput(err)
		}
	}
	modes := splitList(a.modes)
	for _, m := range modes {
		if !slices.Contains(spectrum.Modes(), m) {
			return badInput("unknown mode %q (want %s)", m, strings.Join(spectrum.Modes(), ", "))
		}
	}
	var scales []spectrum.Scale
	for _, s := range splitList(a.scales) {
		i := slices.IndexFunc(spectrum.Scales, func(x spectrum.Scale) bool { return x.Name == s })
		if i < 0 {
			return badInput("unknown scale %q (want us, ms or s)", s)
		}
		scales = append(scales, spectrum.Scales[i])
	}
	if err := checkCPUs("cpus", a.cpus.set); err != nil {
		return err
	}

	o := spectrum.RunOptions{
		Presets: presets, Repeats: a.repeats, CPUs: a.cpus.set, Seed: a.seed, DriverSpin: a.spin,
		Plan: spectrum.PlanOptions{Kernels: kernels, Modes: modes, FG: a.fg, BG: a.bg, Duration: a.duration, Quick: a.quick, Scales: scales},
	}
	var progress spectrum.Progress
	if isTerminal(stderr) {
		progress = func(line string, done bool) {
			if done {
				fmt.Fprintf(stderr, "  %s\n", line)
			}
		}
	} else { // a CI log: each run started and finished, a heartbeat while one runs
		plog := startProgressLog(stderr, "spectrum", heartbeatEvery, heartbeatTick)
		defer plog.close()
		progress = func(line string, done bool) {
			plog.printf("%s", line)
			if done {
				plog.setStatus("")
			} else {
				plog.setStatus(strings.TrimSuffix(line, ": started"))
			}
		}
	}
	rep, err := spectrum.Run(ctx, o, stderr, progress)
	if ce := (*spectrum.CountError)(nil); errors.As(err, &ce) {
		return badInput("--%s %d: the %s preset runs at most %d here (%s)",
			strings.ToLower(ce.Option), ce.Value, ce.Preset, ce.Max, ce.Why)
	}
	if pe := (*spectrum.PlanError)(nil); errors.As(err, &pe) {
		return asBadInput(pe.Err)
	} else if err != nil {
		return err
	}
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if a.out != "" {
		if err := rep.WriteFiles(a.out, stdout); err != nil {
			return err
		}
	}
	return ctx.Err()
}
