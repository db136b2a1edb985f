package unix

import (
	xunix "golang.org/x/sys/unix"
)

// Eventfd creates a non-blocking, close-on-exec eventfd with a zero counter.
func Eventfd() (int, error) {
	fd, err := xunix.Eventfd(0, xunix.EFD_NONBLOCK|xunix.EFD_CLOEXEC)
	return fd, wrap("eventfd", err)
}

// EventfdSignal adds one to the eventfd counter, waking a poller.
func EventfdSignal(fd int) error {
	var one = [8]byte{1}
	_, err := xunix.Write(fd, one[:])
	if err == xunix.EAGAIN { // counter saturated: a wake-up is already pending
		return nil
	}
	return wrap("write", err)
}

// EventfdDrain resets the eventfd counter to zero.
func EventfdDrain(fd int) error {
	var b [8]byte
	_, err := xunix.Read(fd, b[:])
	if err == xunix.EAGAIN {
		return nil
	}
	return wrap("read", err)
}
