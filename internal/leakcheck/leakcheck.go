// Package leakcheck fails a test that leaves goroutines or file descriptors
// behind: the runtime, the server and the mock all promise that Close leaves
// nothing running and nothing open, and their tests check it the same way.
package leakcheck

import (
	"bytes"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// OpenFDs counts this process's open file descriptors (/proc/self/fd). The
// test is skipped, with the reason, where /proc is not mounted.
func OpenFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("leak check needs /proc/self/fd: %v", err)
	}
	return len(ents)
}

// RingMapping is how /proc/self/maps names the memory an io_uring instance
// maps (its rings and SQE array).
const RingMapping = "anon_inode:[io_uring]"

// Register records the goroutine, fd and io_uring mapping counts now and, at cleanup, fails
// the test if any is still higher after waiting up to within (exiting
// goroutines and closing sockets take a moment to be counted out). Cleanups
// run last-registered first, so call Register before starting what the test
// closes in its own cleanups: the check then runs after them.
func Register(t testing.TB, within time.Duration) {
	t.Helper()
	netPollerOnce.Do(startNetPoller)
	g0, f0, m0 := runtime.NumGoroutine(), OpenFDs(t), Mappings(t, RingMapping)
	t.Cleanup(func() {
		deadline := time.Now().Add(within)
		for {
			g, f, m := runtime.NumGoroutine(), OpenFDs(t), Mappings(t, RingMapping)
			if g <= g0 && f <= f0 && m <= m0 {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("leak: goroutines %d -> %d, fds %d -> %d, io_uring mappings %d -> %d\n%s", g0, g, f0, f, m0, m, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// netPollerOnce starts Go's network poller before the first count of
// descriptors: the runtime opens the poller's own (an epoll instance and an
// eventfd) at the process's first pollable file and keeps them for good, so
// a test whose first dial came after Register would count them as leaked.
var netPollerOnce sync.Once

// startNetPoller opens a pipe (a pollable file) and closes it.
func startNetPoller() {
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
}

// Mappings counts the lines of /proc/self/maps that contain name (such as
// "[io_uring]", the rings an io_uring instance maps). The test is skipped,
// with the reason, where /proc is not mounted.
func Mappings(t testing.TB, name string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("leak check needs /proc/self/maps: %v", err)
	}
	return bytes.Count(b, []byte(name))
}
