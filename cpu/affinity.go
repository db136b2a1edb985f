package cpu

import (
	"errors"
	"fmt"
	"os"
	"strconv"

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

// PinProcess restricts every thread of the process to the CPUs in s. Go
// starts threads from whichever thread needs one, and a new thread inherits
// its creator's mask, so every existing thread is pinned (from
// /proc/self/task), repeated until no new thread appears.
func PinProcess(s Set) error {
	if len(s) == 0 {
		return fmt.Errorf("pin process: empty CPU set")
	}
	done := map[int]bool{}
	for {
		tids, err := threadIDs("/proc/self/task")
		if err != nil {
			return fmt.Errorf("pin process to CPUs %s: %w", s, err)
		}
		fresh := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			// A thread that exited since the listing is not an error.
			if err := unix.SchedSetaffinity(tid, s); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("pin thread %d to CPUs %s: %w", tid, s, err)
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
}

// threadIDs lists the thread ids in a /proc/PID/task directory.
func threadIDs(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
