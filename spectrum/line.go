package spectrum

import (
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/internal/unix"
)

// Line is the shared value the background threads poll: 0 while idle, 1
// while busy (packets are waiting). The driver flips it; a waiter that
// blocks sleeps on it with a futex, and the driver wakes sleepers when it
// flips to busy. It also carries the time of the last flip to busy, from
// which waiters measure their wake latency.
type Line struct {
	word     atomic.Uint32 // 0 idle, 1 busy; the futex word
	_        [60]byte      // keep the polled word on its own cache line
	sleepers atomic.Int32  // waiters inside Block
	busyAt   atomic.Int64  // wait.Now() of the last flip to busy
	seq      atomic.Uint64 // busy periods started
	closed   atomic.Bool
}

// SetBusy marks work as waiting at time now (wait.Now clock) and wakes the
// sleepers.
func (l *Line) SetBusy(now int64) {
	l.busyAt.Store(now)
	l.seq.Add(1)
	l.word.Store(1)
	// Go's atomics are sequentially consistent: either the sleeper saw the
	// word at 1 before sleeping, or this load sees it counted.
	if l.sleepers.Load() > 0 {
		_, _ = unix.FutexWake(&l.word, math.MaxInt32) // an error leaves sleepers to their timeout
	}
}

// SetIdle marks the line idle.
func (l *Line) SetIdle() {
	if !l.closed.Load() {
		l.word.Store(0)
	}
}

// Close ends the run: the line stays busy, so every waiter returns.
func (l *Line) Close() {
	l.closed.Store(true)
	l.SetBusy(wait.Now())
}

// Closed reports whether Close was called.
func (l *Line) Closed() bool { return l.closed.Load() }

// Busy reports whether work is waiting.
func (l *Line) Busy() bool { return l.word.Load() != 0 }

// Since returns the busy period's sequence number and start time.
func (l *Line) Since() (seq uint64, at int64) { return l.seq.Load(), l.busyAt.Load() }

// Target returns the line as a wait.Target: Ready while busy, no I/O to
// poll, Block sleeps on the futex until busy or the deadline.
func (l *Line) Target() wait.Target { return lineTarget{l} }

type lineTarget struct{ l *Line }

func (t lineTarget) Ready() bool { return t.l.Busy() }

// WakeSent stamps work's arrival for the adaptive strategy
// (wait.WakeStamper): the time of the last flip to busy, taken before the
// driver wakes the sleepers. The strategy uses it only when it falls within
// the block it ends, so it learns the idle period the driver drew rather
// than that plus the wake-up latency (the cells keep B fixed: FixedB).
func (t lineTarget) WakeSent() int64 { return t.l.busyAt.Load() }

func (t lineTarget) Poll() int { return 0 }

// Word exposes the polled word for UMONITOR: atomic.Uint32 holds only the
// uint32 (its noCopy guard has no size), so its address is the word's.
func (t lineTarget) Word() *uint32 { return (*uint32)(unsafe.Pointer(&t.l.word)) }

func (t lineTarget) Block(deadline int64) int {
	timeout := int64(-1)
	if deadline >= 0 {
		if timeout = deadline - wait.Now(); timeout <= 0 {
			return 0
		}
	}
	t.l.sleepers.Add(1)
	if !t.l.Busy() {
		_ = unix.FutexWait(&t.l.word, 0, timeout) // errors end the sleep early; the caller re-checks
	}
	t.l.sleepers.Add(-1)
	return 0
}
