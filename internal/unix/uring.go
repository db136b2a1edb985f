package unix

import (
	"os"
	"sync/atomic"
	"unsafe"

	xunix "golang.org/x/sys/unix"
)

// io_uring, written here because golang.org/x/sys/unix has the system call
// numbers but none of the structures. The layouts below are the kernel's
// UAPI (include/uapi/linux/io_uring.h); uring_test.go asserts their sizes
// and field offsets.
//
// Memory ordering. The submission and completion queues are single-producer
// single-consumer rings shared with the kernel. For the submission queue
// the process is the producer: it fills an SQE, then publishes it by
// storing the ring's tail; the kernel loads the tail with acquire ordering
// and stores the head with release ordering when it has consumed entries.
// For the completion queue the kernel is the producer: it writes a CQE and
// stores the tail with release ordering; the process loads the tail (with
// acquire ordering), reads the CQEs, then stores the head (with release
// ordering) to hand the slots back. liburing uses exactly these acquire
// loads and release stores. Go's sync/atomic loads and stores are
// sequentially consistent, which is at least as strong, so every head and
// tail shared with the kernel is read with atomic.LoadUint32 and written
// with atomic.StoreUint32, and nothing else touches them.

// SQE is a submission queue entry (struct io_uring_sqe, 64 bytes).
type SQE struct {
	Opcode      uint8
	Flags       uint8
	Ioprio      uint16
	Fd          int32
	Off         uint64 // offset, or addr2
	Addr        uint64
	Len         uint32
	OpFlags     uint32 // poll32_events, timeout_flags, cancel_flags, ...
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	SpliceFdIn  int32
	Addr3       uint64
	_           uint64
}

// CQE is a completion queue entry (struct io_uring_cqe, 16 bytes).
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// URingParams is struct io_uring_params (120 bytes): the setup request and
// the kernel's answer (granted sizes, features, ring offsets).
type URingParams struct {
	SQEntries    uint32
	CQEntries    uint32
	Flags        uint32
	SQThreadCPU  uint32
	SQThreadIdle uint32
	Features     uint32
	WQFd         uint32
	_            [3]uint32
	SQOff        SQRingOffsets
	CQOff        CQRingOffsets
}

// SQRingOffsets is struct io_sqring_offsets: where each submission-ring
// field lies in the ring mapping.
type SQRingOffsets struct {
	Head, Tail, RingMask, RingEntries, Flags, Dropped, Array, _ uint32
	UserAddr                                                    uint64
}

// CQRingOffsets is struct io_cqring_offsets: where each completion-ring
// field lies in the ring mapping.
type CQRingOffsets struct {
	Head, Tail, RingMask, RingEntries, Overflow, CQEs, Flags, _ uint32
	UserAddr                                                    uint64
}

// KernelTimespec is struct __kernel_timespec, which timeout SQEs point to.
type KernelTimespec struct {
	Sec, Nsec int64
}

// Opcodes (enum io_uring_op) spindle uses.
const (
	IORING_OP_NOP            = 0
	IORING_OP_POLL_ADD       = 6
	IORING_OP_TIMEOUT        = 11
	IORING_OP_TIMEOUT_REMOVE = 12
	IORING_OP_ASYNC_CANCEL   = 14
	IORING_OP_SEND           = 26
	IORING_OP_RECV           = 27
)

// Setup flags (io_uring_params.flags).
const (
	IORING_SETUP_CQSIZE        = 1 << 3
	IORING_SETUP_CLAMP         = 1 << 4
	IORING_SETUP_R_DISABLED    = 1 << 6
	IORING_SETUP_SUBMIT_ALL    = 1 << 7
	IORING_SETUP_COOP_TASKRUN  = 1 << 8
	IORING_SETUP_TASKRUN_FLAG  = 1 << 9
	IORING_SETUP_SINGLE_ISSUER = 1 << 12
	IORING_SETUP_DEFER_TASKRUN = 1 << 13
)

// Features the kernel reports (io_uring_params.features).
const (
	IORING_FEAT_SINGLE_MMAP = 1 << 0
	IORING_FEAT_NODROP      = 1 << 1
	IORING_FEAT_EXT_ARG     = 1 << 8
	IORING_FEAT_RSRC_TAGS   = 1 << 10 // Linux 5.13, the release that added multishot poll
	IORING_FEAT_CQE_SKIP    = 1 << 11 // IOSQE_CQE_SKIP_SUCCESS works (Linux 5.17)
	// IORING_FEAT_REG_REG_RING (Linux 6.3) has no use here but dates the
	// kernel: one that reports it also takes IORING_RECVSEND_POLL_FIRST
	// (5.19), which no feature bit announces (older kernels may fail such a
	// RECV with -EINVAL).
	IORING_FEAT_REG_REG_RING = 1 << 13
)

// IORING_RECVSEND_POLL_FIRST, in SQE.Ioprio of a RECV or SEND, tells the
// kernel the socket is most likely not ready: it arms its internal poll at
// once instead of first trying the transfer (a receive that would only
// find the socket empty), and transfers when the socket becomes ready.
const IORING_RECVSEND_POLL_FIRST = 1 << 0

// SQE flags.
const IOSQE_CQE_SKIP_SUCCESS = 1 << 6 // post a completion only when the request fails

// io_uring_enter flags.
const IORING_ENTER_GETEVENTS = 1 << 0

// Submission ring flags (the word at SQOff.Flags).
const (
	IORING_SQ_CQ_OVERFLOW = 1 << 1 // completions wait in the kernel's overflow list
	IORING_SQ_TASKRUN     = 1 << 2 // completions wait as task work: enter with GETEVENTS
)

// CQE flags.
const IORING_CQE_F_MORE = 1 << 1 // a multishot request stays armed

// Operation flags.
const (
	IORING_POLL_ADD_MULTI = 1 << 0 // in SQE.Len of a POLL_ADD: multishot
	IORING_TIMEOUT_UPDATE = 1 << 1 // in SQE.OpFlags of a TIMEOUT_REMOVE: change the timeout instead
)

// io_uring_register opcodes.
const IORING_REGISTER_ENABLE_RINGS = 12

// mmap offsets of the rings and the SQE array.
const (
	ioringOffSQRing = 0
	ioringOffSQEs   = 0x10000000
)

// Poll event bits for POLL_ADD (the poll(2) values, as for epoll).
const (
	POLLIN    = xunix.POLLIN
	POLLOUT   = xunix.POLLOUT
	POLLERR   = xunix.POLLERR
	POLLHUP   = xunix.POLLHUP
	POLLRDHUP = xunix.POLLRDHUP
)

// Errno values io_uring completions carry (as negative Res).
const (
	ECANCELED = xunix.ECANCELED
	ETIME     = xunix.ETIME
	ENOENT    = xunix.ENOENT
	EALREADY  = xunix.EALREADY
	EPERM     = xunix.EPERM
	EBUSY     = xunix.EBUSY
)

// Ring is an io_uring instance mapped into the process: its submission and
// completion queues. It is not safe for concurrent use; one goroutine (the
// carrier's) owns it.
type Ring struct {
	fd       int
	Flags    uint32 // setup flags the ring has
	Features uint32 // IORING_FEAT_* the kernel reported

	mem, sqeMem []byte // the mappings (nil for a ring over Go memory)

	sqHead, sqTail, sqFlags *uint32
	sqMask, sqEntries       uint32
	sqes                    []SQE
	sqLocal                 uint32 // tail including SQEs not yet published

	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []CQE

	kernel func(r *Ring, toSubmit, minComplete, flags uint32) (int, error) // MemRing's stand-in for io_uring_enter
}

// URingSetup creates a ring with at least entries submission entries (a
// power of two), cqEntries completion entries (0: the kernel's default of
// twice entries) and the given setup flags, and maps it. It requires
// IORING_FEAT_SINGLE_MMAP (Linux 5.4).
func URingSetup(entries, cqEntries, flags uint32) (*Ring, error) {
	p := URingParams{Flags: flags}
	if cqEntries > 0 {
		p.Flags |= IORING_SETUP_CQSIZE
		p.CQEntries = cqEntries
	}
	fd, _, e := xunix.Syscall(xunix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, wrap("io_uring_setup", e)
	}
	r, err := mapRing(int(fd), &p)
	if err != nil {
		xunix.Close(int(fd))
		return nil, err
	}
	return r, nil
}

// mapRing maps the rings of a ring fd the kernel just set up.
// FD returns the ring's file descriptor (-1 for a ring over Go memory):
// it polls readable while completions wait in the ring.
func (r *Ring) FD() int { return r.fd }

func mapRing(fd int, p *URingParams) (*Ring, error) {
	if p.Features&IORING_FEAT_SINGLE_MMAP == 0 {
		return nil, os.NewSyscallError("io_uring_setup", xunix.EOPNOTSUPP)
	}
	size := max(p.SQOff.Array+p.SQEntries*4, p.CQOff.CQEs+p.CQEntries*uint32(unsafe.Sizeof(CQE{})))
	mem, err := xunix.Mmap(fd, ioringOffSQRing, int(size), xunix.PROT_READ|xunix.PROT_WRITE, xunix.MAP_SHARED|xunix.MAP_POPULATE)
	if err != nil {
		return nil, wrap("mmap", err)
	}
	sqeMem, err := xunix.Mmap(fd, ioringOffSQEs, int(p.SQEntries)*int(unsafe.Sizeof(SQE{})), xunix.PROT_READ|xunix.PROT_WRITE, xunix.MAP_SHARED|xunix.MAP_POPULATE)
	if err != nil {
		xunix.Munmap(mem)
		return nil, wrap("mmap", err)
	}
	r := newRing(p, mem, sqeMem)
	r.fd = fd
	return r, nil
}

// newRing builds the ring's views over its memory: mem holds both rings
// (at p's offsets), sqeMem the SQE array. Tests pass Go memory and play
// the kernel's part.
func newRing(p *URingParams, mem, sqeMem []byte) *Ring {
	u32 := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r := &Ring{
		fd: -1, Flags: p.Flags, Features: p.Features, mem: mem, sqeMem: sqeMem,
		sqHead: u32(p.SQOff.Head), sqTail: u32(p.SQOff.Tail), sqFlags: u32(p.SQOff.Flags),
		sqMask: *u32(p.SQOff.RingMask), sqEntries: *u32(p.SQOff.RingEntries),
		cqHead: u32(p.CQOff.Head), cqTail: u32(p.CQOff.Tail), cqMask: *u32(p.CQOff.RingMask),
	}
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&sqeMem[0])), r.sqEntries)
	r.cqes = unsafe.Slice((*CQE)(unsafe.Pointer(&mem[p.CQOff.CQEs])), *u32(p.CQOff.RingEntries))
	// The SQ array maps ring slots to SQE indices; spindle fills SQE i
	// for slot i, so the mapping is the identity, written once.
	array := unsafe.Slice((*uint32)(unsafe.Pointer(&mem[p.SQOff.Array])), r.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.sqLocal = atomic.LoadUint32(r.sqTail)
	return r
}

// Fd returns the ring's file descriptor.
func (r *Ring) Fd() int { return r.fd }

// SQEntries returns the number of submission entries.
func (r *Ring) SQEntries() uint32 { return r.sqEntries }

// GetSQE returns the next free submission entry, zeroed, or nil when the
// queue is full (submit first). The entry is published by Flush.
func (r *Ring) GetSQE() *SQE {
	if r.sqLocal-atomic.LoadUint32(r.sqHead) >= r.sqEntries {
		return nil
	}
	sqe := &r.sqes[r.sqLocal&r.sqMask]
	*sqe = SQE{}
	r.sqLocal++
	return sqe
}

// Flush publishes the entries GetSQE handed out and returns how many the
// kernel has not consumed yet: the to_submit of the next Enter.
func (r *Ring) Flush() uint32 {
	if atomic.LoadUint32(r.sqTail) != r.sqLocal {
		atomic.StoreUint32(r.sqTail, r.sqLocal) // release: the SQEs are written
	}
	return r.sqLocal - atomic.LoadUint32(r.sqHead)
}

// SQFlags returns the submission ring's flag word (IORING_SQ_*).
func (r *Ring) SQFlags() uint32 { return atomic.LoadUint32(r.sqFlags) }

// CQReady returns how many completions wait in the completion queue.
func (r *Ring) CQReady() uint32 { return atomic.LoadUint32(r.cqTail) - atomic.LoadUint32(r.cqHead) }

// CQE returns the i-th waiting completion (i < CQReady()).
func (r *Ring) CQE(i uint32) *CQE {
	return &r.cqes[(atomic.LoadUint32(r.cqHead)+i)&r.cqMask]
}

// CQAdvance hands n consumed completions back to the kernel.
func (r *Ring) CQAdvance(n uint32) {
	atomic.StoreUint32(r.cqHead, atomic.LoadUint32(r.cqHead)+n) // release: the CQEs are read
}

// Enter submits toSubmit entries and, with IORING_ENTER_GETEVENTS, waits
// for minComplete completions. It returns the number of entries submitted.
// EINTR comes back unwrapped (the caller simply goes on), as do EAGAIN and
// EBUSY (the kernel is short of resources or completions are backed up:
// reap and retry); other errors are wrapped.
func (r *Ring) Enter(toSubmit, minComplete, flags uint32) (int, error) {
	if r.kernel != nil {
		return r.kernel(r, toSubmit, minComplete, flags)
	}
	var n uintptr
	var e xunix.Errno
	if minComplete == 0 { // cannot block: skip the scheduler's hooks
		n, _, e = xunix.RawSyscall6(xunix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), 0, uintptr(flags), 0, 0)
	} else {
		n, _, e = xunix.Syscall6(xunix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), 0, 0)
	}
	switch e {
	case 0:
		return int(n), nil
	case xunix.EINTR, xunix.EAGAIN, xunix.EBUSY:
		return 0, e
	}
	return 0, wrap("io_uring_enter", e)
}

// Enable starts a ring set up with IORING_SETUP_R_DISABLED. With
// IORING_SETUP_SINGLE_ISSUER the calling thread becomes the only one
// allowed to submit.
func (r *Ring) Enable() error {
	if r.kernel != nil {
		return nil
	}
	_, _, e := xunix.Syscall6(xunix.SYS_IO_URING_REGISTER, uintptr(r.fd), IORING_REGISTER_ENABLE_RINGS, 0, 0, 0, 0)
	if e != 0 {
		return wrap("io_uring_register", e)
	}
	return nil
}

// Close unmaps the rings and closes the ring's fd. The caller reaps every
// completion it expects first: the kernel cancels what is still in flight
// when the fd closes, but the process no longer sees those completions.
func (r *Ring) Close() error {
	var err error
	if r.sqeMem != nil && r.fd >= 0 {
		err = wrap("munmap", xunix.Munmap(r.sqeMem))
		if e := wrap("munmap", xunix.Munmap(r.mem)); err == nil {
			err = e
		}
	}
	r.mem, r.sqeMem, r.sqes, r.cqes = nil, nil, nil, nil
	if r.fd >= 0 {
		if e := Close(r.fd); err == nil {
			err = e
		}
		r.fd = -1
	}
	return err
}

// prep sets the fields every request has.
func (sqe *SQE) prep(op uint8, fd int, addr, userData uint64) {
	sqe.Opcode, sqe.Fd, sqe.Addr, sqe.UserData = op, int32(fd), addr, userData
}

// PrepPollMultishot makes sqe a multishot POLL_ADD on fd for events
// (POLL* bits; edge-triggered, as with EPOLLET): a completion with the
// ready events each time fd becomes ready, flagged IORING_CQE_F_MORE while
// the poll stays armed.
func PrepPollMultishot(sqe *SQE, fd int, events uint32, userData uint64) {
	sqe.prep(IORING_OP_POLL_ADD, fd, 0, userData)
	sqe.Len = IORING_POLL_ADD_MULTI
	sqe.OpFlags = events
}

// PrepPoll makes sqe a one-shot POLL_ADD on fd for events (POLL* bits;
// errors and hang-ups are always reported): one completion with the ready
// events once fd is ready (at once if it is), or -errno (-ECANCELED when
// cancelled).
func PrepPoll(sqe *SQE, fd int, events uint32, userData uint64) {
	sqe.prep(IORING_OP_POLL_ADD, fd, 0, userData)
	sqe.OpFlags = events
}

// PrepCancel makes sqe cancel the request whose user data is target
// (ASYNC_CANCEL): a poll or a timeout. Unlike POLL_REMOVE, which fails
// with -EALREADY when the poll is being completed at that moment, it also
// cancels a poll caught in the middle of posting an event.
func PrepCancel(sqe *SQE, target, userData uint64) {
	sqe.prep(IORING_OP_ASYNC_CANCEL, -1, target, userData)
}

// PrepTimeout makes sqe a timeout that completes with -ETIME after ts
// (relative, CLOCK_MONOTONIC). ts must stay valid until the SQE is
// submitted.
func PrepTimeout(sqe *SQE, ts *KernelTimespec, userData uint64) {
	sqe.prep(IORING_OP_TIMEOUT, -1, uint64(uintptr(unsafe.Pointer(ts))), userData)
	sqe.Len = 1 // one timespec
}

// PrepTimeoutUpdate makes sqe move the pending timeout whose user data is
// target to ts from now (Linux 5.11). It completes with -ENOENT when that
// timeout has already fired. ts must stay valid until the SQE is submitted.
func PrepTimeoutUpdate(sqe *SQE, target uint64, ts *KernelTimespec, userData uint64) {
	sqe.prep(IORING_OP_TIMEOUT_REMOVE, -1, target, userData)
	sqe.Off = uint64(uintptr(unsafe.Pointer(ts)))
	sqe.OpFlags = IORING_TIMEOUT_UPDATE
}

// PrepRecv makes sqe receive into p from the socket fd (recv(2)): it
// completes with the bytes read, 0 at the end of the stream, or -errno.
// The kernel writes into p until the completion is reaped: the caller keeps
// p alive and untouched until then.
func PrepRecv(sqe *SQE, fd int, p []byte, userData uint64) {
	sqe.prep(IORING_OP_RECV, fd, uint64(uintptr(unsafe.Pointer(unsafe.SliceData(p)))), userData)
	sqe.Len = uint32(len(p))
}

// PrepSend makes sqe send p on the socket fd (send(2) with MSG_NOSIGNAL:
// a reset peer is -EPIPE, not SIGPIPE): it completes with the bytes sent
// (possibly fewer than len(p)) or -errno. The kernel reads p until the
// completion is reaped.
func PrepSend(sqe *SQE, fd int, p []byte, userData uint64) {
	sqe.prep(IORING_OP_SEND, fd, uint64(uintptr(unsafe.Pointer(unsafe.SliceData(p)))), userData)
	sqe.Len = uint32(len(p))
	sqe.OpFlags = xunix.MSG_NOSIGNAL
}

// PrepSendInline makes sqe send all of p on the socket fd now, during the
// io_uring_enter that submits it, or fail: MSG_DONTWAIT makes a send that
// would block fail with -EAGAIN instead of waiting for buffer space
// (io_uring then neither arms a poll nor hands it to a worker), and
// MSG_WAITALL makes a short send a failure. With IOSQE_CQE_SKIP_SUCCESS a
// send that took every byte posts no completion; one that failed posts
// its CQE before the enter returns, with the bytes sent before the
// failure (when any) or -errno. So once the enter that consumed the SQE
// has returned and its completions are reaped, the kernel is done with p:
// sent whole, unless a completion says otherwise.
func PrepSendInline(sqe *SQE, fd int, p []byte, userData uint64) {
	PrepSend(sqe, fd, p, userData)
	sqe.OpFlags = xunix.MSG_NOSIGNAL | xunix.MSG_DONTWAIT | xunix.MSG_WAITALL
	sqe.Flags = IOSQE_CQE_SKIP_SUCCESS
}

// SQConsumed returns the submission ring's head: how many SQEs the kernel
// has consumed, as a counter that wraps at 2^32. An SQE handed out when
// the counter read k (SQIndex) has been consumed once
// SQConsumed()-k-1 < 2^31.
func (r *Ring) SQConsumed() uint32 { return atomic.LoadUint32(r.sqHead) }

// SQIndex returns the counter value of the next SQE GetSQE hands out.
func (r *Ring) SQIndex() uint32 { return r.sqLocal }

// NsecToKernelTimespec converts a duration in ns.
func NsecToKernelTimespec(ns int64) KernelTimespec {
	return KernelTimespec{Sec: ns / 1e9, Nsec: ns % 1e9}
}
