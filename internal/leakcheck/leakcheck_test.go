package leakcheck

import (
	"os"
	"testing"
	"time"
)

// fakeT records what Register's cleanup reports, so the test can check that
// a real leak is caught and a clean run passes.
type fakeT struct {
	testing.TB
	cleanups []func()
	failed   bool
}

func (f *fakeT) Helper()                       {}
func (f *fakeT) Cleanup(fn func())             { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Errorf(string, ...any)         { f.failed = true }
func (f *fakeT) Skipf(format string, a ...any) { f.TB.Skipf(format, a...) }
func (f *fakeT) finish() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestRegister(t *testing.T) {
	tests := []struct {
		name     string
		leak     func() func() // returns what undoes the leak, run after the check
		wantFail bool
	}{
		{"clean", func() func() { return func() {} }, false},
		{"goroutine", func() func() {
			stop := make(chan struct{})
			go func() { <-stop }()
			return func() { close(stop) }
		}, true},
		{"fd", func() func() {
			f, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			return func() { f.Close() }
		}, true},
	}
	for _, tt := range tests {
		ft := &fakeT{TB: t}
		Register(ft, 50*time.Millisecond)
		undo := tt.leak()
		ft.finish()
		undo()
		if ft.failed != tt.wantFail {
			t.Errorf("%s: failed = %v, want %v", tt.name, ft.failed, tt.wantFail)
		}
	}
}
