package carrier

import (
	"fmt"
	"strings"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/internal/unix"
)

// Poller names, the values of Options.Poller and of the --poller flags.
const (
	PollerEpoll = "epoll" // epoll, edge-triggered (the default)
	// PollerURing is io_uring doing conns' reads and writes itself (RECV,
	// SEND), with multishot poll readiness for accepts and connects (uring.go).
	PollerURing = "io_uring"
	// PollerURingPoll is io_uring with multishot poll readiness only: conns'
	// reads and writes stay the task's system calls, as with epoll.
	PollerURingPoll = "io_uring_poll"
)

// DefaultPoller is the I/O poller carriers use when Options.Poller is "".
const DefaultPoller = PollerEpoll

// defaultPoller is what Options.Poller "" means: DefaultPoller, except
// while the package's tests run their suite over every poller (TestMain).
var defaultPoller = DefaultPoller

// pollerKind is a poller the package knows: its name, whether it can run
// here (check; nil: everywhere) and how a carrier makes one (newPoller's
// arguments).
type pollerKind struct {
	name  string
	check func() error
	make  func(efd int, moves bool, s *stats) (poller, error)
}

// pollerKinds are the pollers, in the order a usage message shows them: a
// poller's registration is its line here (Pollers, CheckPoller and
// newPoller read nothing else).
var pollerKinds = []pollerKind{
	{PollerEpoll, nil, func(efd int, _ bool, _ *stats) (poller, error) { return asPoller(newEpollPoller(efd)) }},
	{PollerURing, uringSupport, func(efd int, moves bool, s *stats) (poller, error) {
		return asPoller(newURingPoller(efd, moves, true, s))
	}},
	{PollerURingPoll, uringSupport, func(efd int, moves bool, s *stats) (poller, error) {
		return asPoller(newURingPoller(efd, moves, false, s))
	}},
}

// asPoller returns a constructor's poller as the interface: nil, not a
// typed nil pointer inside it, when the constructor failed, so that a
// carrier's "c.poll != nil" (closeFDs) does not close a poller that was
// never made (a nil dereference when file descriptors ran out).
func asPoller[P poller](p P, err error) (poller, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Pollers lists the poller names in the order a usage message shows them.
var Pollers = func() []string {
	names := make([]string, len(pollerKinds))
	for i, k := range pollerKinds {
		names[i] = k.name
	}
	return names
}()

// pollerKindOf returns the named poller ("": DefaultPoller).
func pollerKindOf(name string) (pollerKind, bool) {
	if name == "" {
		name = DefaultPoller
	}
	for _, k := range pollerKinds {
		if k.name == name {
			return k, true
		}
	}
	return pollerKind{}, false
}

// CheckPoller reports whether the named poller can run here: nil, an
// error wrapping wait.ErrNotSupported that says why not (io_uring only:
// the kernel is too old, kernel.io_uring_disabled forbids it, or a seccomp
// filter refuses the system call), or an error for an unknown name.
func CheckPoller(name string) error {
	k, ok := pollerKindOf(name)
	switch {
	case !ok:
		return fmt.Errorf("unknown poller %q (want one of %s)", name, strings.Join(Pollers, ", "))
	case k.check != nil:
		return k.check()
	}
	return nil
}

// knownPoller reports whether name is a poller name ("" included).
func knownPoller(name string) bool {
	_, ok := pollerKindOf(name)
	return ok
}

// poller is a carrier's source of I/O readiness. Every method runs on the
// carrier's goroutine except close, which runs once the carrier is done.
// Readiness is edge-triggered in both directions at once, as EPOLLET
// reports it: each time an fd becomes readable or writable the poller
// reports an event with the token the fd was added with. The carrier's
// eventfd (given at construction) reports token 0.
type poller interface {
	// start runs on the carrier's goroutine before its loop (after the
	// thread is bound).
	start() error
	// add starts reporting fd's readiness with tok (never 0), which must
	// not be that of an fd removed before (fdTable.renew): io_uring
	// reports a removed poll's end after the fact, under its token.
	add(fd int, tok uint64) error
	// remove stops reporting fd's readiness; closing says the fd is
	// closed next (epoll then needs nothing; io_uring must cancel its
	// poll, which holds the file open).
	remove(fd int, tok uint64, closing bool)
	// wait collects events, waiting at most timeoutNs (-1: no limit, 0:
	// not at all), and returns how many; event(i) reads them until the
	// next wait.
	wait(timeoutNs int64) int
	// event returns the token and the readiness bits (unix.EPOLL* values)
	// of the i-th event of the last wait, or the read or write that
	// completed (an ioPoller's; then tok and events are not used).
	event(i int) (tok uint64, events uint32, op *ioOp)
	// woken handles an event of the carrier's eventfd (token 0).
	woken()
	// fd is a descriptor that polls readable while the poller has events
	// to report (the epoll instance, the io_uring ring): a parking
	// carrier (Options.ParkIdle) waits on it in Go's netpoller.
	fd() int
	// armTimeout makes fd readable at the deadline (wait.Now ns), left
	// ns (> 0) from now, or earlier, for a parked carrier whose wait has
	// a deadline; the next wait(0) submits it where the poller queues
	// requests. It reports false when it could not.
	armTimeout(deadline, left int64) bool
	// timeoutArmed reports whether the timer armTimeout set is still to
	// go off, or went off as an event a wait reported.
	timeoutArmed() bool
	// quiesce runs at the end of the carrier's shutdown, on its
	// goroutine, after every fd was removed: it leaves nothing in flight.
	quiesce()
	// close releases the poller's resources (not the eventfd).
	close()
}

// ioPoller is a poller that also does a conn's reads and writes itself:
// the io_uring poller with PollerURing. Conn.Read and Conn.Write then
// start an operation, park until the poller reports it completed, and
// return its result (ringIO, conn.go).
type ioPoller interface {
	// doesIO reports whether the poller does conns' reads and writes (the
	// io_uring poller does with PollerURing, not with PollerURingPoll).
	doesIO() bool
	// startIO queues op's read into p or write of p, on op.pd's fd, or,
	// when op.poll is set, a one-shot poll of the fd for those events (p
	// unused). The kernel uses p until the completion is reaped: the
	// poller keeps it alive until then. It reports false when no SQE was
	// free.
	startIO(op *ioOp, p []byte) bool
	// cancelIO asks for op's early completion (-ECANCELED, or its result
	// if it was done already).
	cancelIO(op *ioOp)
	// queueWrite has the next wait send pd's write-behind buffer
	// (writebehind.go).
	queueWrite(pd *pollDesc)
}

// ioOp is a read or a write that an ioPoller does for a conn: one per
// direction, as a Conn has one reader and one writer at a time; or a poll
// of the conn for readiness in a direction (a raw wait or a ReadFrom's
// sendfile, rawConn.wait), or for the peer's hang-up (the hang-up watch's,
// pollDesc.hop).
type ioOp struct {
	pd         *pollDesc
	write      bool
	poll       uint32 // a one-shot poll for these events (POLL* bits) instead of a RECV or SEND; res: the events
	fromBuffer bool   // a SEND of the conn's write-behind buffer, which no task waits for
	pending    bool   // started and not yet returned to the task (fromBuffer: not yet completed)
	done       bool   // completed: res is the result
	res        int32  // bytes, or -errno
}

// newPoller returns the named poller for a carrier whose wake-up eventfd
// is efd. moves says the carrier may change threads: it floats (not
// locked to a thread) or hands off (a new owner on another thread).
func newPoller(name string, efd int, moves bool, s *stats) (poller, error) {
	k, ok := pollerKindOf(name)
	if !ok {
		return nil, CheckPoller(name)
	}
	return k.make(efd, moves, s)
}

// epollPoller is the epoll instance of a carrier.
type epollPoller struct {
	ep     int
	efd    int   // the carrier's eventfd
	tfd    int   // a timerfd for armTimeout, made at its first call (-1: none yet)
	tAt    int64 // the deadline tfd is armed for (0: none)
	events []unix.EpollEvent
}

func newEpollPoller(efd int) (*epollPoller, error) {
	ep, err := unix.EpollCreate()
	if err != nil {
		return nil, err
	}
	// Token 0 is the eventfd; level-triggered, drained when seen.
	if err := unix.EpollAdd(ep, efd, unix.EPOLLIN, 0); err != nil {
		unix.Close(ep)
		return nil, err
	}
	return &epollPoller{ep: ep, efd: efd, tfd: -1, events: make([]unix.EpollEvent, eventBatch)}, nil
}

func (p *epollPoller) start() error { return nil }

func (p *epollPoller) add(fd int, tok uint64) error {
	return unix.EpollAdd(p.ep, fd, unix.EPOLLIN|unix.EPOLLOUT|unix.EPOLLRDHUP|unix.EPOLLET, tok)
}

func (p *epollPoller) remove(fd int, _ uint64, closing bool) {
	if !closing { // the kernel drops a closed fd from the set by itself
		unix.EpollDel(p.ep, fd) // fails only for an fd already gone from the set
	}
}

func (p *epollPoller) wait(timeoutNs int64) int {
	var n int
	var err error
	if timeoutNs == 0 {
		n, err = unix.EpollPoll(p.ep, p.events)
	} else {
		n, err = unix.EpollWaitNs(p.ep, p.events, timeoutNs)
	}
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func (p *epollPoller) event(i int) (uint64, uint32, *ioOp) {
	ev := &p.events[i]
	return unix.Token(ev), ev.Events, nil
}

// woken drains the eventfd: it is level-triggered in epoll, and would
// report itself at every poll until read.
func (p *epollPoller) woken() { unix.EventfdDrain(p.efd) }

func (p *epollPoller) quiesce() {}

func (p *epollPoller) fd() int { return p.ep }

// armTimeout sets the poller's timerfd, which reports as the eventfd's
// token 0, edge-triggered: once per expiry, so nothing needs to read it
// (woken drains the eventfd, which is then empty: one spare read per
// expiry). Arming it again restarts its count. A timer armed for the
// deadline or sooner, and not yet expired, is kept: the earliest timer of a
// busy carrier moves later at nearly every wait (each request's deadline
// replaces the last one's), and an early expiry costs one wake-up where a
// re-arm cost a system call per wait.
func (p *epollPoller) armTimeout(deadline, left int64) bool {
	if p.tfd < 0 {
		tfd, err := unix.Timerfd()
		if err != nil {
			return false
		}
		if err := unix.EpollAdd(p.ep, tfd, unix.EPOLLIN|unix.EPOLLET, 0); err != nil {
			unix.Close(tfd)
			return false
		}
		p.tfd = tfd
	}
	if now := deadline - left; p.tAt > now && p.tAt <= deadline {
		return true // armed for now or sooner: an early expiry costs one spare wake-up, a re-arm a system call per wait
	}
	if unix.TimerfdArm(p.tfd, left) != nil {
		p.tAt = 0
		return false
	}
	p.tAt = deadline
	return true
}

// timeoutArmed is true: an expiry of the timerfd is an event (token 0).
func (p *epollPoller) timeoutArmed() bool { return true }

func (p *epollPoller) close() {
	if p.tfd >= 0 {
		unix.Close(p.tfd)
	}
	unix.Close(p.ep)
}

// blockTimeout converts a Block deadline (monotonic ns; < 0: none) to a
// poller timeout: -1 for none, else the ns left (0 when it has passed).
func blockTimeout(deadline int64) int64 {
	if deadline < 0 {
		return -1
	}
	return max(0, deadline-wait.Now())
}
