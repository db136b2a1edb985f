package unix

import (
	"testing"
	"time"
)

// Both sleeps last at least what they are asked (a signal may end one
// early: callers re-check the clock, and the test's goroutine gets none),
// and none for 0 or less.
func TestSleeps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sleep func(int64) error
	}{{"Nanosleep", Nanosleep}, {"BlockingSleep", BlockingSleep}} {
		for _, ns := range []int64{-1, 0, int64(2 * time.Millisecond)} {
			start := time.Now()
			if err := tc.sleep(ns); err != nil {
				t.Errorf("%s(%d): %v", tc.name, ns, err)
			}
			if got := time.Since(start); ns > 0 && got < time.Duration(ns) {
				t.Errorf("%s(%d) slept %v", tc.name, ns, got)
			}
		}
	}
}
