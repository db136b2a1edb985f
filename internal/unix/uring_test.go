package unix

import (
	"errors"
	"testing"
	"unsafe"

	xunix "golang.org/x/sys/unix"
)

// The ABI structures must match the kernel's UAPI byte for byte.
func TestURingABI(t *testing.T) {
	tests := []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof io_uring_sqe", unsafe.Sizeof(SQE{}), 64},
		{"sizeof io_uring_cqe", unsafe.Sizeof(CQE{}), 16},
		{"sizeof io_uring_params", unsafe.Sizeof(URingParams{}), 120},
		{"sizeof io_sqring_offsets", unsafe.Sizeof(SQRingOffsets{}), 40},
		{"sizeof io_cqring_offsets", unsafe.Sizeof(CQRingOffsets{}), 40},
		{"sizeof __kernel_timespec", unsafe.Sizeof(KernelTimespec{}), 16},
		{"sqe.fd", unsafe.Offsetof(SQE{}.Fd), 4},
		{"sqe.off", unsafe.Offsetof(SQE{}.Off), 8},
		{"sqe.addr", unsafe.Offsetof(SQE{}.Addr), 16},
		{"sqe.len", unsafe.Offsetof(SQE{}.Len), 24},
		{"sqe.poll32_events", unsafe.Offsetof(SQE{}.OpFlags), 28},
		{"sqe.user_data", unsafe.Offsetof(SQE{}.UserData), 32},
		{"sqe.buf_index", unsafe.Offsetof(SQE{}.BufIndex), 40},
		{"sqe.addr3", unsafe.Offsetof(SQE{}.Addr3), 48},
		{"cqe.res", unsafe.Offsetof(CQE{}.Res), 8},
		{"cqe.flags", unsafe.Offsetof(CQE{}.Flags), 12},
		{"params.features", unsafe.Offsetof(URingParams{}.Features), 20},
		{"params.sq_off", unsafe.Offsetof(URingParams{}.SQOff), 40},
		{"params.cq_off", unsafe.Offsetof(URingParams{}.CQOff), 80},
		{"sq_off.array", unsafe.Offsetof(SQRingOffsets{}.Array), 24},
		{"sq_off.user_addr", unsafe.Offsetof(SQRingOffsets{}.UserAddr), 32},
		{"cq_off.cqes", unsafe.Offsetof(CQRingOffsets{}.CQEs), 20},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// take is a stand-in kernel that consumes every SQE submitted and
// completes each with its user data and result 0.
func take(r *Ring, toSubmit, _, _ uint32) (int, error) {
	sqes := r.KernelTakeSQEs(toSubmit)
	for _, s := range sqes {
		r.KernelPostCQE(CQE{UserData: s.UserData})
	}
	return len(sqes), nil
}

// The ring's counters wrap at 2^32; submissions and completions go on
// across the wrap, a full SQ refuses entries until the kernel consumes
// some, and a full CQ refuses completions until the process consumes some.
func TestMemRingBookkeeping(t *testing.T) {
	for _, start := range []uint32{0, 1<<32 - 3} {
		r := NewMemRing(4, 8, start, take)
		next := uint64(1)
		for round := 0; round < 5; round++ {
			for i := 0; i < 4; i++ {
				sqe := r.GetSQE()
				if sqe == nil {
					t.Fatalf("start %#x round %d: GetSQE %d = nil with %d free", start, round, i, 4-i)
				}
				sqe.UserData = next
				next++
			}
			if r.GetSQE() != nil {
				t.Fatalf("start %#x round %d: GetSQE on a full queue returned an entry", start, round)
			}
			if n := r.Flush(); n != 4 {
				t.Fatalf("start %#x round %d: Flush = %d, want 4", start, round, n)
			}
			if n, err := r.Enter(4, 0, IORING_ENTER_GETEVENTS); n != 4 || err != nil {
				t.Fatalf("Enter = %d, %v", n, err)
			}
			if n := r.Flush(); n != 0 {
				t.Fatalf("Flush after the kernel took everything = %d", n)
			}
			if got := r.CQReady(); got != 4 {
				t.Fatalf("start %#x round %d: CQReady = %d, want 4", start, round, got)
			}
			for i := uint32(0); i < 4; i++ {
				if want := next - 4 + uint64(i); r.CQE(i).UserData != want {
					t.Fatalf("start %#x round %d: CQE %d has user data %d, want %d", start, round, i, r.CQE(i).UserData, want)
				}
			}
			r.CQAdvance(4)
			if r.CQReady() != 0 {
				t.Fatalf("CQReady after CQAdvance = %d", r.CQReady())
			}
		}
		for i := 0; i < 8; i++ {
			if !r.KernelPostCQE(CQE{UserData: uint64(i)}) {
				t.Fatalf("completion %d refused with room for %d", i, 8-i)
			}
		}
		if r.KernelPostCQE(CQE{}) {
			t.Fatal("a full completion queue took another entry")
		}
		r.CQAdvance(1)
		if !r.KernelPostCQE(CQE{UserData: 99}) || r.CQE(7).UserData != 99 {
			t.Fatal("a slot handed back was not reused")
		}
	}
}

// The real kernel: set up a ring, submit a NOP, reap its completion, unmap.
func TestURingNop(t *testing.T) {
	r, err := URingSetup(8, 0, IORING_SETUP_CLAMP)
	if errors.Is(err, ENOSYS) || errors.Is(err, EPERM) {
		t.Skipf("io_uring not available here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sqe := r.GetSQE()
	sqe.prep(IORING_OP_NOP, -1, 0, 42)
	n, err := r.Enter(r.Flush(), 1, IORING_ENTER_GETEVENTS)
	if n != 1 || err != nil {
		t.Fatalf("Enter = %d, %v", n, err)
	}
	if r.CQReady() != 1 || r.CQE(0).UserData != 42 || r.CQE(0).Res != 0 {
		t.Fatalf("completion: ready %d, %+v", r.CQReady(), *r.CQE(0))
	}
	r.CQAdvance(1)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// A SEND made with PrepSendInline completes during the enter that submits
// it: a send with room posts no completion and the bytes are there at
// once; a send into a full buffer fails at once (nothing waits) with the
// bytes it placed, or -EAGAIN when it placed none.
func TestSendInline(t *testing.T) {
	r, err := URingSetup(8, 0, IORING_SETUP_CLAMP|IORING_SETUP_SINGLE_ISSUER|IORING_SETUP_DEFER_TASKRUN)
	if err != nil {
		t.Skipf("io_uring not available here: %v", err)
	}
	defer r.Close()
	fds, err := xunix.Socketpair(xunix.AF_UNIX, xunix.SOCK_STREAM|xunix.SOCK_NONBLOCK|xunix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer xunix.Close(fds[0])
	defer xunix.Close(fds[1])
	xunix.SetsockoptInt(fds[0], xunix.SOL_SOCKET, xunix.SO_SNDBUF, 4096)

	submit := func(p []byte) (consumed bool, cqes []CQE) {
		idx := r.SQIndex()
		PrepSendInline(r.GetSQE(), fds[0], p, 7)
		if _, err := r.Enter(r.Flush(), 0, 0); err != nil {
			t.Fatal(err)
		}
		for n := r.CQReady(); n > 0; n-- {
			cqes = append(cqes, *r.CQE(0))
			r.CQAdvance(1)
		}
		return r.SQConsumed()-idx-1 < 1<<31, cqes
	}
	small := []byte("hello")
	consumed, cqes := submit(small)
	if !consumed || len(cqes) != 0 {
		t.Fatalf("small send: consumed %v, completions %+v; want consumed and none", consumed, cqes)
	}
	got := make([]byte, 16)
	if n, err := xunix.Read(fds[1], got); err != nil || string(got[:n]) != "hello" {
		t.Fatalf("peer read %q, %v", got[:n], err)
	}
	big := make([]byte, 1<<20)
	consumed, cqes = submit(big)
	if !consumed || len(cqes) != 1 || cqes[0].UserData != 7 {
		t.Fatalf("big send: consumed %v, completions %+v; want one", consumed, cqes)
	}
	if res := cqes[0].Res; res <= 0 || res >= int32(len(big)) {
		t.Fatalf("big send completed with %d, want the partial count (0 < n < %d)", res, len(big))
	}
	consumed, cqes = submit(small)
	if !consumed || len(cqes) != 1 || cqes[0].Res != -int32(EAGAIN) {
		t.Fatalf("send into a full buffer: consumed %v, completions %+v; want -EAGAIN", consumed, cqes)
	}
}
