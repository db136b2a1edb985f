package spectrum

import (
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

func TestDriverLateWakeupsDoNotDrift(t *testing.T) {
	p := Pattern{ScaleMilli, Ratio{5, 5}}
	span := 1000 * int64(p.Period())
	exact, _ := runFake(t, p, 3, 0, span)
	late, _ := runFake(t, p, 3, int64(50*time.Microsecond), span)
	if late.MaxLateNs != int64(50*time.Microsecond) {
		t.Errorf("max late %d, want 50µs", late.MaxLateNs)
	}
	// Absolute flip times: the late clock loses at most one period, not 50µs each.
	if late.Periods < exact.Periods-1 {
		t.Errorf("late clock drifted: %d periods, exact %d", late.Periods, exact.Periods)
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
