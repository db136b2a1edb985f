package spectrum

import (
	"fmt"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
)

// MeasureLineWake measures B where the spectrum needs it: the cost of one
// block-and-wake between two pinned threads on CPUs a and b, through the
// same futex-backed Line the background threads wait on, by
// wait.MeasureWakes (which spins idle before each wake-up and returns the
// median of 2*rounds). wait.MeasureBlockWakeAfter measures the same through
// epoll and an eventfd, between the first two allowed CPUs; the spectrum
// needs it between the CPUs a cell waits on, through the line its pollers
// block on.
func MeasureLineWake(a, b, rounds int, idle time.Duration) (time.Duration, error) {
	if a == b {
		return 0, fmt.Errorf("measure line wake: both threads on CPU %d", a)
	}
	defer enoughProcs(2)()
	d, err := wait.MeasureWakes([2]int{a, b}, rounds, idle, [2]wait.Sleeper{lineEnd{&Line{}}, lineEnd{&Line{}}})
	if err != nil {
		return 0, fmt.Errorf("measure line wake: %w", err)
	}
	return d, nil
}

// lineEnd is a Line as a wait.Sleeper: Sleep blocks until it is busy.
type lineEnd struct{ l *Line }

func (e lineEnd) Sleep() error {
	for t := e.l.Target(); !t.Ready(); {
		t.Block(-1)
	}
	return nil
}

func (e lineEnd) Rearm() error { e.l.SetIdle(); return nil }
func (e lineEnd) Wake() error  { e.l.SetBusy(wait.Now()); return nil }
func (e lineEnd) Abort()       { e.l.Close() }

// WakePair picks the two CPUs B is measured between for a set of cells:
// the burst driver's and the first background CPU of the first bursty
// cell, else the first foreground and background CPUs of any cell with a
// background; ok is false when no cell has a background.
func WakePair(cells []Cell) (a, b int, ok bool) {
	for _, c := range cells {
		if c.Skipped == "" && c.Pattern != nil && c.Driver >= 0 && len(c.BG) > 0 && c.Driver != c.BG[0] {
			return c.Driver, c.BG[0], true
		}
	}
	for _, c := range cells {
		if c.Skipped == "" && len(c.BG) > 0 && len(c.FG) > 0 && c.FG[0] != c.BG[0] {
			return c.FG[0], c.BG[0], true
		}
	}
	return 0, 0, false
}
