package unix

import (
	"errors"
	"os"
	"testing"
)

func TestEventfdWakesEpoll(t *testing.T) {
	ep, err := EpollCreate()
	if err != nil {
		t.Fatal(err)
	}
	defer Close(ep)
	efd, err := Eventfd()
	if err != nil {
		t.Fatal(err)
	}
	defer Close(efd)
	const token = 1<<40 | 7
	if err := EpollAdd(ep, efd, EPOLLIN, token); err != nil {
		t.Fatal(err)
	}
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
