package unix

import (
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"
)

// epollEventfd is an epoll instance with an eventfd registered under
// token, both closed when t ends.
func epollEventfd(t *testing.T, token uint64) (ep, efd int) {
	ep, err := EpollCreate()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Close(ep) })
	efd, err = Eventfd()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Close(efd) })
	if err := EpollAdd(ep, efd, EPOLLIN, token); err != nil {
		t.Fatal(err)
	}
	return ep, efd
}

func TestEventfdWakesEpoll(t *testing.T) {
	const token = 1<<40 | 7
	ep, efd := epollEventfd(t, token)
	evs := make([]EpollEvent, 4)
	if n, err := EpollWait(ep, evs, 0); err != nil || n != 0 {
		t.Fatalf("idle poll: n=%d err=%v, want 0 events", n, err)
	}
	if err := EventfdSignal(efd); err != nil {
		t.Fatal(err)
	}
	n, err := EpollPwait2(ep, evs, 1e9)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || Token(&evs[0]) != token {
		t.Fatalf("got n=%d token=%x, want 1 event with token %x", n, Token(&evs[0]), uint64(token))
	}
	if err := EventfdDrain(efd); err != nil {
		t.Fatal(err)
	}
	if n, _ := EpollWait(ep, evs, 0); n != 0 {
		t.Fatalf("after drain: %d events, want 0", n)
	}
}

func TestAffinityRoundTrip(t *testing.T) {
	cpus, err := SchedGetaffinity(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) == 0 {
		t.Fatal("no CPUs allowed")
	}
	if err := SchedSetaffinity(0, cpus); err != nil {
		t.Fatal(err)
	}
	err = SchedSetaffinity(0, []int{1023})
	var se *os.SyscallError
	if !errors.As(err, &se) || !errors.Is(err, EINVAL) {
		t.Fatalf("pinning to a missing CPU: got %v, want EINVAL syscall error", err)
	}
}

func TestListenConnectAccept(t *testing.T) {
	ln, err := ListenTCP(netip.MustParseAddrPort("127.0.0.1:0"), true, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(ln)
	ap, err := LocalAddr(ln)
	if err != nil || ap.Port() == 0 {
		t.Fatalf("LocalAddr = %v, %v", ap, err)
	}
	sa, fam := SockaddrOf(ap)
	c, err := TCPSocket(fam)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(c)
	if err := Connect(c, sa); err != nil && !errors.Is(err, EINPROGRESS) {
		t.Fatal(err)
	}
	var s int
	for i := 0; ; i++ {
		s, _, err = Accept(ln)
		if err == nil {
			break
		}
		if !errors.Is(err, EAGAIN) || i > 1000 {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	defer Close(s)
	if err := SocketError(c); err != nil {
		t.Fatal(err)
	}
	if err := SetNoDelay(c); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(c, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	for i := 0; ; i++ {
		n, err := Read(s, buf)
		if err == nil {
			if string(buf[:n]) != "ping" {
				t.Fatalf("read %q", buf[:n])
			}
			break
		}
		if !errors.Is(err, EAGAIN) || i > 1000 {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTimer: a Timer's Sleep lasts at least what it was asked, one after
// the other on the same timer, and fails once the timer is closed.
func TestTimer(t *testing.T) {
	tm, err := NewTimer()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, 50 * time.Microsecond, 2 * time.Millisecond} {
		start := time.Now()
		if err := tm.Sleep(int64(d)); err != nil {
			t.Fatalf("Sleep(%v): %v", d, err)
		}
		if got := time.Since(start); got < d {
			t.Errorf("Sleep(%v) returned after %v", d, got)
		}
	}
	if err := tm.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tm.Sleep(int64(time.Millisecond)); err == nil {
		t.Error("Sleep on a closed timer: no error")
	}
}

// TestEpollWaitNs: with epoll_pwait2 and without, an idle wait returns no
// event and a signalled eventfd its token; the probe says epoll_pwait2 is
// there exactly when a real call does not answer ENOSYS.
func TestEpollWaitNs(t *testing.T) {
	const token = 3<<32 | 9
	ep, efd := epollEventfd(t, token)
	evs := make([]EpollEvent, 4)
	_, err := EpollPwait2(ep, evs, 0)
	if got, want := hasPwait2(), !errors.Is(err, ENOSYS); got != want {
		t.Errorf("probe says epoll_pwait2 %v; a real call answered %v", got, err)
	}
	for _, tc := range []struct {
		name      string
		pwait2    bool
		timeoutNs int64
		signal    bool
		want      int
	}{
		{"epoll_wait, idle", false, 1_500_000, false, 0},
		{"epoll_wait, poll", false, 0, false, 0},
		{"epoll_wait, signalled", false, -1, true, 1},
		{"epoll_pwait2, idle", true, 300_000, false, 0},
		{"epoll_pwait2, signalled", true, int64(time.Second), true, 1},
	} {
		if tc.pwait2 && !hasPwait2() {
			t.Logf("%s: skipped: this kernel has no epoll_pwait2", tc.name)
			continue
		}
		if tc.signal {
			if err := EventfdSignal(efd); err != nil {
				t.Fatal(err)
			}
		}
		n, err := epollWaitNs(ep, evs, tc.timeoutNs, tc.pwait2)
		if err != nil || n != tc.want || (n == 1 && Token(&evs[0]) != token) {
			t.Errorf("%s: %d events (token %x), %v; want %d", tc.name, n, Token(&evs[0]), err, tc.want)
		}
		if tc.signal {
			if err := EventfdDrain(efd); err != nil {
				t.Fatal(err)
			}
		}
	}
}
