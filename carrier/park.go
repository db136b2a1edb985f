package carrier

import (
	"fmt"
	"os"
	"syscall"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/internal/unix"
)

// parker is how a carrier with Options.ParkIdle waits: instead of
// blocking its thread in the poller's system call (epoll_pwait2,
// io_uring_enter), which keeps its P in a system call until sysmon takes
// it back, the carrier's goroutine parks in Go's netpoller on a duplicate
// of the poller's fd, which polls readable while the poller has events.
// Its P goes at once to goroutines and the GC workers, which then run in
// the carrier's idle time rather than taking the P (and, on a one-CPU
// server, the CPU) from it in the middle of a burst; a readiness edge
// readies the goroutine. A bound carrier parks unlocked (Carrier.parkIdle),
// so the thread that finds it ready runs it, as any goroutine, with no
// hand-off of the P between threads; with N+1 it parks locked, and the
// runtime gives its thread a P back.
//
// The duplicate is registered in Go's netpoller once, edge-triggered: an
// epoll instance reports an edge whenever an fd of its set becomes ready
// (the carrier's eventfd included, so wake works unchanged), an io_uring
// ring whenever a completion is posted. Go's own deadline timers have a
// millisecond's resolution, so a wait's deadline is the poller's own
// (armTimeout: a timerfd in the epoll set, the ring's timeout request).
type parker struct {
	f  *os.File
	rc syscall.RawConn
}

// newParker makes the parker of poller p.
func newParker(p poller) (*parker, error) {
	fd, err := unix.DupCloexec(p.fd())
	if err != nil {
		return nil, fmt.Errorf("park: %w", err)
	}
	if err := unix.SetNonblock(fd); err != nil { // os.NewFile polls only non-blocking fds
		unix.Close(fd)
		return nil, fmt.Errorf("park: %w", err)
	}
	f := os.NewFile(uintptr(fd), "carrier-poller")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("park: %w", err)
	}
	return &parker{f: f, rc: rc}, nil
}

// wait waits as p.wait(timeoutNs) does (timeoutNs != 0), parked in Go's
// netpoller: it looks at the poller without blocking, and parks until the
// poller's fd is readable when it found nothing, until it finds events or
// the deadline has passed. Each look first sets the poller's timer for the
// deadline, and looks again if the timer went off in it: the ring keeps
// one timeout request, which may be an earlier wait's, and its completion
// reaped in a look is no event (the look after it re-arms). The first
// look cannot be left out, even where the last one drained the poller:
// RawConn.Read first resets the fd's readiness in the netpoller, so an
// edge the runtime saw before the call (a wake-up sent since that look)
// would be lost, and the carrier would sleep on (TestNoLostWakeup).
func (k *parker) wait(p poller, timeoutNs int64) int {
	deadline := int64(-1)
	if timeoutNs > 0 {
		deadline = wait.Now() + timeoutNs
	}
	n := 0
	err := k.rc.Read(func(uintptr) bool {
		for {
			if deadline >= 0 {
				left := deadline - wait.Now()
				if left <= 0 || !p.armTimeout(deadline, left) {
					n = p.wait(0) // due, or no timer to end a park: the loop comes back
					return true
				}
			}
			n = p.wait(0)
			if n > 0 || deadline < 0 || p.timeoutArmed() {
				return n > 0
			}
		}
	})
	if err != nil { // the parker was closed: only after the loop ended
		return p.wait(0)
	}
	return n
}

// close releases the duplicate (the poller's own fd stays open).
func (k *parker) close() { k.f.Close() }
