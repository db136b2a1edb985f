package spectrum

import (
	"fmt"
	"slices"
	"time"

	"spindle/carrier/wait"
)

// MeasureLineWake measures B where the spectrum needs it: the cost of one
// block-and-wake between two pinned threads on CPUs a and b, through the
// same futex-backed Line the background threads wait on. The threads wake
// each other in turn; before each wake-up the waker spins for idle, so the
// sleeper's CPU has gone idle as it does between bursts. Each latency runs
// from just before the waker's flip (its futex wake included) to the woken
// thread's return from its futex wait. It returns the median of 2*rounds.
//
// wait.MeasureBlockWakeAfter measures the same through epoll and an
// eventfd, always between the first two allowed CPUs; the spectrum needs it
// between the CPUs a cell waits on, through the line its pollers block on.
func MeasureLineWake(a, b, rounds int, idle time.Duration) (time.Duration, error) {
	if rounds < 1 {
		return 0, fmt.Errorf("measure line wake: %d rounds", rounds)
	}
	if a == b {
		return 0, fmt.Errorf("measure line wake: both threads on CPU %d", a)
	}
	defer enoughProcs(2)()
	var la, lb Line
	g := newGate()
	lat := [2][]int64{make([]int64, 0, rounds), make([]int64, 0, rounds)}
	var st [2]threadStats
	// sleep blocks on l until it is busy and returns the wake latency.
	sleep := func(l *Line) int64 {
		t := l.Target()
		for !t.Ready() {
			t.Block(-1)
		}
		_, at := l.Since()
		d := wait.Now() - at
		l.SetIdle()
		return d
	}
	wake := func(l *Line) {
		for until := wait.Now() + int64(idle); wait.Now() < until; {
		}
		l.SetBusy(wait.Now())
	}
	g.pinned(a, "spectrum-bwa", &st[0], func(*threadStats) {
		for range rounds {
			wake(&lb)
			lat[0] = append(lat[0], sleep(&la))
		}
	})
	g.pinned(b, "spectrum-bwb", &st[1], func(*threadStats) {
		for range rounds {
			lat[1] = append(lat[1], sleep(&lb))
			wake(&la)
		}
	})
	g.ready.Wait()
	close(g.start)
	g.done.Wait()
	for _, s := range st {
		if s.err != nil {
			return 0, fmt.Errorf("measure line wake: %w", s.err)
		}
	}
	all := slices.Concat(lat[0], lat[1])
	slices.Sort(all)
	return time.Duration(percentile(all, 50)), nil
}

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
