package wait

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"spindle/cpu"
	"spindle/internal/unix"
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
	ends := [2]waker{{ep: -1, efd: -1}, {ep: -1, efd: -1}}
	defer ends[0].close()
	defer ends[1].close()
	for i := range ends {
		if err := ends[i].open(); err != nil {
			return 0, fmt.Errorf("measure block-and-wake: %w", err)
		}
	}

	// Pin the two threads to two CPUs, so that a wake-up crosses CPUs as
	// a producer's wake of a carrier does; with one CPU they share it.
	allowed, err := cpu.Allowed()
	if err != nil {
		return 0, fmt.Errorf("measure block-and-wake: %w", err)
	}
	samples := make([][]int64, 2)
	errs := make(chan error, 2)
	var abort atomic.Bool
	// fail stops both sides: a side blocked on its eventfd is woken and
	// sees the abort.
	fail := func(err error) {
		abort.Store(true)
		ends[0].signal()
		ends[1].signal()
		errs <- err
	}
	for side := range 2 {
		go func() {
			// The thread is pinned and never unlocked: it exits with
			// the goroutine, so no other goroutine inherits its mask.
			runtime.LockOSThread()
			if len(allowed) > 1 {
				if err := cpu.Pin(cpu.Set{allowed[side]}); err != nil {
					fail(err)
					return
				}
			}
			me, peer := &ends[side], &ends[1-side]
			lat := make([]int64, 0, rounds)
			if side == 0 { // side 0 serves first
				if err := peer.wake(idle); err != nil {
					fail(err)
					return
				}
			}
			for range rounds {
				d, err := me.block()
				if err == nil && abort.Load() {
					err = errAborted
				}
				if err != nil {
					fail(err)
					return
				}
				lat = append(lat, d)
				if side == 1 || len(lat) < rounds {
					if err := peer.wake(idle); err != nil {
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
		return 0, fmt.Errorf("measure block-and-wake: %w", first)
	}
	all := append(samples[0], samples[1]...)
	slices.Sort(all)
	return time.Duration(all[len(all)/2]), nil
}

// waker is one side of the block-and-wake ping-pong.
type waker struct {
	ep, efd int
	sent    atomic.Int64 // Now() just before the peer's eventfd write
	evs     [1]unix.EpollEvent
}

func (w *waker) open() error {
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

func (w *waker) close() {
	for _, fd := range []int{w.efd, w.ep} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// errAborted ends a side whose peer failed.
var errAborted = errors.New("the other side failed")

// signal wakes w's thread without a time stamp (to abort).
func (w *waker) signal() { unix.EventfdSignal(w.efd) }

// wake spins for idle, then stamps the time and signals w's eventfd.
func (w *waker) wake(idle time.Duration) error {
	for until := Now() + int64(idle); Now() < until; {
	}
	w.sent.Store(Now())
	return unix.EventfdSignal(w.efd)
}

// block waits for w's eventfd and returns the wake latency in ns.
func (w *waker) block() (int64, error) {
	for {
		n, err := unix.EpollWait(w.ep, w.evs[:], -1)
		if err != nil {
			return 0, err
		}
		if n > 0 {
			break
		}
	}
	d := Now() - w.sent.Load()
	return d, unix.EventfdDrain(w.efd)
}

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
