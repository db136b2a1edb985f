package report

import (
	"fmt"
	"strings"
)

// The phase names of a Summary (its load level), owned here because the
// Result directory's format is; bench's plans and runs name their phases
// with them.
const (
	// PhaseMax is the closed-loop max-throughput phase.
	PhaseMax = "max"
	// PhaseFixed is the study's fixed-rate phase.
	PhaseFixed = "fixed"

	// sweepPrefix and ratePrefix start the names of a latency–load
	// sweep's points (SweepPhase, RatePhase).
	sweepPrefix = "sweep-"
	ratePrefix  = "rate-"
)

// SweepPhase names the sweep point at share (0..1) of the reference max
// throughput: "sweep-PCT", PCT zero-padded to three digits so that names
// sort by load.
func SweepPhase(share float64) string { return fmt.Sprintf("%s%03.0f", sweepPrefix, 100*share) }

// RatePhase names the sweep point at a fixed offered rate, req/s: "rate-N".
func RatePhase(rate int) string { return fmt.Sprintf("%s%d", ratePrefix, rate) }

// IsSweepPhase reports whether phase is a point of a latency–load sweep
// (SweepPhase, RatePhase). PhaseFixed is a point of the curve too, but has
// its own section.
func IsSweepPhase(phase string) bool {
	return strings.HasPrefix(phase, sweepPrefix) || strings.HasPrefix(phase, ratePrefix)
}
