package carrier

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/internal/unix"
)

// The io_uring poller (Options.Poller = PollerURing or PollerURingPoll).
// Each registered fd has one multishot POLL_ADD armed (edge-triggered,
// like EPOLLET), whose completions are readiness events. With
// PollerURingPoll that is all, and reads and writes stay non-blocking
// system calls made by the task, as with epoll. With PollerURing (rw) the
// poller also does conns' reads and writes as RECV and SEND requests
// (startIO; Conn.ringIO parks the task until a RECV completes; writes are
// write-behind, sent by the next wait: prepWrites, endInline and
// writebehind.go), which saves the task's system calls, and conns then
// have no poll (register): docs/carrier.md ("Pollers") has the
// measurements that decided it.
//
//   - Submission is batched: add, remove and the wait's timeout only fill
//     SQEs; the next wait hands them all to the kernel in the same
//     io_uring_enter that reaps completions (or that sleeps).
//   - A non-blocking poll makes no system call at all when nothing is to be
//     submitted and the kernel has not flagged pending completion work
//     (IORING_SQ_TASKRUN, IORING_SQ_CQ_OVERFLOW): it reads the completion
//     ring. So the busy and pause strategies spin on memory, not on
//     system calls.
//   - Sleeping is io_uring_enter with GETEVENTS and min_complete 1; a
//     deadline is one TIMEOUT request, moved in place (TIMEOUT_UPDATE) when
//     the carrier's next timer changes.
//   - The carrier's wake-up is its eventfd, polled like any fd (token 0):
//     producers write it exactly as with epoll.
//   - A conn's close removes its poll first (the poll holds a reference to
//     the file, so without the removal the socket would stay open).
//   - Every request that will complete is counted (inflight) until its
//     last completion is reaped; quiesce cancels what is left at shutdown
//     and reaps until the count is zero, before the rings are unmapped.

// Ring sizes. One loop pass submits at most a few SQEs per conn it opens or
// closes plus one timeout; a full submission queue is flushed and reused
// at once, so 256 only bounds the batch. The completion queue holds the
// readiness events of a pass: 4096 covers as many ready conns, and more
// overflow into the kernel's list (IORING_FEAT_NODROP), reaped next pass.
const (
	ringEntries   = eventBatch
	ringCQEntries = 4096
)

// User data of the poller's own requests. A poll's user data is its
// token, whose low 32 bits (slot+1) are never 0, or 0 for the eventfd; so
// a value with zero low bits and non-zero high bits is never a token.
const (
	udTimer  = 1 << 32 // the wait's timeout
	udCancel = 2 << 32 // ASYNC_CANCEL and TIMEOUT_UPDATE (CQE only on failure)
)

// pollMask is what a conn's poll waits for: the epoll carrier's
// EPOLLIN|EPOLLOUT|EPOLLRDHUP (errors and hang-ups are always reported).
const pollMask = unix.POLLIN | unix.POLLOUT | unix.POLLRDHUP

// timerSlack is how close an armed timeout must be to a new deadline to be
// kept instead of moved: the carrier computes the same deadline (its next
// timer) a few ns apart on consecutive waits.
const timerSlack = int64(time.Microsecond)

// timerKeepAhead is how far ahead an armed timeout that is earlier than a
// new deadline must still be for the wait to keep it rather than move it.
// A conn's read deadline set per request moves the carrier's next timer
// at almost every sleep, and moving the timeout costs an SQE and kernel
// work each time (1.5 TIMEOUT_UPDATEs per /fruits request at a fixed
// rate); a timeout kept while it is early fires early at most once, a
// wake-up after which the next wait arms the real deadline. Within a
// millisecond of firing the move is cheaper than that wake-up.
const timerKeepAhead = int64(time.Millisecond)

// quiesceLimit bounds how long shutdown waits for cancelled requests to
// complete (they complete within an io_uring_enter or two; this is only
// a guard against a kernel that never answers).
const quiesceLimit = time.Second

// pollEvent is one readiness event (a token and EPOLL* bits) or one
// completed read or write (op).
type pollEvent struct {
	tok uint64
	ev  uint32
	op  *ioOp
}

// The user data of a conn's read and write (PollerURing) is its token
// with one of these bits set in the low word, which slot+1 never reaches.
const (
	udRead   = 1 << 31
	udWrite  = 1 << 30
	udInline = 1 << 29 // an inline SEND of the write-behind buffer (writebehind.go)
	udHup    = 1 << 28 // the hang-up watch's poll (pollDesc.hop)
)

// inFlightIO is a read or write the kernel has: the op to complete and the
// buffer it uses, kept reachable until the completion is reaped.
type inFlightIO struct {
	op  *ioOp
	buf []byte
}

// inlineSend is an inline SEND of a conn's write-behind buffer (buf, its
// front) in the submission queue at counter idx, settled once the kernel
// has consumed it: sent whole, unless its completion came (failed).
type inlineSend struct {
	pd     *pollDesc
	buf    []byte
	idx    uint32
	failed bool
	res    int32
}

// uringPoller is the io_uring instance of a carrier.
type uringPoller struct {
	r        *unix.Ring
	started  bool
	armed    map[uint64]int        // token -> fd of every poll armed and not removed
	rw       bool                  // do conns' reads and writes (PollerURing)
	ops      map[uint64]inFlightIO // reads and writes in flight, by user data
	removing map[uint64]struct{}   // polls cancelled whose last completion is still to come
	recancel bool                  // a cancellation failed with -EALREADY: cancel removing again
	inflight int                   // requests whose last completion is still to come
	rearms   int                   // polls that ended by themselves and were armed again
	evs      []pollEvent           // the events of the last wait
	flushq   []*pollDesc           // conns whose write-behind buffer the next wait sends
	inline   []inlineSend          // inline SENDs not yet settled
	ts       unix.KernelTimespec
	timerOn  bool  // the timeout request is in flight
	timerAt  int64 // its deadline, wait.Now ns
	// pollFirst says the kernel takes IORING_RECVSEND_POLL_FIRST: a RECV
	// on a conn whose last read drained the socket skips the receive
	// attempt that would find it empty (startIO).
	pollFirst bool
	s         *stats
}

func newURingPoller(efd int, moves, rw bool, s *stats) (*uringPoller, error) {
	r, err := setupRing(moves)
	if err != nil {
		return nil, err
	}
	p, err := uringPollerOn(r, efd, s)
	if err != nil {
		r.Close()
		return nil, err
	}
	p.rw = rw
	return p, nil
}

// uringPollerOn makes a poller of ring r (a real one, or a unix.MemRing in
// tests) and queues the eventfd's poll.
func uringPollerOn(r *unix.Ring, efd int, s *stats) (*uringPoller, error) {
	p := &uringPoller{r: r, armed: map[uint64]int{}, ops: map[uint64]inFlightIO{}, removing: map[uint64]struct{}{}, evs: make([]pollEvent, 0, eventBatch), s: s}
	// No feature bit announces POLL_FIRST (Linux 5.19): REG_REG_RING
	// (6.3) stands for it, a proxy that errs on the safe side (a kernel
	// between the two goes without the saving).
	p.pollFirst = r.Features&unix.IORING_FEAT_REG_REG_RING != 0
	if err := p.add(efd, 0); err != nil {
		return nil, err
	}
	return p, nil
}

// setupRing creates a ring with the best flags the kernel accepts. A
// carrier locked to its thread asks for SINGLE_ISSUER with DEFER_TASKRUN
// (completion work runs only when the carrier enters the kernel to reap:
// no interrupts while it runs tasks), else COOP_TASKRUN (no IPI for
// completion work; it runs at the thread's next system call). A carrier
// that moves between threads (it floats, or hands off: a new owner submits
// from another thread) gets neither: SINGLE_ISSUER would refuse the new
// thread's submissions, and COOP_TASKRUN would leave completion work
// queued to a thread that submitted and then went to sleep; without them
// it goes to the thread that submitted, by a signal-like notification that
// wakes it. The ring starts disabled: start enables it on the carrier's
// own thread, which SINGLE_ISSUER then binds it to.
func setupRing(moves bool) (*unix.Ring, error) {
	const base = unix.IORING_SETUP_R_DISABLED | unix.IORING_SETUP_CLAMP
	tries := []uint32{
		base | unix.IORING_SETUP_SUBMIT_ALL | unix.IORING_SETUP_SINGLE_ISSUER | unix.IORING_SETUP_DEFER_TASKRUN | unix.IORING_SETUP_TASKRUN_FLAG,
		base | unix.IORING_SETUP_SUBMIT_ALL | unix.IORING_SETUP_COOP_TASKRUN | unix.IORING_SETUP_TASKRUN_FLAG,
		base | unix.IORING_SETUP_SUBMIT_ALL,
		base,
	}
	if moves {
		tries = tries[2:]
	}
	var err error
	for _, flags := range tries {
		var r *unix.Ring
		if r, err = unix.URingSetup(ringEntries, ringCQEntries, flags); err == nil {
			if err = checkFeatures(r.Features); err != nil {
				r.Close()
				return nil, err
			}
			return r, nil
		}
		if !errors.Is(err, unix.EINVAL) { // EINVAL: a flag this kernel lacks; try fewer
			break
		}
	}
	return nil, setupReason(err)
}

// checkFeatures refuses kernels that lack what the poller relies on. Two
// of the three are told by a feature bit of their own; multishot poll has
// none, and RSRC_TAGS, which came in the same release (5.13), stands for
// it: a proxy, named as one in the error.
func checkFeatures(f uint32) error {
	var missing []string
	if f&unix.IORING_FEAT_NODROP == 0 {
		missing = append(missing, "NODROP (5.5)")
	}
	if f&unix.IORING_FEAT_RSRC_TAGS == 0 {
		missing = append(missing, "multishot poll (5.13; told by RSRC_TAGS)")
	}
	if f&unix.IORING_FEAT_CQE_SKIP == 0 {
		missing = append(missing, "CQE_SKIP_SUCCESS (5.17)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("io_uring: kernel too old, it lacks %s: %w", strings.Join(missing, ", "), wait.ErrNotSupported)
	}
	return nil
}

// ioUringDisabled is the sysctl that restricts io_uring (Linux 6.6+):
// 0 allowed, 1 only for members of kernel.io_uring_group, 2 disabled.
const ioUringDisabled = "/proc/sys/kernel/io_uring_disabled"

// setupReason turns a failed io_uring_setup into an error that says why.
func setupReason(err error) error {
	var why string
	switch {
	case errors.Is(err, unix.ENOSYS):
		why = "the kernel has no io_uring (before Linux 5.1, or built without CONFIG_IO_URING), or a seccomp filter hides it"
	case errors.Is(err, unix.EPERM):
		b, _ := os.ReadFile(ioUringDisabled)
		switch strings.TrimSpace(string(b)) {
		case "2":
			why = "kernel.io_uring_disabled = 2 disables it for every process"
		case "1":
			why = "kernel.io_uring_disabled = 1 allows it only to members of kernel.io_uring_group"
		default:
			why = "io_uring_setup was refused: a seccomp filter or security module forbids it"
		}
	case errors.Is(err, unix.EINVAL):
		why = "the kernel refuses every ring setup tried (too old)"
	default:
		return fmt.Errorf("io_uring: %w", err)
	}
	return fmt.Errorf("io_uring unavailable: %s (%v): %w", why, err, wait.ErrNotSupported)
}

// uringSupport is CheckPoller's answer for io_uring, probed once per process.
var uringSupport = sync.OnceValue(func() error {
	r, err := setupRing(false)
	if err != nil {
		return err
	}
	return r.Close()
})

func (p *uringPoller) start() error {
	if err := p.r.Enable(); err != nil {
		return fmt.Errorf("io_uring: %w", err)
	}
	p.started = true
	return nil
}

// sqe returns a free SQE, handing the queued ones to the kernel first when
// the queue is full; nil only when the kernel would not take them.
func (p *uringPoller) sqe() *unix.SQE {
	if sqe := p.r.GetSQE(); sqe != nil {
		return sqe
	}
	if p.started {
		p.enter(p.r.Flush(), 0, 0)
	}
	return p.r.GetSQE()
}

func (p *uringPoller) add(fd int, tok uint64) error {
	if _, ok := p.removing[tok]; ok { // its last completion would end the new poll's count
		return fmt.Errorf("io_uring: poll token %#x reused while its removal is in flight", tok)
	}
	sqe := p.sqe()
	if sqe == nil {
		return errors.New("io_uring: submission queue full")
	}
	mask := uint32(pollMask)
	if tok == 0 {
		mask = unix.POLLIN // the eventfd
	}
	unix.PrepPollMultishot(sqe, fd, mask, tok)
	p.armed[tok] = fd
	p.inflight++
	return nil
}

func (p *uringPoller) remove(_ int, tok uint64, _ bool) {
	// A closed conn's read, write and hang-up poll end now. Its fd stays
	// open until they have (pollDesc.kops), so one still waiting in the SQ
	// cannot name a new file that reuses the number.
	for _, ud := range [3]uint64{tok | udRead, tok | udWrite, tok | udHup} {
		if _, ok := p.ops[ud]; ok {
			p.cancel(ud)
		}
	}
	if _, ok := p.armed[tok]; !ok {
		return
	}
	delete(p.armed, tok)
	p.removing[tok] = struct{}{}
	p.cancel(tok)
	// The poll's last completion (-ECANCELED) ends its inflight count.
}

// cancel queues the cancellation of the request with user data tok (a
// poll, a read or write, the timeout). Without a free SQE the request
// stays in removing or ops, and the next failed cancellation or the
// quiesce tries again.
func (p *uringPoller) cancel(tok uint64) {
	if sqe := p.sqe(); sqe != nil {
		unix.PrepCancel(sqe, tok, udCancel)
		sqe.Flags = unix.IOSQE_CQE_SKIP_SUCCESS
	}
}

// cancelAgain queues a cancellation for every poll removed, and every
// read or write cancelled, that has not completed yet.
func (p *uringPoller) cancelAgain() {
	p.recancel = false
	for tok := range p.removing {
		p.cancel(tok)
	}
	for ud, io := range p.ops {
		if pd := io.op.pd; pd.gone() || (pd.closed() && !io.op.fromBuffer) { // a closing conn's buffer is still being sent
			p.cancel(ud)
		}
	}
}

// ioUserData is the user data of op's read, write or poll.
func ioUserData(op *ioOp) uint64 {
	switch {
	case op == &op.pd.hop:
		return op.pd.token() | udHup
	case op.write:
		return op.pd.token() | udWrite
	}
	return op.pd.token() | udRead
}

func (p *uringPoller) startIO(op *ioOp, b []byte) bool {
	sqe := p.sqe()
	if sqe == nil {
		return false
	}
	ud := ioUserData(op)
	switch {
	case op.poll != 0:
		unix.PrepPoll(sqe, op.pd.fd, op.poll, ud)
	case op.write:
		unix.PrepSend(sqe, op.pd.fd, b, ud)
	default:
		unix.PrepRecv(sqe, op.pd.fd, b, ud)
		// The conn's last RECV drained the socket (a short read): the
		// next request's bytes are not there yet, so the kernel's first
		// receive attempt would only fail and arm a poll. POLL_FIRST arms
		// the poll at once (and receives at once if the bytes did come).
		if p.pollFirst && !op.pd.unread {
			sqe.Ioprio = unix.IORING_RECVSEND_POLL_FIRST
			add(&p.s.ringPollFirst, 1)
		}
	}
	p.ops[ud] = inFlightIO{op: op, buf: b}
	p.inflight++
	op.pd.kops++
	return true
}

func (p *uringPoller) queueWrite(pd *pollDesc) {
	if !pd.wb.queued {
		pd.wb.queued = true
		p.flushq = append(p.flushq, pd)
	}
}

// prepWrites queues an inline SEND of each queued conn's buffer, unless
// the kernel still has one of its SENDs (whose end starts the next). It
// reports whether a task waits for an inline SEND not yet settled.
func (p *uringPoller) prepWrites() bool {
	for i, pd := range p.flushq {
		p.flushq[i] = nil
		pd.wb.queued = false
		if pd.gone() || pd.wb.inline || pd.wop.pending || len(pd.wb.buf) == 0 || pd.wb.err != nil {
			continue
		}
		sqe := p.sqe()
		if sqe == nil {
			pd.wb.err = errRingFull
			pd.wb.drop()
			continue
		}
		unix.PrepSendInline(sqe, pd.fd, pd.wb.buf, pd.token()|udInline)
		p.inline = append(p.inline, inlineSend{pd: pd, buf: pd.wb.buf, idx: p.r.SQIndex() - 1})
		pd.wb.inline = true
		pd.kops++
	}
	p.flushq = p.flushq[:0]
	for _, e := range p.inline { // also one an enter left in the SQ before
		if e.pd.wwait != nil || e.pd.cwait != nil {
			return true
		}
	}
	return false
}

// endInline ends the inline SENDs the kernel has consumed: those without a
// completion sent everything; a failed one sent its result's bytes, and
// the rest goes as an ordinary SEND (-EAGAIN: a full socket buffer) or is
// dropped with the error. It waits while completions overflowed (one of
// them may be a failure not reaped yet).
func (p *uringPoller) endInline() {
	if len(p.inline) == 0 || p.r.SQFlags()&unix.IORING_SQ_CQ_OVERFLOW != 0 {
		return
	}
	head := p.r.SQConsumed()
	k := 0
	for _, e := range p.inline {
		if int32(head-e.idx) <= 0 { // still in the SQ (an enter that submitted less)
			p.inline[k] = e
			k++
			continue
		}
		pd := e.pd
		pd.wb.inline = false
		pd.opEnded()
		if pd.gone() {
			continue
		}
		switch {
		case !e.failed:
			pd.wb.sent(len(e.buf))
			add(&p.s.ringInlineSends, 1)
		case e.res > 0:
			pd.wb.sent(int(e.res))
			p.sendAsync(pd)
		case e.res == -int32(unix.EAGAIN):
			p.sendAsync(pd)
		default:
			pd.sendFailed(e.res)
		}
		p.wakeWriters(pd)
	}
	clear(p.inline[k:])
	p.inline = p.inline[:k]
}

// sendAsync sends the rest of pd's buffer as an ordinary SEND, which waits
// for room in the socket buffer and completes (complete continues it).
func (p *uringPoller) sendAsync(pd *pollDesc) {
	if len(pd.wb.buf) == 0 {
		return
	}
	op := &pd.wop
	op.pd, op.write, op.poll, op.fromBuffer, op.done, op.pending = pd, true, 0, true, false, true
	if !p.startIO(op, pd.wb.buf) {
		op.pending = false
		pd.wb.err = errRingFull
		pd.wb.drop()
	}
}

// wakeWriters reports a change of pd's write-behind buffer when a task
// waits for one (a Write parked on the full buffer, a Close flushing).
func (p *uringPoller) wakeWriters(pd *pollDesc) {
	if pd.wwait != nil || pd.cwait != nil {
		pd.wop.pd, pd.wop.write = pd, true // the inline SEND did not use wop
		p.evs = append(p.evs, pollEvent{tok: pd.token() | udWrite, op: &pd.wop})
	}
}

func (p *uringPoller) cancelIO(op *ioOp) {
	if _, ok := p.ops[ioUserData(op)]; ok {
		p.cancel(ioUserData(op))
	}
}

func (p *uringPoller) wait(timeoutNs int64) int {
	p.evs = p.evs[:0]
	p.reap()
	if p.recancel {
		p.cancelAgain()
	}
	// An inline SEND posts nothing when it succeeds: a task parked until
	// one settles (a Write on a full buffer, a Close) must not sleep
	// through it, so the enter that submits it does not wait.
	awaited := p.prepWrites()
	toSubmit := p.r.Flush()
	if len(p.evs) > 0 || timeoutNs == 0 || awaited {
		if toSubmit > 0 || p.r.SQFlags()&(unix.IORING_SQ_TASKRUN|unix.IORING_SQ_CQ_OVERFLOW) != 0 {
			p.enter(toSubmit, 0, unix.IORING_ENTER_GETEVENTS)
			p.reap()
		}
		p.endInline()
		if len(p.evs) > 0 || timeoutNs == 0 {
			return len(p.evs)
		}
		toSubmit = p.r.Flush() // the rest of a SEND that found the socket full, say
	}
	minComplete := uint32(1)
	if timeoutNs > 0 {
		if !p.armTimer(timeoutNs) {
			minComplete = 0 // no SQE for the timeout: do not sleep without one
		}
		toSubmit = p.r.Flush()
	}
	p.enter(toSubmit, minComplete, unix.IORING_ENTER_GETEVENTS)
	p.reap()
	p.endInline()
	return len(p.evs)
}

// armTimer makes the timeout request complete timeoutNs from now, or
// earlier: it keeps the one in flight when its deadline is the same, or
// earlier and still at least timerKeepAhead away; it moves it otherwise,
// or queues a new one. It reports false when no SQE was free.
func (p *uringPoller) armTimer(timeoutNs int64) bool {
	now := wait.Now()
	deadline := now + timeoutNs
	if p.timerOn && p.timerAt <= deadline+timerSlack && (p.timerAt >= deadline-timerSlack || p.timerAt-now >= timerKeepAhead) {
		return true
	}
	sqe := p.sqe()
	if sqe == nil {
		return false
	}
	p.ts = unix.NsecToKernelTimespec(timeoutNs) // read by the kernel when it takes the SQE
	if p.timerOn {
		// If the timeout fired meanwhile, the update fails with -ENOENT
		// and that completion, like the timeout's own, ends the wait.
		unix.PrepTimeoutUpdate(sqe, udTimer, &p.ts, udCancel)
		sqe.Flags = unix.IOSQE_CQE_SKIP_SUCCESS
	} else {
		unix.PrepTimeout(sqe, &p.ts, udTimer)
		p.timerOn = true
		p.inflight++
	}
	p.timerAt = deadline
	return true
}

// enter calls io_uring_enter and counts it. Its errors need no handling:
// EINTR, EAGAIN and EBUSY leave the work to the next pass, and the rest
// cannot happen on a ring that was set up and enabled.
func (p *uringPoller) enter(toSubmit, minComplete, flags uint32) {
	n, _ := p.r.Enter(toSubmit, minComplete, flags)
	add(&p.s.ringEnters, 1)
	add(&p.s.ringSubmits, uint64(n))
}

// reap consumes every completion waiting in the ring.
func (p *uringPoller) reap() {
	n := p.r.CQReady()
	if n == 0 {
		return
	}
	for i := range n {
		cqe := p.r.CQE(i)
		p.complete(cqe.UserData, cqe.Res, cqe.Flags)
	}
	p.r.CQAdvance(n)
	p.s.ringCQEs.record(uint64(n))
}

// complete handles one completion.
func (p *uringPoller) complete(ud uint64, res int32, flags uint32) {
	switch {
	case ud == udTimer: // fired (-ETIME) or removed (-ECANCELED)
		p.timerOn = false
		p.inflight--
		return
	case ud == udCancel: // a cancellation or timer update that failed
		// -ENOENT: the target had completed. -EALREADY: it is completing
		// now and may stay armed (a multishot poll): try again.
		if res == -int32(unix.EALREADY) {
			p.recancel = true
		}
		return
	case ud&udInline != 0: // an inline SEND failed: endInline handles it
		for i := range p.inline {
			if e := &p.inline[i]; e.pd.token()|udInline == ud && !e.failed {
				e.failed, e.res = true, res
				break
			}
		}
		return
	case ud&(udRead|udWrite|udHup) != 0:
		io, ok := p.ops[ud]
		if !ok {
			return // cannot happen: every read and write is in ops until here
		}
		delete(p.ops, ud)
		p.inflight--
		op, pd := io.op, io.op.pd
		pd.opEnded()
		if !op.fromBuffer {
			op.res, op.done = res, true
			p.evs = append(p.evs, pollEvent{tok: ud, op: op})
			return
		}
		// A SEND of the write-behind buffer: go on with the rest.
		op.pending = false
		if pd.gone() {
			return
		}
		if res > 0 {
			pd.wb.sent(int(res))
			p.sendAsync(pd)
		} else {
			pd.sendFailed(res)
		}
		p.wakeWriters(pd)
		return
	}
	if res >= 0 { // poll(2) and epoll bits are the same numbers
		p.evs = append(p.evs, pollEvent{tok: ud, ev: uint32(res)})
	}
	if flags&unix.IORING_CQE_F_MORE != 0 {
		return
	}
	p.inflight--
	fd, ok := p.armed[ud]
	if !ok {
		delete(p.removing, ud) // removed: this is its last completion
		return
	}
	// The poll ended by itself (an error, or a completion queue that
	// overflowed): arm it again and report both directions, in case an
	// edge was lost meanwhile (a spurious wake-up costs a retried read).
	delete(p.armed, ud)
	if res < 0 {
		p.evs = append(p.evs, pollEvent{tok: ud, ev: unix.EPOLLIN | unix.EPOLLOUT})
	}
	p.rearms++
	p.add(fd, ud) // on failure the fd stays without a poll until it is closed
}

func (p *uringPoller) doesIO() bool { return p.rw }

// woken needs nothing: the eventfd is never drained. io_uring's multishot
// poll posts a completion for every write to it, whatever the counter, so
// the read that resets it would be a system call per wake-up for nothing.
// The counter, one per wake-up, cannot reach its 2^64-2 limit.
func (p *uringPoller) woken() {}

func (p *uringPoller) event(i int) (uint64, uint32, *ioOp) {
	ev := &p.evs[i]
	return ev.tok, ev.ev, ev.op
}

// quiesce cancels every request still armed (the eventfd's poll, the
// timeout, polls of fds not closed through their conns) and reaps until
// nothing is in flight, so that close never unmaps a ring the kernel
// still completes into.
func (p *uringPoller) quiesce() {
	if !p.started {
		return
	}
	for tok, fd := range p.armed {
		p.remove(fd, tok, true)
	}
	for ud := range p.ops { // reads and writes of tasks stopped while they waited, SENDs of buffers
		p.cancel(ud)
	}
	if p.timerOn {
		p.cancel(udTimer)
	}
	end := time.Now().Add(quiesceLimit)
	for {
		p.evs = p.evs[:0]
		p.enter(p.r.Flush(), 0, unix.IORING_ENTER_GETEVENTS)
		p.reap()
		p.endInline()
		if (p.inflight <= 0 && len(p.inline) == 0) || time.Now().After(end) {
			return
		}
		time.Sleep(10 * time.Microsecond) // cancellations finish as task work: let it run
	}
}

// close unmaps the ring. Closing it ends every request the kernel still
// had (only after a quiesce that ran out of time), so the fds that waited
// for those are closed too.
func (p *uringPoller) fd() int { return p.r.FD() }

// armTimeout queues the ring's timeout request (armTimer, which may keep an
// earlier one): its completion makes the ring readable, and the next
// wait(0) submits it.
func (p *uringPoller) armTimeout(_, left int64) bool { return p.armTimer(left) }

// timeoutArmed reports whether the timeout request is in flight: its
// completion is no event (complete, udTimer).
func (p *uringPoller) timeoutArmed() bool { return p.timerOn }

func (p *uringPoller) close() {
	p.r.Close()
	for _, io := range p.ops {
		io.op.pd.kops = 1
		io.op.pd.opEnded()
	}
	for _, e := range p.inline {
		e.pd.kops = 1
		e.pd.opEnded()
	}
}
