package unix

import (
	"fmt"
	"os"
	"unsafe"

	xunix "golang.org/x/sys/unix"
)

// MaxRawSleep bounds one Nanosleep.
const MaxRawSleep = 50_000_000 // 50ms

// Nanosleep blocks the calling thread for ns nanoseconds on CLOCK_MONOTONIC,
// at most MaxRawSleep (a signal ends it early; callers re-check the clock).
//
// It is a raw system call: the goroutine keeps its P while it sleeps, so it
// returns to running code the moment the kernel wakes its thread. Through
// Go's ordinary system-call path a sleeper may lose its P, and on waking
// wait for the scheduler to give it one: on dev-2vcpu a burst driver that
// slept so went unflipped for up to 615ms. The price is that a
// stop-the-world waits for the sleep to end, hence the bound; the spectrum
// turns the collector off while it measures.
func Nanosleep(ns int64) error { return clockNanosleep(ns, true) }

// Timer is a CLOCK_MONOTONIC timerfd read through Go's network poller: a
// goroutine waiting on it is parked (its P serves other goroutines) and is
// woken the moment the timer fires, where a runtime timer (time.Sleep, a
// Ticker) is rounded up to the next millisecond while the runtime waits
// for it in epoll, and a sleeping system call keeps its P until sysmon
// takes it back (which keeps sysmon at its 20 µs period). One goroutine at
// a time may Sleep on a Timer.
type Timer struct {
	f   *os.File
	fd  int
	buf [8]byte
}

// NewTimer makes a timer; Close releases it.
func NewTimer() (*Timer, error) {
	fd, err := Timerfd()
	if err != nil {
		return nil, err
	}
	return &Timer{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd}, nil
}

// Sleep waits ns nanoseconds (at least 1).
func (t *Timer) Sleep(ns int64) error {
	if err := TimerfdArm(t.fd, ns); err != nil {
		return err
	}
	if _, err := t.f.Read(t.buf[:]); err != nil {
		return fmt.Errorf("timerfd read: %w", err)
	}
	return nil
}

// Close releases the timer; a Sleep under way returns an error.
func (t *Timer) Close() error { return t.f.Close() }

// Timerfd creates a non-blocking, close-on-exec CLOCK_MONOTONIC timerfd,
// disarmed.
func Timerfd() (int, error) {
	fd, err := xunix.TimerfdCreate(xunix.CLOCK_MONOTONIC, xunix.TFD_NONBLOCK|xunix.TFD_CLOEXEC)
	return fd, wrap("timerfd_create", err)
}

// TimerfdArm makes the timerfd expire once, ns nanoseconds (at least 1)
// from now, replacing any expiry it had; its count of expiries restarts
// from zero.
func TimerfdArm(fd int, ns int64) error {
	spec := xunix.ItimerSpec{Value: xunix.NsecToTimespec(max(ns, 1))}
	return wrap("timerfd_settime", xunix.TimerfdSettime(fd, 0, &spec, nil))
}

// BlockingSleep blocks the calling thread for ns nanoseconds on
// CLOCK_MONOTONIC (at most MaxRawSleep) through Go's ordinary system-call
// path: the goroutine's P may go to other goroutines meanwhile, and the
// thread wakes by itself, needing no other thread to poll for it; on
// waking it takes its P back, or an idle one, or waits for one.
func BlockingSleep(ns int64) error { return clockNanosleep(ns, false) }

// clockNanosleep sleeps ns (at most MaxRawSleep) on CLOCK_MONOTONIC, by a
// raw system call (raw: the P kept) or through Go's system-call path.
func clockNanosleep(ns int64, raw bool) error {
	if ns <= 0 {
		return nil
	}
	ts := xunix.NsecToTimespec(min(ns, MaxRawSleep))
	var errno xunix.Errno
	if raw {
		_, _, errno = xunix.RawSyscall6(xunix.SYS_CLOCK_NANOSLEEP, uintptr(xunix.CLOCK_MONOTONIC), 0,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	} else {
		_, _, errno = xunix.Syscall6(xunix.SYS_CLOCK_NANOSLEEP, uintptr(xunix.CLOCK_MONOTONIC), 0,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	}
	if errno == 0 || errno == xunix.EINTR {
		return nil
	}
	return wrap("clock_nanosleep", errno)
}
