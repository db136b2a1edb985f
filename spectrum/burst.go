package spectrum

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"spindle/carrier/wait"
	"spindle/internal/unix"
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

// realClock sleeps the calling OS thread with clock_nanosleep, in slices of
// at most maxSleep so that a stop request is noticed.
type realClock struct{ stop *atomic.Bool }

// maxSleep bounds one sleep of the real clock: how long a stop may wait.
const maxSleep = 50 * time.Millisecond

func (realClock) Now() int64 { return wait.Now() }

func (c realClock) SleepUntil(t int64) {
	for {
		d := t - wait.Now()
		if d <= 0 || (c.stop != nil && c.stop.Load()) {
			return
		}
		_ = unix.Nanosleep(min(d, int64(maxSleep))) // an error ends a slice early; the loop re-checks
	}
}

// NewDriver returns a driver of line with the real clock.
func NewDriver(line *Line, s *Schedule) *Driver {
	d := &Driver{Line: line, Schedule: s}
	d.Clock = realClock{stop: &d.stop}
	return d
}
