package spectrum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
	"github.com/spindle-lab/spindle/observe"
	"github.com/spindle-lab/spindle/quantile"
)

// Cell is one configuration of a figure: foreground threads on FG running
// Kernel, background threads on BG in Mode, optionally driven by a burst
// Pattern. A cell without BG is a baseline.
type Cell struct {
	Preset    string   `json:"preset"`
	Kernel    string   `json:"kernel"`
	Mode      string   `json:"mode,omitempty"`      // background mode; "" for a baseline
	Placement string   `json:"placement,omitempty"` // SMT, Die, Socket, or "" (not a placement cell)
	Pattern   *Pattern `json:"-"`
	PatternS  string   `json:"pattern,omitempty"`
	FG        cpu.Set  `json:"fg_cpus"`
	BG        cpu.Set  `json:"bg_cpus,omitempty"`
	// Shared are CPUs where more foreground threads run beside the
	// background pollers, which then wait at real-time priority: as in the
	// paper's bursty figures, a poller that blocks gives its core to the
	// foreground and preempts it the moment it wakes.
	Shared cpu.Set `json:"shared_cpus,omitempty"`

	// Driver is the CPU of the burst driver (bursty cells), -1 for none.
	Driver int `json:"driver_cpu"`
	// Duration is how long one run measures.
	Duration time.Duration `json:"duration_ns"`
	// Baseline is the key of the cell this one is normalised to.
	Baseline string `json:"baseline,omitempty"`
	// Skipped says why the cell cannot run here ("" when it can).
	Skipped string `json:"skipped,omitempty"`
}

// Key identifies the cell within its preset.
func (c Cell) Key() string {
	k := fmt.Sprintf("%s fg=%d", c.Kernel, len(c.FG))
	if c.Placement != "" {
		k += " " + c.Placement
	}
	if c.PatternS != "" {
		k += " " + c.PatternS
	}
	if c.Mode == "" {
		return k + " baseline"
	}
	k = fmt.Sprintf("%s bg=%d %s", k, len(c.BG), c.Mode)
	if len(c.Shared) > 0 {
		k += fmt.Sprintf(" +%d shared", len(c.Shared))
	}
	return k
}

// Sample is one run of a cell.
type Sample struct {
	FgMops      float64 // foreground matmuls per µs, summed over threads (Mop/s)
	FgOps       int64
	BgMpps      float64 // background pseudo packets, millions per second
	BgMops      float64 // background matmuls (matmul mode), Mop/s
	WakeP50     float64 // µs, NaN when no wake-up was measured
	WakeP99     float64
	Wakes       int
	BgCPU       float64 // background CPU time over wall time, percent of one CPU per thread
	FgCPU       float64
	CtxSwitches float64 // background voluntary+involuntary switches per second
	Watts       float64 // NaN: n/a
	GHz         float64 // NaN: n/a
	Steal       float64 // percent of the cell's CPUs' time; NaN: n/a
	// WaitCost is the waiting cost per background thread in percent of
	// one CPU: CPU time spent waiting (total minus packet processing) plus
	// B for every block-and-wake, over the run's wall time.
	WaitCost float64
	Blocks   int64 // waits that blocked, all background threads
	Late     time.Duration
	// BusyShare is the share of the run the line was busy, as the driver
	// achieved it (percent; NaN without bursts).
	BusyShare float64
	// DriverCPU is the burst driver's CPU time over the run's wall time,
	// percent of one CPU (NaN without bursts or where it could not be read).
	DriverCPU float64
}

// MarshalJSON writes a sample with the names Result uses; a figure that
// could not be had (NaN) is null, never a made-up number.
func (s Sample) MarshalJSON() ([]byte, error) {
	f := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	return json.Marshal(struct {
		FgMops      *float64 `json:"fg_mops"`
		FgOps       int64    `json:"fg_ops"`
		BgMpps      *float64 `json:"bg_mpps"`
		BgMops      *float64 `json:"bg_mops"`
		WakeP50     *float64 `json:"wake_p50_us"`
		WakeP99     *float64 `json:"wake_p99_us"`
		Wakes       int      `json:"wakes"`
		BgCPU       *float64 `json:"bg_cpu_pct"`
		FgCPU       *float64 `json:"fg_cpu_pct"`
		CtxSwitches *float64 `json:"bg_ctx_switches_per_s"`
		Watts       *float64 `json:"package_watts"`
		GHz         *float64 `json:"fg_ghz"`
		Steal       *float64 `json:"steal_pct"`
		WaitCost    *float64 `json:"wait_cost_pct"`
		Blocks      int64    `json:"blocks"`
		Late        float64  `json:"driver_late_us"`
		BusyShare   *float64 `json:"busy_share_pct"`
		DriverCPU   *float64 `json:"driver_cpu_pct"`
	}{f(s.FgMops), s.FgOps, f(s.BgMpps), f(s.BgMops), f(s.WakeP50), f(s.WakeP99), s.Wakes,
		f(s.BgCPU), f(s.FgCPU), f(s.CtxSwitches), f(s.Watts), f(s.GHz), f(s.Steal), f(s.WaitCost),
		s.Blocks, float64(s.Late) / 1e3, f(s.BusyShare), f(s.DriverCPU)})
}

// Env is what every cell run shares: the meters and the waiting options.
type Env struct {
	Power     observe.EnergyMeter // nil: watts n/a
	PowerNA   string              // the reason, when Power is nil
	Freq      observe.FreqMeter   // nil: GHz n/a
	FreqNA    string
	BlockWake time.Duration // B, measured once
	Wait      wait.Options  // for the strategies; BlockWake is set to B
	Seed      uint64
	// DriverSpin is how long before each flip the burst driver stops
	// sleeping and spins on the clock: 0 (DefaultDriverSpin) measures it
	// on the driver's thread before the first bursty run and keeps it for
	// the others (MeasureSleepOvershoot), a
	// negative value sleeps all the way (the driver before the hybrid
	// wait), a positive one is used as given.
	DriverSpin time.Duration
	// driverNote says where and at what priority the first burst driver
	// ran; written by its goroutine before the run it reports on ends.
	driverNote string
	// spin is the measured spin window, 0 until the first driver measured
	// it. A window measured before every run varied from 20 to 60µs on
	// dev-2vcpu, and one above a µs pattern's period kept the real-time
	// driver spinning until the kernel throttled it (flips 2ms late).
	spin time.Duration
}

// DriverNote says how the burst driver ran ("" before any bursty cell).
func (e *Env) DriverNote() string { return e.driverNote }

// DefaultDriverSpin calibrates the driver's spin window on its own thread.
const DefaultDriverSpin time.Duration = 0

// driverPriority is the burst driver's SCHED_FIFO priority: above every
// ordinary thread, below the kernel's own real-time threads (which use 99).
const driverPriority = 50

// pollerPriority is the SCHED_FIFO priority of a poller that shares its CPU
// with foreground threads: above them, below the driver. Pollers with a
// core of their own stay ordinary threads: a spinning real-time poller
// exhausts the real-time budget (sched_rt_runtime_us), and the kernel then
// throttles the driver too, delaying flips by milliseconds.
const pollerPriority = 40

// RunCell runs one cell once. round varies the seed between repeats.
func (e *Env) RunCell(c Cell, round int) (Sample, error) {
	if c.Skipped != "" {
		return Sample{}, fmt.Errorf("%w: %s", ErrNotSupported, c.Skipped)
	}
	k, err := KernelByName(c.Kernel)
	if err != nil {
		return Sample{}, err
	}
	defer enoughProcs(len(c.FG) + len(c.Shared) + len(c.BG) + 1)() // + the driver
	defer noGC()()
	g := newGate()
	fgCPUs := slices.Concat(c.FG, c.Shared)
	fg := make([]threadStats, len(fgCPUs))
	for i, cc := range fgCPUs {
		g.pinned(cc, fmt.Sprintf("spectrum-fg%d", i), &fg[i], matmulLoop(g, k, e.Seed+uint64(i)))
	}
	line := &Line{}
	bg := make([]threadStats, len(c.BG))
	for i, cc := range c.BG {
		var body func(*threadStats)
		switch c.Mode {
		case ModeMatmul:
			body = matmulLoop(g, k, e.Seed+uint64(1000+i))
		case ModeWork:
			body = workLoop(g)
		default:
			o := e.Wait
			// Every strategy is scored with B (WaitCost): the adaptive
			// one is given it and keeps it, so that it minimises the
			// cost it is scored by rather than one with the wake
			// latency it times itself (about 20µs on dev-2vcpu where B
			// measured 23-50µs from run to run).
			o.BlockWake, o.FixedB = e.BlockWake, true
			s, err := wait.New(c.Mode, o)
			if err != nil {
				g.stop.Store(true)
				close(g.start)
				g.done.Wait()
				return Sample{}, err
			}
			body = pollLoop(line, s, c.Pattern != nil)
			if len(c.Shared) > 0 {
				poll := body
				body = func(out *threadStats) {
					if err := unix.SetFIFO(pollerPriority); err != nil {
						out.err = fmt.Errorf("a poller sharing its CPU needs real-time priority: %w", err)
						return
					}
					poll(out)
				}
			}
		}
		g.pinned(cc, fmt.Sprintf("spectrum-bg%d", i), &bg[i], body)
	}
	g.ready.Wait()

	cells := slices.Concat(c.FG, c.BG)
	slices.Sort(cells)
	cells = slices.Compact(cells)
	st0, stealErr := observe.ReadStatTimes("")
	var j0 float64
	var powerErr error
	if e.Power != nil {
		j0, powerErr = e.Power.Joules()
	}
	var endFreq func() (float64, error)
	var freqErr error
	if e.Freq != nil {
		endFreq, freqErr = e.Freq.Begin(fgCPUs)
	}

	start := time.Now()
	close(g.start)
	var drv *Driver
	drvDone := make(chan DriverStats, 1)
	if c.Pattern != nil {
		drv = NewDriver(line, NewSchedule(*c.Pattern, e.Seed+uint64(round)))
		go e.drive(drv, c.Driver, wait.Now()+int64(c.Duration)+int64(time.Second), drvDone)
	}
	time.Sleep(c.Duration)
	g.stop.Store(true)
	if drv != nil {
		drv.Stop()
	}
	line.Close()
	g.done.Wait()
	wall := time.Since(start)
	var ds DriverStats
	if drv != nil {
		ds = <-drvDone
	}

	s := Sample{Watts: math.NaN(), GHz: math.NaN(), Steal: math.NaN(), WakeP50: math.NaN(), WakeP99: math.NaN()}
	if e.Power != nil && powerErr == nil {
		if j1, err := e.Power.Joules(); err == nil {
			s.Watts = observe.Watts(j0, j1, wall)
		}
	}
	if endFreq != nil && freqErr == nil {
		if ghz, err := endFreq(); err == nil {
			s.GHz = ghz
		}
	}
	if stealErr == nil {
		if st1, err := observe.ReadStatTimes(""); err == nil {
			if p, err := observe.StealPercent(st0, st1, cells); err == nil {
				s.Steal = p
			}
		}
	}
	for _, t := range slices.Concat(fg, bg) {
		if t.err != nil {
			return Sample{}, t.err
		}
	}
	var fgCPU time.Duration
	for _, t := range fg {
		s.FgOps += t.ops
		s.FgMops += float64(t.ops) / float64(t.elapsed.Nanoseconds()) * 1e3
		fgCPU += time.Duration(t.usage.UserNs + t.usage.SysNs)
	}
	s.FgCPU = 100 * float64(fgCPU) / float64(wall) / float64(max(len(fg), 1))
	var wakes []int64
	var bgCPU, waitNs, ctx int64
	for _, t := range bg {
		sec := t.elapsed.Seconds()
		s.BgMpps += float64(t.packets) / sec / 1e6
		s.BgMops += float64(t.ops) / sec / 1e6
		cpuNs := t.usage.UserNs + t.usage.SysNs
		bgCPU += cpuNs
		ctx += t.usage.Voluntary + t.usage.Involuntary
		s.Blocks += t.blocks
		waitNs += max(cpuNs-t.procNs, 0) + t.blocks*int64(e.BlockWake)
		wakes = append(wakes, t.wakes...)
	}
	if n := len(bg); n > 0 {
		s.BgCPU = 100 * float64(bgCPU) / float64(wall) / float64(n)
		s.WaitCost = 100 * float64(waitNs) / float64(wall) / float64(n)
		s.CtxSwitches = float64(ctx) / wall.Seconds()
	}
	if len(wakes) > 0 {
		slices.Sort(wakes)
		s.Wakes = len(wakes)
		s.WakeP50 = float64(quantile.NearestRank(wakes, 50)) / 1e3
		s.WakeP99 = float64(quantile.NearestRank(wakes, 99)) / 1e3
	}
	s.BusyShare, s.DriverCPU = math.NaN(), math.NaN()
	if ds.CPUNs > 0 {
		s.DriverCPU = 100 * float64(ds.CPUNs) / float64(wall)
	}
	if ds.Periods > 0 {
		s.Late = time.Duration(ds.LateNs / int64(2*ds.Periods))
		s.BusyShare = 100 * float64(ds.BusyNs) / float64(ds.BusyNs+ds.IdleNs)
	}
	return s, nil
}

// drive runs the burst driver on its own locked thread, pinned to c, at
// real-time priority where allowed.
func (e *Env) drive(d *Driver, c int, until int64, done chan<- DriverStats) {
	runtime.LockOSThread() // never unlocked: the thread exits with its priority
	where := "unpinned"
	if c >= 0 {
		where = fmt.Sprintf("CPU %d", c)
		if err := cpu.Pin(cpu.Set{c}); err != nil {
			where = fmt.Sprintf("unpinned (CPU %d: %v)", c, err)
		}
	}
	prio := "SCHED_FIFO"
	if err := unix.SetFIFO(driverPriority); err != nil {
		prio = fmt.Sprintf("normal priority (%v)", errors.Unwrap(err))
	}
	note := where + ", " + prio
	_ = unix.SetThreadName("spectrum-drv")
	spin, how := e.DriverSpin, "given"
	switch {
	case spin == 0 && e.spin > 0:
		spin, how = e.spin, "measured on its thread before the first run"
	case spin == 0:
		spin, how = MeasureSleepOvershoot(), "measured on its thread before the first run"
		e.spin = spin
	case spin < 0:
		spin, how = 0, "off: it sleeps to each flip"
	}
	note += fmt.Sprintf(", spin window %.1fµs (%s", float64(spin)/1e3, how)
	if how != "given" && spin > 0 {
		// A measured window is capped per pattern; a given one is not.
		spin = min(spin, d.Schedule.p.SpinCap(driverDuty))
		note += fmt.Sprintf("; per pattern at most the window that keeps the spin under %.0f%% of the driver's CPU", 100*driverDuty)
	}
	note += ")"
	d.SetSpin(spin)
	if spin > 0 && c >= 0 {
		note += "; the spin's CPU time is taken from whatever shares that CPU"
	}
	if e.driverNote == "" {
		e.driverNote = note
	}
	var st DriverStats
	if u, err := usageOf(func() { st = d.Run(until) }); err == nil {
		st.CPUNs = u.UserNs + u.SysNs
	}
	done <- st
}

// Progress receives a line when each run starts (done false) and when it
// finishes (done true, with its throughput); may be nil.
type Progress func(line string, done bool)

// Run runs cells repeats times, interleaved (every cell once per round, so
// that slow drifts of the machine spread over all cells), and summarises
// each cell. A cell that fails keeps its error and the rest go on. It stops
// early when ctx is done, summarising what it has.
func (e *Env) Run(ctx context.Context, cells []Cell, repeats int, progress Progress) []Result {
	res := make([]Result, len(cells))
	byKey := map[string]int{}
	for i, c := range cells {
		res[i].Cell = c
		byKey[c.Key()] = i
	}
	rounds := make([][]Sample, len(cells)) // per cell, per round (zero Sample when missing)
	for round := 0; round < repeats; round++ {
		for i, c := range cells {
			if c.Skipped != "" || res[i].Error != "" || ctx.Err() != nil {
				continue
			}
			name := fmt.Sprintf("%s %d/%d %s", c.Preset, round+1, repeats, c.Key())
			if progress != nil {
				progress(name+": started", false)
			}
			s, err := e.RunCell(c, round)
			if err != nil {
				res[i].Error = err.Error()
				if progress != nil {
					progress(name+": failed: "+err.Error(), true)
				}
				continue
			}
			rounds[i] = append(rounds[i], s)
			if progress != nil {
				progress(fmt.Sprintf("%s: %.3f Mop/s", name, s.FgMops), true)
			}
		}
	}
	for i := range res {
		r := &res[i]
		ss := rounds[i]
		r.Rounds = ss
		if r.Skipped != "" || len(ss) == 0 {
			continue
		}
		var base []Sample
		if j, ok := byKey[r.Baseline]; ok && r.Baseline != "" {
			base = rounds[j]
		}
		r.summarise(ss, base, e)
	}
	return res
}
