package unix

import (
	"errors"
	"sync"
	"unsafe"

	xunix "golang.org/x/sys/unix"
)

// Epoll event bits.
const (
	EPOLLIN      = xunix.EPOLLIN
	EPOLLOUT     = xunix.EPOLLOUT
	EPOLLERR     = xunix.EPOLLERR
	EPOLLHUP     = xunix.EPOLLHUP
	EPOLLRDHUP   = xunix.EPOLLRDHUP
	EPOLLET      = xunix.EPOLLET
	EPOLLONESHOT = xunix.EPOLLONESHOT
)

// EpollEvent is one readiness event: the ready events and the user data (a
// file descriptor or any 64-bit token the caller chose at registration).
type EpollEvent = xunix.EpollEvent

// EpollCreate creates a close-on-exec epoll instance.
func EpollCreate() (int, error) {
	fd, err := xunix.EpollCreate1(xunix.EPOLL_CLOEXEC)
	return fd, wrap("epoll_create1", err)
}

// EpollAdd registers fd with events; token is delivered back in events.
func EpollAdd(epfd, fd int, events uint32, token uint64) error {
	ev := xunix.EpollEvent{Events: events}
	setToken(&ev, token)
	return wrap("epoll_ctl", xunix.EpollCtl(epfd, xunix.EPOLL_CTL_ADD, fd, &ev))
}

// EpollMod changes the events registered for fd.
func EpollMod(epfd, fd int, events uint32, token uint64) error {
	ev := xunix.EpollEvent{Events: events}
	setToken(&ev, token)
	return wrap("epoll_ctl", xunix.EpollCtl(epfd, xunix.EPOLL_CTL_MOD, fd, &ev))
}

// EpollDel removes fd from the interest list.
func EpollDel(epfd, fd int) error {
	return wrap("epoll_ctl", xunix.EpollCtl(epfd, xunix.EPOLL_CTL_DEL, fd, nil))
}

// EpollWait waits up to msec milliseconds (-1 forever, 0 poll) for events.
// EINTR is reported as zero events and no error.
func EpollWait(epfd int, events []EpollEvent, msec int) (int, error) {
	n, err := xunix.EpollWait(epfd, events, msec)
	if err == xunix.EINTR {
		return 0, nil
	}
	return n, wrap("epoll_wait", err)
}

// EpollPwait2 waits up to timeoutNs nanoseconds (-1 forever) with
// sub-millisecond resolution, using epoll_pwait2 (Linux 5.11+). Callers fall
// back to EpollWait when it reports ENOSYS.
func EpollPwait2(epfd int, events []EpollEvent, timeoutNs int64) (int, error) {
	var ts *xunix.Timespec
	if timeoutNs >= 0 {
		t := xunix.NsecToTimespec(timeoutNs)
		ts = &t
	}
	var p unsafe.Pointer
	if len(events) > 0 {
		p = unsafe.Pointer(&events[0])
	}
	r, _, errno := xunix.Syscall6(xunix.SYS_EPOLL_PWAIT2, uintptr(epfd), uintptr(p),
		uintptr(len(events)), uintptr(unsafe.Pointer(ts)), 0, 0)
	switch errno {
	case 0:
		return int(r), nil
	case xunix.EINTR:
		return 0, nil
	}
	return 0, wrap("epoll_pwait2", errno)
}

// EpollWaitNs waits up to timeoutNs nanoseconds (-1 forever, 0 a poll)
// for events: with epoll_pwait2's sub-millisecond resolution where the
// kernel has it (Linux 5.11+, probed once per process), else with
// epoll_wait and the timeout rounded up to whole milliseconds, so that a
// wait never ends early for want of resolution. EINTR is reported as zero
// events and no error.
func EpollWaitNs(epfd int, events []EpollEvent, timeoutNs int64) (int, error) {
	return epollWaitNs(epfd, events, timeoutNs, hasPwait2())
}

// epollWaitNs is EpollWaitNs with epoll_pwait2 (pwait2) or without.
func epollWaitNs(epfd int, events []EpollEvent, timeoutNs int64, pwait2 bool) (int, error) {
	if pwait2 {
		return EpollPwait2(epfd, events, timeoutNs)
	}
	ms := -1
	if timeoutNs >= 0 {
		ms = int((timeoutNs + 999_999) / 1_000_000) // round up: never wake early
	}
	return EpollWait(epfd, events, ms)
}

// hasPwait2 probes epoll_pwait2 once: on a bad descriptor with no room
// for events, a kernel that has it answers EINVAL or EBADF; one without
// answers ENOSYS, and a seccomp filter that does not know it may answer
// EPERM. Any answer but the first two keeps epoll_wait, which every
// kernel has.
var hasPwait2 = sync.OnceValue(func() bool {
	_, err := EpollPwait2(-1, nil, 0)
	return errors.Is(err, xunix.EINVAL) || errors.Is(err, xunix.EBADF)
})

// Token returns the user data stored in ev at registration.
func Token(ev *EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

func setToken(ev *xunix.EpollEvent, token uint64) {
	ev.Fd = int32(uint32(token))
	ev.Pad = int32(uint32(token >> 32))
}

// EpollPoll collects ready events without blocking (epoll_pwait with a zero
// timeout), as a raw system call like the rest of the carrier's fast path
// (see ReadNB). EINTR is reported as zero events and no error.
func EpollPoll(epfd int, events []EpollEvent) (int, error) {
	var ptr unsafe.Pointer
	if len(events) > 0 {
		ptr = unsafe.Pointer(&events[0])
	}
	n, _, e := xunix.RawSyscall6(xunix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(ptr), uintptr(len(events)), 0, 0, 0)
	switch e {
	case 0:
		return int(n), nil
	case xunix.EINTR:
		return 0, nil
	}
	return 0, wrap("epoll_pwait", e)
}
