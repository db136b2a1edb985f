package cpu

import (
	"fmt"

	"spindle/internal/unix"
)

// Allowed returns the CPUs the calling thread may run on (its affinity mask,
// which a parent such as taskset or a container runtime may have narrowed).
func Allowed() (Set, error) {
	cpus, err := unix.SchedGetaffinity(0)
	if err != nil {
		return nil, fmt.Errorf("read affinity: %w", err)
	}
	return Set(cpus), nil
}

// Pin restricts the calling OS thread to the CPUs in s. Callers lock the
// goroutine to its thread first (runtime.LockOSThread).
func Pin(s Set) error {
	if len(s) == 0 {
		return fmt.Errorf("pin: empty CPU set")
	}
	if err := unix.SchedSetaffinity(0, s); err != nil {
		return fmt.Errorf("pin to CPUs %s: %w", s, err)
	}
	return nil
}

// PinProcess restricts every thread of the process tree started after the
// call: it sets the calling thread's mask, which new threads inherit. Go
// creates threads lazily, so call it early in main.
func PinProcess(s Set) error { return Pin(s) }
