package cpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/spindle-lab/spindle/internal/unix"
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

// ProcessAllowed returns the CPUs the process may use: the union of its
// threads' masks. Allowed reads the calling thread's alone, which is one
// CPU where the caller runs on a thread a pinned carrier lent to the
// scheduler (its task waiting the Go way, or preempted, with the carrier's
// goroutine unlocked around the run): a carrier group made there saw one
// CPU ("2 carriers need 2 CPUs, the allowed CPUs "0" have 1"). The
// runtime's own threads (sysmon's, idle ones) keep the process's mask.
// Where /proc/self/task cannot be read it is Allowed.
func ProcessAllowed() (Set, error) {
	tids, err := Threads("", "self")
	if err != nil {
		return Allowed()
	}
	seen := map[int]bool{}
	for _, tid := range tids {
		cpus, err := unix.SchedGetaffinity(tid)
		if err != nil {
			continue // it exited since the listing
		}
		for _, c := range cpus {
			seen[c] = true
		}
	}
	if len(seen) == 0 {
		return Allowed()
	}
	out := make(Set, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out, nil
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
func PinProcess(s Set) error { return PinThreads(s, nil) }

// PinThreads restricts the threads of the process for which pick returns
// true (every thread when pick is nil) to the CPUs in s (see EachThread):
// see PinProcess. pick sees each thread once.
func PinThreads(s Set, pick func(tid int) bool) error {
	if len(s) == 0 {
		return fmt.Errorf("pin threads: empty CPU set")
	}
	return EachThread(func(tid int) error {
		if pick != nil && !pick(tid) {
			return nil
		}
		return PinThread(tid, s)
	})
}

// EachThread calls fn once with every thread of the process, listing
// /proc/self/task again until no thread it has not seen appears (Go starts
// threads while the list is walked, from threads already seen, so a change
// fn makes that new threads inherit reaches them all). It stops at fn's
// first error.
func EachThread(fn func(tid int) error) error {
	seen := map[int]bool{}
	for {
		tids, err := Threads("", "self")
		if err != nil {
			return fmt.Errorf("threads of the process: %w", err)
		}
		fresh := 0
		for _, tid := range tids {
			if seen[tid] {
				continue
			}
			seen[tid] = true
			fresh++
			if err := fn(tid); err != nil {
				return err
			}
		}
		if fresh == 0 {
			return nil
		}
	}
}

// PinThread restricts the thread tid (0: the caller) to the CPUs in s. A
// thread that has exited (ESRCH: it went between a listing and this call)
// is not an error.
func PinThread(tid int, s Set) error {
	if err := unix.SchedSetaffinity(tid, s); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("pin thread %d to CPUs %s: %w", tid, s, err)
	}
	return nil
}

// ThreadAffinity returns the CPUs the thread tid (0: the caller) may run on.
func ThreadAffinity(tid int) (Set, error) {
	cpus, err := unix.SchedGetaffinity(tid)
	if err != nil {
		return nil, fmt.Errorf("read affinity of thread %d: %w", tid, err)
	}
	return Set(cpus), nil
}

// DefaultProcRoot is where Linux mounts procfs.
const DefaultProcRoot = "/proc"

// Threads lists the thread ids of process pid ("self" for this one) from
// /proc/PID/task under procRoot ("" means DefaultProcRoot); an error when
// the process is gone. It is the one /proc/PID/task lister: pinning every
// thread, the bench's per-process thread counts and the carrier group's
// N+1 reserve use it.
func Threads(procRoot, pid string) ([]int, error) {
	if procRoot == "" {
		procRoot = DefaultProcRoot
	}
	ents, err := os.ReadDir(filepath.Join(procRoot, pid, "task"))
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
