// Package leakcheck fails a test that leaves goroutines or file descriptors
// behind: the runtime, the server and the mock all promise that Close leaves
// nothing running and nothing open, and their tests check it the same way.
package leakcheck

import (
	"os"
	"runtime"
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

// Register records the goroutine and fd counts now and, at cleanup, fails
// the test if either is still higher after waiting up to within (exiting
// goroutines and closing sockets take a moment to be counted out). Cleanups
// run last-registered first, so call Register before starting what the test
// closes in its own cleanups: the check then runs after them.
func Register(t testing.TB, within time.Duration) {
	t.Helper()
	g0, f0 := runtime.NumGoroutine(), OpenFDs(t)
	t.Cleanup(func() {
		deadline := time.Now().Add(within)
		for {
			g, f := runtime.NumGoroutine(), OpenFDs(t)
			if g <= g0 && f <= f0 {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("leak: goroutines %d -> %d, fds %d -> %d\n%s", g0, g, f0, f, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
