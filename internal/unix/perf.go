package unix

import (
	"unsafe"

	xunix "golang.org/x/sys/unix"
)

// PerfOpenCounter opens a system-wide counting perf event of the given PMU
// type and config on one CPU (pid -1), as the energy counters of the "power"
// PMU require. Read it with ReadCounter.
func PerfOpenCounter(pmuType uint32, config uint64, cpu int) (int, error) {
	attr := xunix.PerfEventAttr{Type: pmuType, Size: uint32(unsafe.Sizeof(xunix.PerfEventAttr{})), Config: config}
	fd, err := xunix.PerfEventOpen(&attr, -1, cpu, -1, xunix.PERF_FLAG_FD_CLOEXEC)
	return fd, wrap("perf_event_open", err)
}

// ReadCounter reads the 8-byte value of a counting perf event.
func ReadCounter(fd int) (uint64, error) {
	var b [8]byte
	n, err := xunix.Read(fd, b[:])
	if err != nil {
		return 0, wrap("read", err)
	}
	if n != 8 {
		return 0, wrap("read", xunix.EIO)
	}
	return *(*uint64)(unsafe.Pointer(&b[0])), nil
}
