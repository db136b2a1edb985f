package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/observe"
	"github.com/spindle-lab/spindle/spectrum"
)

func init() {
	register(command{
		name:    "probe",
		summary: "describe this machine for the waiting spectrum: CPU, topology, power and frequency sources, B, PAUSE, steal, pollers",
		run:     runProbe,
		flags:   func() *flagSet { fs, _ := probeFlags(); return fs },
	})
}

type probeArgs struct {
	jsonPath  string
	calibrate time.Duration
}

func probeFlags() (*flagSet, *probeArgs) {
	a := &probeArgs{}
	fs := newFlagSet("probe", "", "Prints the CPU's capabilities that matter for waiting (PAUSE, WAITPKG, MONITORX,\n"+
		"AVX-512 with OS support), the topology, each power and frequency source as \"available\" or\n"+
		"\"n/a (reason)\" (a counter that does not move during a busy calibration counts as n/a),\n"+
		"the measured cost of one block-and-wake (B) and of one PAUSE, steal time, and whether the\n"+
		"carriers' pollers (epoll, io_uring) can run here, with the reason when not.")
	fs.StringVar(&a.jsonPath, "json", "", "also write the report as JSON to `FILE` (\"-\": stdout, the text then goes to stderr)")
	cliflag.Positive(&a.calibrate).Var(fs.FlagSet, "calibrate", observe.DefaultCalibration, "busy calibration of each power and frequency source")
	fs.example(
		`spindle probe`,
		`spindle probe --json probe.json`,
	)
	return fs, a
}

func runProbe(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, a := probeFlags()
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInput("probe takes no arguments (got %q)", pos[0])
	}
	jsonOut, stdout, err := jsonOutput(a.jsonPath, stdout, stderr)
	if err != nil {
		return err
	}
	r, m, err := spectrum.Probe(spectrum.ProbeOptions{Calibrate: a.calibrate})
	if err != nil {
		return err
	}
	m.Close()
	pr := probeReport{ProbeReport: r, Pollers: map[string]string{}}
	for _, name := range carrier.Pollers {
		pr.Pollers[name] = "available"
		if err := carrier.CheckPoller(name); err != nil {
			pr.Pollers[name] = observe.NA(err.Error())
		}
	}
	pr.Slice = sliceLine(carrier.ProbeSlice())
	pr.Batch = batchLine(carrier.ProbeBatch())
	if err := writeProbe(stdout, r); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "pollers:        %s\ntime slice:     %s\nother threads:  %s\n", named(pr.Pollers, carrier.Pollers), pr.Slice, pr.Batch); err != nil {
		return err
	}
	if a.jsonPath != "" {
		return writeJSONOut(a.jsonPath, jsonOut, pr)
	}
	return nil
}

// sliceLine says what carriers' time slice (carrier.Options.Slice) gets
// here, from carrier.ProbeSlice's figures.
func sliceLine(def, granted time.Duration, err error) string {
	switch {
	case err != nil:
		return observe.NA(err.Error())
	case granted == 0:
		return observe.NA("the kernel keeps no time slice per thread (before Linux 6.12): carriers' --slice has no effect")
	case granted >= def:
		return fmt.Sprintf("the kernel's default %v, a carrier's %v: not shorter, so a carrier woken by I/O waits for the running thread's slice to end (set --slice below %v)", def, granted, def)
	}
	return fmt.Sprintf("the kernel's default %v, a carrier's %v (a carrier woken by I/O preempts the process's other threads on its CPU: --slice)", def, granted)
}

// batchLine says what carriers' batching of the process's other threads
// (--batch-others) gets here, from carrier.ProbeBatch's answer.
func batchLine(err error) string {
	if err != nil {
		return observe.NA(err.Error() + ": --batch-others has no effect, a woken runtime thread may preempt a carrier")
	}
	return "under SCHED_BATCH while carriers block in their pollers (a woken runtime thread waits for a carrier's CPU instead of preempting it: --batch-others)"
}

// probeReport is the spectrum's probe with what the carriers' I/O can use.
type probeReport struct {
	*spectrum.ProbeReport
	// Pollers maps each carrier poller to "available" or "n/a (reason)".
	Pollers map[string]string `json:"pollers"`
	// Slice is what a carrier's time slice gets here (sliceLine).
	Slice string `json:"time_slice"`
	// Batch is what the batching of the other threads gets here (batchLine).
	Batch string `json:"other_threads"`
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func sets(ss []cpu.Set) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.String()
	}
	return strings.Join(out, " | ")
}

// writeProbe prints the report as text.
func writeProbe(w io.Writer, r *spectrum.ProbeReport) error {
	fmt.Fprintf(w, "CPU:            %s (%s, %s)\n", r.Model, r.Vendor, r.Arch)
	fmt.Fprintf(w, "capabilities:   PAUSE %s, WAITPKG (TPAUSE/UMWAIT) %s, MONITORX (MWAITX) %s, AVX-512F with OS support %s, invariant TSC %s\n",
		yesNo(r.Caps["PAUSE"]), yesNo(r.Caps["WAITPKG"]), yesNo(r.Caps["MONITORX"]), yesNo(r.Caps["AVX512F"]), yesNo(r.Caps["InvariantTSC"]))
	if r.CapsNote != "" {
		fmt.Fprintf(w, "                (%s)\n", r.CapsNote)
	}
	t := r.Topology
	if t.Error != "" {
		fmt.Fprintf(w, "topology:       n/a (%s)\n", t.Error)
	} else {
		fmt.Fprintf(w, "topology:       %s\n", t.Summary)
		fmt.Fprintf(w, "  CPUs:         %s (this process may use %s)\n", t.CPUs, t.Allowed)
		fmt.Fprintf(w, "  SMT siblings: %s\n", sets(t.Cores))
		fmt.Fprintf(w, "  dies:         %s\n", sets(t.Dies))
		fmt.Fprintf(w, "  L3 clusters:  %s\n", sets(t.Clusters))
		fmt.Fprintf(w, "  packages:     %s\n", sets(t.Packages))
	}
	fmt.Fprintf(w, "kernels:        %s\n", named(r.Kernels, []string{"scalar", "avx512"}))
	fmt.Fprintf(w, "wait:           %s\n", named(r.Strategies, wait.Names()))
	fmt.Fprintln(w, "power sources:")
	for _, s := range r.Power {
		fmt.Fprintf(w, "  %-24s %s\n", s.Name+":", s)
	}
	fmt.Fprintln(w, "frequency sources:")
	for _, s := range r.Freq {
		fmt.Fprintf(w, "  %-24s %s\n", s.Name+":", s)
	}
	if r.BlockWakeNA != "" {
		fmt.Fprintf(w, "block-and-wake: B %s\n", r.BlockWakeNA)
	} else {
		fmt.Fprintf(w, "block-and-wake: B = %.1fµs after %v idle (%.1fµs back-to-back), median of %d, epoll+eventfd pinned to the first two allowed CPUs\n",
			r.BlockWakeUs, wait.DefaultMeasureIdle, r.BlockWakeHotUs, 2*wait.DefaultMeasureRounds)
	}
	if r.BlockWakeCrossNA != "" {
		fmt.Fprintf(w, "                across CPUs %s\n", r.BlockWakeCrossNA)
	} else {
		fmt.Fprintf(w, "                B = %.1fµs between pinned threads on CPUs %d and %d (futex, after %v idle)\n",
			r.BlockWakeCrossUs, r.BlockWakeCPUs[0], r.BlockWakeCPUs[1], wait.DefaultMeasureIdle)
	}
	fmt.Fprintf(w, "idle:           %s\n", r.Idle)
	if r.Idle.HaltsAtOnce() {
		fmt.Fprintf(w, "                a carrier that must answer fast can poll through short gaps itself: --park-idle --wait adaptive --wait-b 200us (docs/server.md, \"The lowest tail\")\n")
	}
	if r.PauseNA != "" {
		fmt.Fprintf(w, "PAUSE:          %s\n", r.PauseNA)
	} else {
		fmt.Fprintf(w, "PAUSE:          %.1fns each\n", r.PauseNs)
	}
	_, err := fmt.Fprintf(w, "steal:          %s since boot, %s during the probe\n", r.StealBoot, r.StealNow)
	return err
}

// named renders "a available, b n/a (why)" in the given order, then any
// other names sorted.
func named(m map[string]string, order []string) string {
	var parts []string
	for _, n := range order {
		if v, ok := m[n]; ok {
			parts = append(parts, n+" "+v)
		}
	}
	var rest []string
	for n := range m {
		if !slices.Contains(order, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	for _, n := range rest {
		parts = append(parts, n+" "+m[n])
	}
	return strings.Join(parts, ", ")
}
