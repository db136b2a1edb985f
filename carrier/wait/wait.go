// Package wait holds the ways an idle carrier (or any polling thread) can wait
// for work: block in the kernel, spin, spin with PAUSE, adapt between spinning
// and blocking, or park the core with TPAUSE/UMWAIT where the CPU has WAITPKG.
//
// A Strategy waits on a Target, which the waiting side implements: a carrier
// (its run queues and poller) or a spectrum background thread (a
// shared word). Strategies hold no carrier state, so one implementation serves
// both the runtime and the waiting-spectrum suite.
package wait

import (
	"fmt"
	"time"

	"github.com/spindle-lab/spindle/cpu"
)

// ErrNotSupported is wrapped by New when a strategy cannot run on this CPU or
// kernel (for example tpause without WAITPKG); the message says why. It is
// cpu.ErrNotSupported, the one sentinel for what this machine cannot do, so
// errors.Is answers alike for a strategy and a placement.
var ErrNotSupported = cpu.ErrNotSupported

// Target is what a Strategy waits on.
type Target interface {
	// Ready reports, cheaply and without a system call, whether work is
	// waiting (a run queue or inject queue is non-empty, a watched word moved).
	Ready() bool
	// Poll checks for I/O without blocking and reports how many events it
	// handled (0 when none); work it produced makes Ready true.
	Poll() int
	// Block sleeps in the kernel until I/O, an explicit wake-up, or the
	// deadline (monotonic nanoseconds, as from Clock; < 0 means no deadline),
	// and reports how many events it handled. The target arranges that a
	// producer that enqueues work while it blocks wakes it.
	Block(deadline int64) int
	// Word returns the address of a word that changes whenever work arrives,
	// for UMONITOR-based waiting; nil when the target has none.
	Word() *uint32
}

// Kind names one way of waiting, as counted in telemetry.
type Kind uint8

// The kinds of waiting a strategy reports.
const (
	KindNone  Kind = iota // work was already there
	KindSpin              // spun (busy, PAUSE, TPAUSE/UMWAIT) until work came
	KindBlock             // blocked in the kernel
	KindTimer             // woke at the deadline with no work (a timer is due)

	// NumKinds is the number of kinds: telemetry counts waits in an
	// array of this length indexed by Kind.
	NumKinds = int(KindTimer) + 1
)

// kindNames are the kinds' names in telemetry (JSON keys, tables).
var kindNames = [NumKinds]string{
	KindNone:  "none",
	KindSpin:  "spin",
	KindBlock: "block",
	KindTimer: "timer",
}

// String returns the kind's telemetry name: none, spin, block or timer
// ("kind(N)" for a value out of range).
func (k Kind) String() string {
	if int(k) < NumKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Result says how one Wait went, for telemetry and for learning policies.
type Result struct {
	Kind    Kind
	Spun    time.Duration // time spent spinning before work came or blocking began
	Blocked time.Duration // time spent blocked in the kernel
	Events  int           // I/O events handled while waiting
}

// Strategy waits on a target until it is ready or the deadline passes.
// A Strategy is used by one thread at a time (each carrier has its own).
type Strategy interface {
	// Name is the strategy's flag name, as registered (see Names).
	Name() string
	// Wait returns when t.Ready() is true, when an I/O event was handled, or
	// at the deadline (monotonic ns; < 0: none).
	Wait(t Target, deadline int64) Result
}

// epoch anchors Now; time.Since reads the monotonic clock.
var epoch = time.Now()

// Now returns monotonic nanoseconds since the process started: the clock that
// deadlines passed to Wait and Block use.
func Now() int64 { return int64(time.Since(epoch)) }

// Mono returns t on Now's clock without reading the clock, when t has a
// monotonic clock reading (a time from time.Now, and its Add); it reports
// false for a time without one (time.Unix, a parsed time, or one stripped
// by Round(0)), which only the wall clock can place.
func Mono(t time.Time) (int64, bool) {
	if t == t.Round(0) { // Round(0) strips the monotonic reading, if any
		return 0, false
	}
	return int64(t.Sub(epoch)), true
}
