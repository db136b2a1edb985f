package spectrum

import (
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock advances only when the driver sleeps; lateNs is added to every
// sleep, as a real timer wakes late.
type fakeClock struct {
	t      int64
	lateNs int64
}

func (c *fakeClock) Now() int64 { return c.t }
func (c *fakeClock) SleepUntil(t int64) {
	if t > c.t {
		c.t = t + c.lateNs
	}
}

// runFake drives a line with a fake clock from 0 to span.
func runFake(t *testing.T, p Pattern, seed uint64, late, span int64) (DriverStats, *fakeClock) {
	t.Helper()
	line := &Line{}
	clock := &fakeClock{lateNs: late}
	d := &Driver{Line: line, Schedule: NewSchedule(p, seed), Clock: clock}
	st := d.Run(span)
	if line.Busy() {
		t.Fatal("line left busy after Run")
	}
	return st, clock
}

func TestDriverTimingFakeClock(t *testing.T) {
	for _, p := range []Pattern{
		{ScaleMicro, Ratio{1, 9}}, {ScaleMicro, Ratio{9, 1}},
		{ScaleMilli, Ratio{5, 5}}, {ScaleSecond, Ratio{1, 9}},
	} {
		t.Run(p.String(), func(t *testing.T) {
			span := 2000 * int64(p.Period()) // 2000 periods
			st, clock := runFake(t, p, 7, 0, span)
			// Without lateness, every flip lands exactly on the schedule
			// and the driver stops exactly at the end of the span.
			if clock.t != span {
				t.Errorf("driver stopped at %d, span %d", clock.t, span)
			}
			if st.MaxLateNs != 0 || st.LateNs != 0 {
				t.Errorf("max late %dns with an exact clock", st.MaxLateNs)
			}
			if st.Periods < 1900 || st.Periods > 2100 {
				t.Errorf("%d periods in 2000 mean periods", st.Periods)
			}
			if got := st.BusyNs + st.IdleNs; got != span {
				t.Errorf("busy+idle %d, span %d", got, span)
			}
			want := float64(p.Ratio.Busy) / float64(p.Ratio.Busy+p.Ratio.Idle)
			frac := float64(st.BusyNs) / float64(span)
			if frac < want-0.02 || frac > want+0.02 {
				t.Errorf("busy fraction %.3f, want %.2f±0.02", frac, want)
			}
		})
	}
}

func TestDriverLateWakeupsNeverShortenPeriods(t *testing.T) {
	p := Pattern{ScaleMicro, Ratio{1, 9}}
	span := 1000 * int64(p.Period())
	late := int64(30 * time.Microsecond) // a VM's timer wake-up: longer than a 10µs busy period
	st, _ := runFake(t, p, 3, late, span)
	if st.MaxLateNs != late || st.LateNs != late*int64(2*st.Periods) {
		t.Errorf("late %d (max %d) over %d periods, want %d each", st.LateNs, st.MaxLateNs, st.Periods, late)
	}
	// Every period is its drawn length plus the lateness: the busy
	// share is (10µs+30µs)/(100µs+60µs) on average, not 1:9, and no busy
	// period vanishes.
	sched := NewSchedule(p, 3)
	var wantBusy int64
	for range st.Periods {
		_, b := sched.Next()
		wantBusy += b + late
	}
	if d := st.BusyNs - wantBusy; d < -late || d > late {
		t.Errorf("busy %dns, want %dns (each drawn busy length plus the lateness)", st.BusyNs, wantBusy)
	}
	if frac := float64(st.BusyNs) / float64(span); frac < 0.22 || frac > 0.28 {
		t.Errorf("achieved busy share %.3f, want about 0.25", frac)
	}
}

func TestScheduleSeeded(t *testing.T) {
	p := Pattern{ScaleMicro, Ratio{1, 9}}
	a, b, c := NewSchedule(p, 1), NewSchedule(p, 1), NewSchedule(p, 2)
	same := true
	for i := 0; i < 100; i++ {
		ai, ab := a.Next()
		bi, bb := b.Next()
		ci, _ := c.Next()
		if ai != bi || ab != bb {
			t.Fatalf("same seed, step %d: (%d,%d) vs (%d,%d)", i, ai, ab, bi, bb)
		}
		same = same && ai == ci
		unit := int64(p.Scale.Unit)
		if ai < 9*unit/2 || ai >= 27*unit/2 || ab < unit/2 || ab >= 3*unit/2 {
			t.Fatalf("step %d: idle %d busy %d outside [0.5,1.5) of the mean", i, ai, ab)
		}
	}
	if same {
		t.Fatal("seeds 1 and 2 gave the same sequence")
	}
}

func TestDriverStop(t *testing.T) {
	line := &Line{}
	d := NewDriver(line, NewSchedule(Pattern{ScaleSecond, Ratio{1, 9}}, 1))
	done := make(chan DriverStats)
	start := time.Now()
	go func() { done <- d.Run(d.Clock.Now() + int64(time.Hour)) }()
	time.Sleep(20 * time.Millisecond)
	d.Stop()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("driver did not stop within 2s")
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("stop took %v", el)
	}
}

// fakeTimer is the hybrid clock's time source in tests: a sleep of d
// advances it by d plus lateNs (a timer that wakes late), one spin step by
// stepNs (one read of the clock).
type fakeTimer struct {
	t, lateNs, stepNs int64
	sleeps, steps     int
}

func (f *fakeTimer) now() int64 { return f.t }
func (f *fakeTimer) sleep(ns int64) {
	f.sleeps++
	f.t += ns + f.lateNs
}
func (f *fakeTimer) relax() {
	f.steps++
	f.t += f.stepNs
}

func (f *fakeTimer) clock(spin int64, stop *atomic.Bool) *hybridClock {
	return &hybridClock{now: f.now, sleep: f.sleep, relax: f.relax, stop: stop, Spin: spin}
}

func TestHybridClockFakeClock(t *testing.T) {
	const late, step = int64(30 * time.Microsecond), int64(100)
	for _, tc := range []struct {
		name       string
		spin, gap  int64
		maxLate    int64 // how late SleepUntil may return
		wantSleeps bool  // whether it sleeps at all
		wantSpins  bool
	}{
		// Sleep only: as late as the timer.
		{"no spin", 0, 90_000, late, true, false},
		// A window wider than the timer's lateness: sleeps, then spins
		// to within one clock read of the deadline.
		{"window covers lateness", 40_000, 90_000, step, true, true},
		// A window narrower than the lateness: the wake-up is late by
		// the difference.
		{"window short", 10_000, 90_000, late - 10_000, true, false},
		// A gap shorter than the window: no sleep, spin only.
		{"gap inside window", 40_000, 20_000, step, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTimer{t: 1000, lateNs: late, stepNs: step}
			c := f.clock(tc.spin, nil)
			deadline := f.t + tc.gap
			c.SleepUntil(deadline)
			if f.t < deadline {
				t.Fatalf("returned at %d, before the deadline %d", f.t, deadline)
			}
			if got := f.t - deadline; got > tc.maxLate {
				t.Errorf("late by %dns, want at most %dns", got, tc.maxLate)
			}
			if (f.sleeps > 0) != tc.wantSleeps || (f.steps > 0) != tc.wantSpins {
				t.Errorf("%d sleeps, %d spin steps; want sleeps %v, spins %v", f.sleeps, f.steps, tc.wantSleeps, tc.wantSpins)
			}
		})
	}
}

func TestHybridClockStopEndsSpin(t *testing.T) {
	var stop atomic.Bool
	f := &fakeTimer{stepNs: 1}
	c := f.clock(int64(time.Hour), &stop)
	stop.Store(true)
	c.SleepUntil(int64(time.Minute)) // spin only: a stop must end it
	if f.steps > 64 {
		t.Errorf("%d spin steps after stop, want at most 64", f.steps)
	}
}

// TestDriverHybridHoldsMicroPattern drives a µs pattern with a timer late by
// 30µs, longer than a busy period: sleeping alone moves 1:9 to about 1:3
// (TestDriverLateWakeupsNeverShortenPeriods); with a spin window wider than
// the lateness every flip is within one clock read of its time and the
// share stays 1:9.
func TestDriverHybridHoldsMicroPattern(t *testing.T) {
	p := Pattern{ScaleMicro, Ratio{1, 9}}
	span := 1000 * int64(p.Period())
	f := &fakeTimer{lateNs: int64(30 * time.Microsecond), stepNs: 50}
	line := &Line{}
	d := &Driver{Line: line, Schedule: NewSchedule(p, 3)}
	d.Clock = f.clock(int64(40*time.Microsecond), &d.stop)
	st := d.Run(span)
	if st.MaxLateNs > f.stepNs {
		t.Errorf("max late %dns, want at most one clock read (%dns)", st.MaxLateNs, f.stepNs)
	}
	if frac := float64(st.BusyNs) / float64(st.BusyNs+st.IdleNs); frac < 0.08 || frac > 0.12 {
		t.Errorf("achieved busy share %.3f, want 0.10±0.02", frac)
	}
	if f.sleeps == 0 {
		t.Error("the driver never slept: the idle periods (90µs) are longer than the window")
	}
}

func TestMeasureOvershoot(t *testing.T) {
	for _, tc := range []struct {
		late, want time.Duration
	}{
		{0, 0},
		{25 * time.Microsecond, 25 * time.Microsecond},
		{time.Millisecond, maxSpin}, // capped
	} {
		f := &fakeTimer{lateNs: int64(tc.late)}
		if got := measureOvershoot(f.now, f.sleep); got != tc.want {
			t.Errorf("timer late by %v: overshoot %v, want %v", tc.late, got, tc.want)
		}
		if f.sleeps != overshootSamples*overshootBatches {
			t.Errorf("%d sleeps, want %d", f.sleeps, overshootSamples*overshootBatches)
		}
	}
	// One batch in five preempted (every sleep in it 1ms late) does not
	// set the window: the median batch does.
	var clock int64
	sleeps := 0
	now := func() int64 { clock += 10; return clock } // a clock read takes 10ns
	sleep := func(ns int64) {
		clock += ns + int64(20*time.Microsecond)
		if sleeps/overshootSamples == 2 {
			clock += int64(time.Millisecond)
		}
		sleeps++
	}
	if got := measureOvershoot(now, sleep); got < 20*time.Microsecond || got > 21*time.Microsecond {
		t.Errorf("one preempted batch: overshoot %v, want about 20µs", got)
	}
}

func TestSetSpinRealClockOnly(t *testing.T) {
	d := NewDriver(&Line{}, NewSchedule(Pattern{ScaleMicro, Ratio{1, 9}}, 1))
	d.SetSpin(7 * time.Microsecond)
	if c := d.Clock.(*hybridClock); c.Spin != int64(7*time.Microsecond) {
		t.Errorf("spin %d, want 7µs", c.Spin)
	}
	d.SetSpin(-time.Second)
	if c := d.Clock.(*hybridClock); c.Spin != 0 {
		t.Errorf("negative spin gave %d, want 0", c.Spin)
	}
	fake := &Driver{Clock: &fakeClock{}}
	fake.SetSpin(time.Second) // no effect, no panic
}

func TestSpinCap(t *testing.T) {
	us := time.Microsecond
	for _, tc := range []struct {
		p    Pattern
		want time.Duration
	}{
		{Pattern{ScaleMicro, Ratio{5, 5}}, 30 * us},              // both 50µs periods spun 30µs: 60%
		{Pattern{ScaleMicro, Ratio{1, 9}}, 50 * us},              // the 10µs busy period spun through, 50 of 90 idle
		{Pattern{ScaleMicro, Ratio{9, 1}}, 50 * us},              // the same, mirrored
		{Pattern{ScaleMilli, Ratio{5, 5}}, 3 * time.Millisecond}, // far above any measured window
	} {
		got := tc.p.SpinCap(0.6)
		if got != tc.want {
			t.Errorf("%s: cap %v, want %v", tc.p, got, tc.want)
		}
		b, i := time.Duration(tc.p.Ratio.Busy)*tc.p.Scale.Unit, time.Duration(tc.p.Ratio.Idle)*tc.p.Scale.Unit
		if duty := float64(min(b, got)+min(i, got)) / float64(b+i); duty > 0.6+1e-9 {
			t.Errorf("%s: the cap spins %.2f of the time, over 0.6", tc.p, duty)
		}
	}
}
