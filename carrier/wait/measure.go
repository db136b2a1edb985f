package wait

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
)

// Defaults for the B measurement the adaptive strategy makes when
// Options.BlockWake is zero.
const (
	// DefaultMeasureRounds is how many round trips (two wake-ups each) it
	// makes: enough for a stable median in about 30ms.
	DefaultMeasureRounds = 200
	// DefaultMeasureIdle is how long the sleeper is blocked before each
	// wake-up: long enough for its CPU to enter its idle path, as a
	// carrier's CPU does when the adaptive strategy decides to block, and
	// short enough to keep the measurement brief. On dev-2vcpu (a KVM
	// guest with halt polling) B was about 1.6µs with no idle time, 25µs
	// after 10µs and 5-7µs after 1ms: see docs/wait.md.
	DefaultMeasureIdle = 50 * time.Microsecond
)

// MeasureBlockWake measures B, the cost of one block-and-wake: two locked
// OS threads, each blocked in epoll_wait on its own eventfd, wake each other
// in turn, and each wake-up's latency is the time from just before the
// waker's eventfd write to the woken thread's return from epoll_wait (both
// read the monotonic clock). The threads are pinned to the first two allowed
// CPUs (sharing one when only one is allowed). It returns the median of 2*rounds wake-ups.
// The threads wake each other at once, which is the cheapest case: see
// MeasureBlockWakeAfter for a wake-up after the sleeper's CPU was idle.
func MeasureBlockWake(rounds int) (time.Duration, error) {
	return MeasureBlockWakeAfter(rounds, 0)
}

// MeasureBlockWakeAfter is MeasureBlockWake with each waker first spinning
// for idle before it wakes its peer, so that the peer has been blocked (and
// its CPU idle) that long. Where the idle path depends on how long a CPU has
// been idle (cpuidle states; a virtual machine's halt polling), B depends on
// it too.
func MeasureBlockWakeAfter(rounds int, idle time.Duration) (time.Duration, error) {
	if rounds <= 0 {
		return 0, fmt.Errorf("measure block-and-wake: %d rounds", rounds)
	}
	ends := [2]*eventfdEnd{{ep: -1, efd: -1}, {ep: -1, efd: -1}}
	defer ends[0].close()
	defer ends[1].close()
	for _, e := range ends {
		if err := e.open(); err != nil {
			return 0, fmt.Errorf("measure block-and-wake: %w", err)
		}
	}
	// Pin the two threads to two CPUs, so that a wake-up crosses CPUs as
	// a producer's wake of a carrier does; with one CPU they share it.
	allowed, err := cpu.Allowed()
	if err != nil {
		return 0, fmt.Errorf("measure block-and-wake: %w", err)
	}
	cpus := [2]int{-1, -1}
	if len(allowed) > 1 {
		cpus = [2]int{allowed[0], allowed[1]}
	}
	d, err := MeasureWakes(cpus, rounds, idle, [2]Sleeper{ends[0], ends[1]})
	if err != nil {
		return 0, fmt.Errorf("measure block-and-wake: %w", err)
	}
	return d, nil
}

// Sleeper is one end of a block-and-wake ping-pong (MeasureWakes): a thing
// a thread can block on and another thread can wake it from.
type Sleeper interface {
	// Sleep blocks until the end is woken (by Wake or Abort).
	Sleep() error
	// Rearm readies the end for the next Sleep, after the wake-up was
	// timed.
	Rearm() error
	// Wake wakes the thread sleeping on the end.
	Wake() error
	// Abort wakes the thread sleeping on the end for good: it is called,
	// perhaps more than once, when a side failed.
	Abort()
}

// MeasureWakes measures the cost of one block-and-wake through ends: two
// locked OS threads, pinned to cpus[0] and cpus[1] (-1: not pinned), sleep
// on their own end and wake each other's in turn, rounds times each. Before
// each wake-up the waker spins for idle, so that the sleeper's CPU has gone
// idle as it does between bursts of work; a wake-up's latency runs from
// just before the waker's Wake to the woken thread's return from Sleep
// (both read the monotonic clock). It returns the median of 2*rounds.
func MeasureWakes(cpus [2]int, rounds int, idle time.Duration, ends [2]Sleeper) (time.Duration, error) {
	if rounds <= 0 {
		return 0, fmt.Errorf("measure wake-ups: %d rounds", rounds)
	}
	var sent [2]atomic.Int64 // Now() just before each end's last Wake
	samples := make([][]int64, 2)
	errs := make(chan error, 2)
	var abort atomic.Bool
	// fail stops both sides: a side asleep on its end is woken and sees
	// the abort.
	fail := func(err error) {
		abort.Store(true)
		ends[0].Abort()
		ends[1].Abort()
		errs <- err
	}
	wake := func(peer int) error {
		for until := Now() + int64(idle); Now() < until; {
		}
		sent[peer].Store(Now())
		return ends[peer].Wake()
	}
	for side := range 2 {
		go func() {
			// The thread is pinned and never unlocked: it exits with
			// the goroutine, so no other goroutine inherits its mask.
			runtime.LockOSThread()
			if c := cpus[side]; c >= 0 {
				if err := cpu.Pin(cpu.Set{c}); err != nil {
					fail(err)
					return
				}
			}
			lat := make([]int64, 0, rounds)
			if side == 0 { // side 0 serves first
				if err := wake(1); err != nil {
					fail(err)
					return
				}
			}
			for range rounds {
				err := ends[side].Sleep()
				d := Now() - sent[side].Load()
				if err == nil {
					err = ends[side].Rearm()
				}
				if err == nil && abort.Load() {
					err = errAborted
				}
				if err != nil {
					fail(err)
					return
				}
				lat = append(lat, d)
				if side == 1 || len(lat) < rounds {
					if err := wake(1 - side); err != nil {
						fail(err)
						return
					}
				}
			}
			samples[side] = lat
			errs <- nil
		}()
	}
	var first error
	for range 2 {
		if err := <-errs; err != nil && (first == nil || errors.Is(first, errAborted)) {
			first = err
		}
	}
	if first != nil {
		return 0, first
	}
	all := append(samples[0], samples[1]...)
	slices.Sort(all)
	return time.Duration(all[len(all)/2]), nil
}

// eventfdEnd is a Sleeper of epoll and an eventfd, as a carrier sleeps.
type eventfdEnd struct {
	ep, efd int
	evs     [1]unix.EpollEvent
}

func (w *eventfdEnd) open() error {
	w.ep, w.efd = -1, -1
	var err error
	if w.ep, err = unix.EpollCreate(); err != nil {
		return err
	}
	if w.efd, err = unix.Eventfd(); err != nil {
		return err
	}
	return unix.EpollAdd(w.ep, w.efd, unix.EPOLLIN, 0)
}

func (w *eventfdEnd) close() {
	for _, fd := range []int{w.efd, w.ep} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// errAborted ends a side whose peer failed.
var errAborted = errors.New("the other side failed")

// Abort signals the eventfd.
func (w *eventfdEnd) Abort() { unix.EventfdSignal(w.efd) }

// Wake signals the eventfd.
func (w *eventfdEnd) Wake() error { return unix.EventfdSignal(w.efd) }

// Sleep waits in epoll_wait for the eventfd.
func (w *eventfdEnd) Sleep() error {
	for {
		n, err := unix.EpollWait(w.ep, w.evs[:], -1)
		if err != nil || n > 0 {
			return err
		}
	}
}

// Rearm drains the eventfd.
func (w *eventfdEnd) Rearm() error { return unix.EventfdDrain(w.efd) }

// MeasurePause returns the cost of one PAUSE instruction in nanoseconds: the
// median over 9 runs of n back-to-back PAUSEs, divided by n. Where spindle has
// no PAUSE in assembly (not amd64) it reports an error wrapping
// ErrNotSupported.
func MeasurePause(n int) (float64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("measure pause: %d instructions", n)
	}
	if !hasPause {
		return 0, fmt.Errorf("measure pause: no PAUSE instruction on %s: %w", runtime.GOARCH, ErrNotSupported)
	}
	const runs = 9
	per := make([]float64, runs)
	for i := range per {
		start := Now()
		pauseN(uint64(n))
		per[i] = float64(Now()-start) / float64(n)
	}
	slices.Sort(per)
	return per[runs/2], nil
}
