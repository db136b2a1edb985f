package unix

import (
	"runtime"
	"testing"

	xunix "golang.org/x/sys/unix"
)

// benchPair returns a connected pair of non-blocking stream sockets,
// closed when the benchmark ends.
func benchPair(b *testing.B) (int, int) {
	fds, err := xunix.Socketpair(xunix.AF_UNIX, xunix.SOCK_STREAM|xunix.SOCK_NONBLOCK|xunix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { xunix.Close(fds[0]); xunix.Close(fds[1]) })
	return fds[0], fds[1]
}

// benchRing sets up a ring the way a carrier does, or skips.
func benchRing(b *testing.B) *Ring {
	r, err := URingSetup(64, 0, IORING_SETUP_CLAMP|IORING_SETUP_COOP_TASKRUN|IORING_SETUP_TASKRUN_FLAG)
	if err != nil {
		b.Skipf("io_uring: %v", err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// waitCQE returns the next completion, entering the kernel to wait for it
// when none is there (submitting what is queued); it counts system calls.
func waitCQE(b *testing.B, r *Ring, calls *int) CQE {
	for r.CQReady() == 0 {
		*calls++
		if _, err := r.Enter(r.Flush(), 1, IORING_ENTER_GETEVENTS); err != nil && err != xunix.EINTR {
			b.Fatal(err)
		}
	}
	c := *r.CQE(0)
	r.CQAdvance(1)
	return c
}

func mustIO(b *testing.B, n int, err error, want int) {
	if err != nil || n != want {
		b.Fatalf("%d bytes, %v; want %d", n, err, want)
	}
}

// BenchmarkRoundTrip compares the ways a carrier could serve one 64-byte
// request and its answer on a socket (the "server" end), the client end
// on the same thread: epoll readiness with read and write system calls
// (the epoll carrier), io_uring multishot poll readiness with the same
// read and write (the io_uring carrier), and completion-based RECV and
// SEND requests (what the io_uring carrier does not do; docs/carrier.md,
// "Pollers"). Metric syscalls/op counts every system call of a round
// trip, the client's write and read included.
func BenchmarkRoundTrip(b *testing.B) {
	const size = 64
	b.Run("epoll", func(b *testing.B) {
		cli, srv := benchPair(b)
		ep, err := EpollCreate()
		if err != nil {
			b.Fatal(err)
		}
		defer Close(ep)
		if err := EpollAdd(ep, srv, EPOLLIN|EPOLLET, 1); err != nil {
			b.Fatal(err)
		}
		msg, buf := make([]byte, size), make([]byte, size)
		evs := make([]EpollEvent, 8)
		b.ReportAllocs()
		for b.Loop() {
			n, err := WriteNB(cli, msg)
			mustIO(b, n, err, size)
			if _, err := EpollWait(ep, evs, -1); err != nil {
				b.Fatal(err)
			}
			n, err = ReadNB(srv, buf)
			mustIO(b, n, err, size)
			n, err = WriteNB(srv, buf)
			mustIO(b, n, err, size)
			n, err = ReadNB(cli, msg)
			mustIO(b, n, err, size)
		}
		b.ReportMetric(5, "syscalls/op")
	})
	b.Run("uring-poll", func(b *testing.B) {
		runtime.LockOSThread() // completion work goes to the submitting thread
		defer runtime.UnlockOSThread()
		cli, srv := benchPair(b)
		r := benchRing(b)
		PrepPollMultishot(r.GetSQE(), srv, POLLIN, 1)
		msg, buf := make([]byte, size), make([]byte, size)
		calls := 0
		b.ReportAllocs()
		for b.Loop() {
			n, err := WriteNB(cli, msg)
			mustIO(b, n, err, size)
			if c := waitCQE(b, r, &calls); c.Res < 0 {
				b.Fatalf("poll: %d", c.Res)
			}
			n, err = ReadNB(srv, buf)
			mustIO(b, n, err, size)
			n, err = WriteNB(srv, buf)
			mustIO(b, n, err, size)
			n, err = ReadNB(cli, msg)
			mustIO(b, n, err, size)
			calls += 4
		}
		b.ReportMetric(float64(calls)/float64(b.N), "syscalls/op")
	})
	b.Run("uring-completion", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cli, srv := benchPair(b)
		r := benchRing(b)
		msg, buf := make([]byte, size), make([]byte, size)
		recv := func() { PrepRecv(r.GetSQE(), srv, buf, 2) }
		recv()
		calls := 0
		b.ReportAllocs()
		for b.Loop() {
			n, err := WriteNB(cli, msg)
			mustIO(b, n, err, size)
			for { // the RECV's completion (a SEND's may come first)
				c := waitCQE(b, r, &calls)
				if c.UserData == 2 {
					if c.Res != size {
						b.Fatalf("recv: %d", c.Res)
					}
					break
				}
			}
			sqe := r.GetSQE()
			PrepSend(sqe, srv, buf, 3)
			sqe.Flags = IOSQE_CQE_SKIP_SUCCESS
			recv() // the next request's RECV, in the same submission
			calls++
			if _, err := r.Enter(r.Flush(), 0, 0); err != nil {
				b.Fatal(err)
			}
			n, err = ReadNB(cli, msg)
			mustIO(b, n, err, size)
			calls += 2
		}
		b.ReportMetric(float64(calls)/float64(b.N), "syscalls/op")
		runtime.KeepAlive(buf)
	})
}
