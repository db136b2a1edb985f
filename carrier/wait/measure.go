package wait

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"spindle/internal/unix"
)

// DefaultMeasureRounds is how many block-and-wake round trips
// MeasureBlockWake makes when a strategy measures B for itself: a few
// milliseconds of work, enough for a stable median.
const DefaultMeasureRounds = 400

// MeasureBlockWake measures B, the cost of one block-and-wake: two locked
// OS threads, each blocked in epoll_wait on its own eventfd, wake each other
// in turn, and each wake-up's latency is the time from just before the
// waker's eventfd write to the woken thread's return from epoll_wait (both
// read the monotonic clock). It returns the median of 2*rounds wake-ups.
func MeasureBlockWake(rounds int) (time.Duration, error) {
	if rounds <= 0 {
		return 0, fmt.Errorf("measure block-and-wake: %d rounds", rounds)
	}
	var ends [2]waker
	for i := range ends {
		if err := ends[i].open(); err != nil {
			ends[0].close()
			return 0, fmt.Errorf("measure block-and-wake: %w", err)
		}
	}
	defer ends[0].close()
	defer ends[1].close()

	samples := make([][]int64, 2)
	errs := make(chan error, 2)
	for side := range 2 {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			me, peer := &ends[side], &ends[1-side]
			lat := make([]int64, 0, rounds)
			if side == 0 { // side 0 serves first
				if err := peer.wake(); err != nil {
					errs <- err
					return
				}
			}
			for range rounds {
				d, err := me.block()
				if err != nil {
					errs <- err
					return
				}
				lat = append(lat, d)
				if side == 1 || len(lat) < rounds {
					if err := peer.wake(); err != nil {
						errs <- err
						return
					}
				}
			}
			samples[side] = lat
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			return 0, fmt.Errorf("measure block-and-wake: %w", err)
		}
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

// wake stamps the time and signals w's eventfd.
func (w *waker) wake() error {
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
