package spectrum

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/internal/unix"
	"github.com/spindle-lab/spindle/quantile"
)

// Scale is a burst timescale: the busy and idle periods of a pattern are
// multiples of its Unit.
type Scale struct {
	Name string        // "us", "ms" or "s"
	Unit time.Duration // one part of a busy:idle ratio
}

// The paper's three timescales. The microsecond unit is 10µs (a period of
// 100µs): a driver that sleeps between flips cannot flip reliably faster on
// a virtual machine, where one timer wake-up alone takes several µs.
var (
	ScaleMicro  = Scale{"us", 10 * time.Microsecond}
	ScaleMilli  = Scale{"ms", time.Millisecond}
	ScaleSecond = Scale{"s", time.Second}
)

// Scales lists the timescales in order.
var Scales = []Scale{ScaleMicro, ScaleMilli, ScaleSecond}

// Ratio is a busy:idle ratio in parts of a scale's unit.
type Ratio struct{ Busy, Idle int }

// Ratios are the paper's busy:idle ratios.
var Ratios = []Ratio{{1, 9}, {5, 5}, {9, 1}}

// String is "busy:idle", e.g. "1:9".
func (r Ratio) String() string { return fmt.Sprintf("%d:%d", r.Busy, r.Idle) }

// Pattern is one burst pattern: a scale and a ratio.
type Pattern struct {
	Scale Scale
	Ratio Ratio
}

// String is the scale and the ratio, e.g. "us 1:9".
func (p Pattern) String() string { return p.Scale.Name + " " + p.Ratio.String() }

// Period is the mean length of one busy plus one idle period.
func (p Pattern) Period() time.Duration {
	return time.Duration(p.Ratio.Busy+p.Ratio.Idle) * p.Scale.Unit
}

// Schedule draws a pattern's busy and idle lengths from a seeded generator:
// each is its mean (ratio part × unit) times a uniform factor in [0.5, 1.5),
// so the ratio holds on average while idle lengths vary, as a learning
// waiting policy meets them. The same seed gives the same sequence.
type Schedule struct {
	p   Pattern
	rng *rand.Rand
}

// NewSchedule returns the schedule of p for seed.
func NewSchedule(p Pattern, seed uint64) *Schedule {
	return &Schedule{p: p, rng: rand.New(rand.NewPCG(seed, uint64(p.Period())))}
}

// jitter scales mean by a factor in [0.5, 1.5).
func (s *Schedule) jitter(parts int) int64 {
	mean := float64(int64(parts) * int64(s.p.Scale.Unit))
	return int64(mean * (0.5 + s.rng.Float64()))
}

// Next returns the next idle and busy lengths in nanoseconds (the driver
// starts each period idle, so its first flip is a wake-up).
func (s *Schedule) Next() (idle, busy int64) {
	idle = s.jitter(s.p.Ratio.Idle)
	busy = s.jitter(s.p.Ratio.Busy)
	return idle, busy
}

// Clock is the driver's time source: monotonic nanoseconds and a sleep to an
// absolute time. The real one sleeps the OS thread; tests use a fake.
type Clock interface {
	Now() int64
	SleepUntil(t int64)
}

// DriverStats describes one run of the driver.
type DriverStats struct {
	Periods   int   // busy periods started
	BusyNs    int64 // time the line was busy, as flipped
	IdleNs    int64 // time the line was idle, as flipped
	MaxLateNs int64 // largest delay of a flip after its intended time
	// LateNs is the sum of flip delays; LateNs/(2·Periods) is the mean.
	LateNs int64
	// CPUNs is the driver thread's CPU time over the run (sleeping costs
	// none, spinning all of it); 0 where it could not be read.
	CPUNs int64
}

// Driver flips a Line between idle and busy following a Schedule. Each
// period lasts at least its drawn length from the flip that began it; a
// late wake-up lengthens the period it ends, so where wake-ups are late the
// achieved busy share (DriverStats.BusyNs) departs from the ratio, and the
// spectrum reports it.
type Driver struct {
	Line     *Line
	Schedule *Schedule
	Clock    Clock
	stop     atomic.Bool
}

// Stop makes Run return at its next wake-up.
func (d *Driver) Stop() { d.stop.Store(true) }

// Run drives the line from now until the clock reaches until (or Stop),
// leaving it idle, and reports what it did.
func (d *Driver) Run(until int64) DriverStats {
	var st DriverStats
	next := d.Clock.Now()
	last := next
	flip := func(busy bool) bool {
		d.Clock.SleepUntil(min(next, until))
		now := d.Clock.Now()
		if d.stop.Load() || next >= until || now >= until {
			return false
		}
		late := max(now-next, 0)
		st.LateNs += late
		st.MaxLateNs = max(st.MaxLateNs, late)
		if busy {
			st.IdleNs += now - last
			st.Periods++
			d.Line.SetBusy(now)
		} else {
			st.BusyNs += now - last
			d.Line.SetIdle()
		}
		last = now
		// The next period is timed from this flip, not from when it
		// was due: a late wake-up lengthens the period it ends but never
		// shortens the next one (otherwise, where timer wake-ups take
		// longer than a busy period, busy periods would vanish).
		next = now
		return true
	}
	for {
		idle, busy := d.Schedule.Next()
		next += idle
		if !flip(true) {
			break
		}
		next += busy
		if !flip(false) {
			break
		}
	}
	now := d.Clock.Now()
	if d.Line.Busy() {
		st.BusyNs += now - last
		d.Line.SetIdle()
	} else {
		st.IdleNs += now - last
	}
	return st
}

// hybridClock is the driver's real clock: it sleeps until Spin before a
// deadline and spins on the clock from there, so a flip is as late as one
// read of the clock rather than one timer wake-up. A sleep on a virtual
// machine wakes 20-45µs late (dev-2vcpu, SCHED_FIFO, no timer slack), longer
// than a 10µs busy period; sleeping alone cannot hold a µs-scale pattern.
// The functions are fields so that tests run the logic on a fake clock.
type hybridClock struct {
	now   func() int64
	sleep func(ns int64) // sleeps about ns; may return early
	relax func()         // one step of the spin (nil: re-read the clock at once)
	stop  *atomic.Bool
	// Spin is how long before a deadline sleeping ends and spinning
	// begins, in ns; 0 sleeps all the way (the wake-up's lateness stays).
	Spin int64
}

// maxSleep bounds one sleep of the real clock: how long a stop may wait.
// It is the raw sleep's own bound (unix.Nanosleep cuts longer ones short).
const maxSleep = unix.MaxRawSleep * time.Nanosecond

func (c *hybridClock) Now() int64 { return c.now() }

// SleepUntil sleeps in slices of at most maxSleep until c.Spin before t,
// then spins until t. A stop request ends either phase.
func (c *hybridClock) SleepUntil(t int64) {
	for {
		d := t - c.now()
		if d <= 0 || (c.stop != nil && c.stop.Load()) {
			return
		}
		if d <= c.Spin {
			break
		}
		c.sleep(min(d-c.Spin, int64(maxSleep)))
	}
	for n := 0; c.now() < t; n++ {
		// The stop flag is read every 64 steps: one load per clock
		// read would double the spin's cost for nothing.
		if n%64 == 63 && c.stop != nil && c.stop.Load() {
			return
		}
		if c.relax != nil {
			c.relax()
		}
	}
}

// nanosleep is the real clock's sleep; an error ends a slice early and the
// caller re-checks the clock.
func nanosleep(ns int64) { _ = unix.Nanosleep(ns) }

// driverDuty bounds the share of its CPU a burst driver spends spinning,
// on average, with a measured spin window. A real-time thread that spins
// nearly all the time is throttled by the kernel (sched_rt_runtime_us, 95%
// of each second, and the fair server that lends CFS tasks 50ms of each
// second): its flips then come milliseconds late. A window measured at 52µs
// made the driver spin 92% of the time on a µs 5:5 pattern (gaps of 50µs on
// average).
const driverDuty = 0.6

// SpinCap returns the widest spin window with which a driver of p spends at
// most duty of the time spinning, on average: before each flip it spins
// for the window, or through the whole period when that is shorter. With
// mean busy and idle lengths b and i, the spin takes (min(b,S) + min(i,S)) /
// (b+i) of the time.
func (p Pattern) SpinCap(duty float64) time.Duration {
	b := float64(p.Ratio.Busy) * float64(p.Scale.Unit)
	i := float64(p.Ratio.Idle) * float64(p.Scale.Unit)
	s := duty * (b + i) / 2 // both periods longer than the window
	if short := min(b, i); s > short {
		s = duty*(b+i) - short // the shorter period spun through
	}
	return time.Duration(max(s, 0))
}

// NewDriver returns a driver of line with the real clock, sleeping all the
// way to each flip (SetSpin turns on the hybrid wait).
func NewDriver(line *Line, s *Schedule) *Driver {
	d := &Driver{Line: line, Schedule: s}
	d.Clock = &hybridClock{now: wait.Now, sleep: nanosleep, stop: &d.stop}
	return d
}

// SetSpin sets how long before each flip a driver with the real clock stops
// sleeping and spins on the clock (0: sleep only). It has no effect on a
// driver with another Clock.
func (d *Driver) SetSpin(spin time.Duration) {
	if c, ok := d.Clock.(*hybridClock); ok {
		c.Spin = max(int64(spin), 0)
	}
}

// Sleep overshoot calibration: the driver sleeps overshootSamples times for
// overshootSleep (about an idle period of the µs scale) and takes the
// overshootPercentile-th percentile of how late it woke, so that a flip
// rarely waits for a late timer while the spin stays short. It does so
// overshootBatches times and keeps the median batch, so that one batch the
// host preempted does not set the window; and the window is capped at
// maxSpin so that a machine whose timers are very late does not make the
// driver spin for milliseconds.
const (
	overshootSamples    = 64
	overshootBatches    = 5
	overshootSleep      = 50 * time.Microsecond
	overshootPercentile = 95
	maxSpin             = 200 * time.Microsecond
)

// MeasureSleepOvershoot measures, on the calling thread, how late a sleep of
// overshootSleep wakes (the median over overshootBatches batches of the
// overshootPercentile-th percentile of overshootSamples sleeps, capped at
// maxSpin): the spin window that lets the driver flip on time. Run it on the
// thread that will drive, after pinning it and setting its priority, since
// both change the figure.
func MeasureSleepOvershoot() time.Duration {
	return measureOvershoot(wait.Now, nanosleep)
}

func measureOvershoot(now func() int64, sleep func(int64)) time.Duration {
	batches := make([]int64, overshootBatches)
	late := make([]int64, overshootSamples)
	for b := range batches {
		for i := range late {
			t0 := now()
			sleep(int64(overshootSleep))
			late[i] = max(now()-t0-int64(overshootSleep), 0)
		}
		slices.Sort(late)
		batches[b] = quantile.NearestRank(late, overshootPercentile)
	}
	slices.Sort(batches)
	return min(time.Duration(batches[len(batches)/2]), maxSpin)
}
