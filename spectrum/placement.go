package spectrum

import (
	"fmt"

	"github.com/spindle-lab/spindle/cpu"
)

// Placement is where the placement preset puts its background threads
// relative to its foreground threads.
type Placement uint8

// The placements.
const (
	// Alone runs the foreground only (the baseline).
	Alone Placement = iota
	// SameCore puts background thread i on an SMT sibling of foreground
	// thread i's core.
	SameCore
	// SameDie puts background threads on other cores of the foreground's
	// die.
	SameDie
	// OtherDie puts background threads on another package when there are
	// several, else on another die.
	OtherDie
)

// placementNames are the paper's names, the placement preset's cell names.
var placementNames = [...]string{Alone: "baseline", SameCore: "SMT", SameDie: "Die", OtherDie: "Socket"}

// String returns the placement's name in the paper: baseline, SMT, Die or
// Socket.
func (p Placement) String() string {
	if int(p) < len(placementNames) {
		return placementNames[p]
	}
	return fmt.Sprintf("Placement(%d)", p)
}

// Pair is a foreground and background CPU assignment.
type Pair struct {
	Foreground []int // CPU of each foreground thread
	Background []int // CPU of each background thread
}

// skipped is the error for a placement the topology cannot provide.
func skipped(format string, args ...any) error {
	return fmt.Errorf("skipped: topology: %s: %w", fmt.Sprintf(format, args...), ErrNotSupported)
}

// Place picks CPUs of topology t among allowed for fg foreground and bg
// background threads in placement p. Each thread gets a core of its own (its first allowed
// thread), except that SameCore puts background thread i on the second
// thread of foreground thread i's core. A placement the topology lacks (no
// SMT, one die, too few cores) returns an error wrapping ErrNotSupported
// whose message begins "skipped: topology".
func Place(t *cpu.Topology, allowed cpu.Set, fg, bg int, p Placement) (Pair, error) {
	if fg < 1 || bg < 0 {
		return Pair{}, fmt.Errorf("place %d foreground and %d background threads: counts out of range", fg, bg)
	}
	if t == nil {
		return Pair{}, skipped("unknown (no sysfs topology)")
	}
	if p == Alone {
		bg = 0
	}
	cores := cpu.CoresOf(allowed, t)
	var pr Pair
	switch p {
	case Alone:
		if len(cores) < fg {
			return Pair{}, skipped("%d foreground threads need %d cores, allowed CPUs %s have %d", fg, fg, allowed, len(cores))
		}
		pr.Foreground = firstThreads(cores[:fg])
	case SameCore:
		var smt []cpu.Set
		for _, c := range cores {
			if len(c) > 1 {
				smt = append(smt, c)
			}
		}
		need := max(fg, bg)
		if len(smt) == 0 {
			return Pair{}, skipped("no SMT siblings among allowed CPUs %s", allowed)
		}
		if len(smt) < need {
			return Pair{}, skipped("%d SMT pairs needed, allowed CPUs %s have %d", need, allowed, len(smt))
		}
		pr.Foreground = firstThreads(smt[:fg])
		for _, c := range smt[:bg] {
			pr.Background = append(pr.Background, c[1])
		}
	case SameDie:
		for _, die := range t.Dies() {
			dc := cpu.CoresOf(die.Intersect(allowed), t)
			if len(dc) >= fg+bg {
				pr.Foreground, pr.Background = firstThreads(dc[:fg]), firstThreads(dc[fg:fg+bg])
				return pr, nil
			}
		}
		return Pair{}, skipped("no die has %d cores among allowed CPUs %s", fg+bg, allowed)
	case OtherDie:
		groups, what := t.Packages(), "package"
		if len(groups) < 2 {
			groups, what = t.Dies(), "die"
		}
		if len(groups) < 2 {
			return Pair{}, skipped("one package with one die")
		}
		var fit [][]cpu.Set // per group, its allowed cores
		for _, g := range groups {
			fit = append(fit, cpu.CoresOf(g.Intersect(allowed), t))
		}
		for i := range fit {
			if len(fit[i]) < fg {
				continue
			}
			for j := range fit {
				if j != i && len(fit[j]) >= bg {
					pr.Foreground, pr.Background = firstThreads(fit[i][:fg]), firstThreads(fit[j][:bg])
					return pr, nil
				}
			}
		}
		return Pair{}, skipped("no two %ss have %d and %d cores among allowed CPUs %s", what, fg, bg, allowed)
	default:
		return Pair{}, fmt.Errorf("place: unknown placement %v", p)
	}
	return pr, nil
}
