package cpu

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrTooFewCPUs is wrapped by PlanCarriers when the allowed CPUs cannot hold
// the requested carriers.
var ErrTooFewCPUs = errors.New("too few CPUs")

// PinMode says how carriers are placed on CPUs.
type PinMode uint8

// The pinning modes.
const (
	// PinOff leaves carriers unpinned: the kernel places them.
	PinOff PinMode = iota
	// PinCPU pins carrier i to the i-th allowed CPU.
	PinCPU
	// PinCore pins carrier i to the first allowed CPU of the i-th core
	// with an allowed CPU, leaving the core's other SMT threads idle.
	PinCore
)

var pinModeNames = [...]string{PinOff: "off", PinCPU: "cpu", PinCore: "core"}

// String returns the mode's flag name: off, cpu or core.
func (m PinMode) String() string { return enumName(pinModeNames[:], int(m), "PinMode") }

// ParsePinMode parses off, cpu or core.
func ParsePinMode(s string) (PinMode, error) {
	i, err := parseEnum(pinModeNames[:], s, "pinning mode")
	return PinMode(i), err
}

// enumName returns names[v], or type(v) for a value without a name.
func enumName(names []string, v int, typ string) string {
	if v >= 0 && v < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

// parseEnum returns the index of s in names, or an error naming what was
// parsed and the choices.
func parseEnum(names []string, s, what string) (int, error) {
	if i := slices.Index(names, s); i >= 0 {
		return i, nil
	}
	return 0, fmt.Errorf("unknown %s %q (want one of %s)", what, s, strings.Join(names, ", "))
}

// CarrierRequest is what PlanCarriers places.
type CarrierRequest struct {
	// Carriers is how many carriers to place; 0 means as many as the mode
	// allows (one per allowed CPU, or per core with PinCore), less the
	// reserved one.
	Carriers int
	// Mode is how carriers map to CPUs. With PinOff the plan still
	// counts units as PinCPU does but the carriers are not pinned.
	Mode PinMode
	// Reserve is "N+1": set one unit (a CPU, or a whole core with
	// PinCore) aside for everything that is not a carrier (the Go
	// runtime's GC workers and sysmon, offloaded goroutines).
	Reserve bool
}

// CarrierPlan is where carriers and everything else run.
type CarrierPlan struct {
	// Carriers[i] is carrier i's CPU; -1 for every carrier with PinOff.
	Carriers []int
	// Reserved are the CPUs for everything that is not a carrier: with
	// Reserve, the allowed CPUs no carrier's unit uses (at least the
	// reserved unit); without it, nil (everything else may run anywhere).
	Reserved Set
}

// PlanCarriers places carriers on the allowed CPUs. The reserved unit is the
// first (lowest-numbered) one: CPU 0 and its core usually take the most
// interrupts and kernel housekeeping, which is what the reserve is for.
// topo may be nil: every CPU is then its own core.
func PlanCarriers(allowed Set, topo *Topology, req CarrierRequest) (CarrierPlan, error) {
	if req.Carriers < 0 {
		return CarrierPlan{}, fmt.Errorf("plan carriers: %d carriers", req.Carriers)
	}
	units := unitsOf(allowed, topo, req.Mode == PinCore)
	var reserved Set
	if req.Reserve {
		if len(units) > 0 {
			reserved = units[0]
			units = units[1:]
		}
	}
	n := req.Carriers
	if n == 0 {
		n = len(units)
	}
	if n == 0 || n > len(units) {
		what := "CPUs"
		if req.Mode == PinCore {
			what = "cores"
		}
		extra := ""
		if req.Reserve {
			extra = " plus one reserved"
		}
		return CarrierPlan{}, fmt.Errorf("plan carriers: %d carriers%s need %d %s, the allowed CPUs %q have %d: %w",
			max(n, 1), extra, max(n, 1)+b2i(req.Reserve), what, allowed, len(units)+len(reserved[:min(len(reserved), 1)]), ErrTooFewCPUs)
	}
	p := CarrierPlan{Carriers: make([]int, n)}
	used := Set{}
	for i := range n {
		p.Carriers[i] = units[i][0]
		used = append(used, units[i]...)
		if req.Mode == PinOff {
			p.Carriers[i] = -1
		}
	}
	if req.Reserve {
		slices.Sort(used)
		p.Reserved = allowed.Minus(used)
	}
	return p, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// unitsOf lists the placement units in CPU order: one per allowed CPU, or
// with byCore one per core with allowed CPUs (the core's allowed CPUs).
func unitsOf(allowed Set, topo *Topology, byCore bool) []Set {
	if byCore && topo != nil {
		return CoresOf(allowed, topo)
	}
	var out []Set
	for _, c := range allowed {
		out = append(out, Set{c})
	}
	return out
}

// CoresOf lists the allowed CPUs core by core, in order of each core's
// first allowed CPU: each element is one core's allowed CPUs. CPUs the
// topology does not know (or all of them, when topo is nil) are cores of
// their own.
func CoresOf(allowed Set, topo *Topology) []Set {
	var out []Set
	var known Set
	if topo != nil {
		for _, core := range topo.Cores() {
			if s := core.Intersect(allowed); len(s) > 0 {
				out = append(out, s)
			}
		}
		known = topo.CPUs()
	}
	for _, c := range allowed.Minus(known) {
		out = append(out, Set{c})
	}
	slices.SortFunc(out, func(a, b Set) int { return a[0] - b[0] })
	return out
}

// Placement is where the waiting-spectrum suite puts its background threads
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

var placementNames = [...]string{Alone: "baseline", SameCore: "smt", SameDie: "die", OtherDie: "socket"}

// String returns the placement's name: baseline, smt, die or socket.
func (p Placement) String() string { return enumName(placementNames[:], int(p), "Placement") }

// ParsePlacement parses baseline, smt, die or socket.
func ParsePlacement(s string) (Placement, error) {
	i, err := parseEnum(placementNames[:], s, "placement")
	return Placement(i), err
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

// Place picks CPUs among allowed for fg foreground and bg background threads
// in placement p. Each thread gets a core of its own (its first allowed
// thread), except that SameCore puts background thread i on the second
// thread of foreground thread i's core. A placement the topology lacks (no
// SMT, one die, too few cores) returns an error wrapping ErrNotSupported
// whose message begins "skipped: topology".
func (t *Topology) Place(allowed Set, fg, bg int, p Placement) (Pair, error) {
	if fg < 1 || bg < 0 {
		return Pair{}, fmt.Errorf("place %d foreground and %d background threads: counts out of range", fg, bg)
	}
	if p == Alone {
		bg = 0
	}
	cores := unitsOf(allowed, t, true)
	var pr Pair
	switch p {
	case Alone:
		if len(cores) < fg {
			return Pair{}, skipped("%d foreground threads need %d cores, allowed CPUs %s have %d", fg, fg, allowed, len(cores))
		}
		pr.Foreground = firsts(cores[:fg])
	case SameCore:
		var smt []Set
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
		pr.Foreground = firsts(smt[:fg])
		for _, c := range smt[:bg] {
			pr.Background = append(pr.Background, c[1])
		}
	case SameDie:
		for _, die := range t.Dies() {
			dc := unitsOf(die.Intersect(allowed), t, true)
			if len(dc) >= fg+bg {
				pr.Foreground, pr.Background = firsts(dc[:fg]), firsts(dc[fg:fg+bg])
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
		var fit [][]Set // per group, its allowed cores
		for _, g := range groups {
			fit = append(fit, unitsOf(g.Intersect(allowed), t, true))
		}
		for i := range fit {
			if len(fit[i]) < fg {
				continue
			}
			for j := range fit {
				if j != i && len(fit[j]) >= bg {
					pr.Foreground, pr.Background = firsts(fit[i][:fg]), firsts(fit[j][:bg])
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

// firsts returns the first CPU of each unit.
func firsts(units []Set) []int {
	out := make([]int, len(units))
	for i, u := range units {
		out[i] = u[0]
	}
	return out
}
