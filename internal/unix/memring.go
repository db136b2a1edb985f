package unix

import (
	"sync/atomic"
	"unsafe"
)

// A ring over Go memory, with the test playing the kernel: the ring
// bookkeeping (head and tail wrap-around, a full submission queue, a full
// completion queue) and the code that drives a Ring are tested without
// io_uring, and in states a real kernel reaches only rarely.

// memRingLayout places the fields of both rings in one buffer, as the
// kernel's single mapping does: the SQ words, the SQ array, then the CQ
// words and the CQEs (16-byte aligned).
const (
	memSQHead = 4 * iota
	memSQTail
	memSQMask
	memSQEntries
	memSQFlags
	memCQHead
	memCQTail
	memCQMask
	memCQEntries
	memSQArray = 64
)

// NewMemRing returns a ring of sqEntries submission and cqEntries
// completion entries (powers of two) over Go memory, whose head and tail
// counters all start at start (to test wrap-around), and whose Enter calls
// enter: the test's stand-in for the kernel, which takes SQEs with
// KernelTakeSQEs and posts completions with KernelPostCQE.
func NewMemRing(sqEntries, cqEntries, start uint32, enter func(r *Ring, toSubmit, minComplete, flags uint32) (int, error)) *Ring {
	cqOff := (memSQArray + 4*sqEntries + 15) &^ 15
	mem := make([]byte, cqOff+16*cqEntries)
	p := URingParams{SQEntries: sqEntries, CQEntries: cqEntries, Features: IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP}
	p.SQOff = SQRingOffsets{Head: memSQHead, Tail: memSQTail, RingMask: memSQMask, RingEntries: memSQEntries, Flags: memSQFlags, Array: memSQArray}
	p.CQOff = CQRingOffsets{Head: memCQHead, Tail: memCQTail, RingMask: memCQMask, RingEntries: memCQEntries, CQEs: cqOff}
	put := func(off, v uint32) { *(*uint32)(unsafe.Pointer(&mem[off])) = v }
	put(memSQHead, start)
	put(memSQTail, start)
	put(memCQHead, start)
	put(memCQTail, start)
	put(memSQMask, sqEntries-1)
	put(memSQEntries, sqEntries)
	put(memCQMask, cqEntries-1)
	put(memCQEntries, cqEntries)
	r := newRing(&p, mem, make([]byte, int(sqEntries)*int(unsafe.Sizeof(SQE{}))))
	r.kernel = enter
	return r
}

// KernelTakeSQEs plays the kernel's side of a submission: it consumes up
// to n published SQEs (through the SQ array, as the kernel does) and
// returns copies of them.
func (r *Ring) KernelTakeSQEs(n uint32) []SQE {
	head := atomic.LoadUint32(r.sqHead)
	tail := atomic.LoadUint32(r.sqTail)
	array := unsafe.Slice((*uint32)(unsafe.Pointer(&r.mem[memSQArray])), r.sqEntries)
	var out []SQE
	for ; head != tail && uint32(len(out)) < n; head++ {
		out = append(out, r.sqes[array[head&r.sqMask]])
	}
	atomic.StoreUint32(r.sqHead, head)
	return out
}

// KernelPostCQE plays the kernel posting a completion; it reports false
// when the completion queue is full (where the kernel would overflow).
func (r *Ring) KernelPostCQE(c CQE) bool {
	tail := atomic.LoadUint32(r.cqTail)
	if tail-atomic.LoadUint32(r.cqHead) >= uint32(len(r.cqes)) {
		return false
	}
	r.cqes[tail&r.cqMask] = c
	atomic.StoreUint32(r.cqTail, tail+1)
	return true
}

// KernelSetSQFlags plays the kernel setting the submission ring's flag
// word (IORING_SQ_TASKRUN, IORING_SQ_CQ_OVERFLOW).
func (r *Ring) KernelSetSQFlags(f uint32) { atomic.StoreUint32(r.sqFlags, f) }
