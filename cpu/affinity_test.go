package cpu

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/spindle-lab/spindle/internal/unix"
)

// TestPinProcessPinsEveryThread: threads that exist before the call
// (here, locked goroutines' threads) are pinned too, not only the caller.
func TestPinProcessPinsEveryThread(t *testing.T) {
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("needs 2 CPUs to narrow the set, this process may use %s", allowed)
	}
	defer func() {
		if err := PinProcess(allowed); err != nil {
			t.Fatalf("restore: %v", err)
		}
	}()
	// Four parked threads that the calling thread did not create after the pin.
	var ready, release sync.WaitGroup
	release.Add(1)
	for range 4 {
		ready.Add(1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Done()
			release.Wait()
		}()
	}
	ready.Wait()
	defer release.Done()

	want := Set{allowed[1]}
	if err := PinProcess(want); err != nil {
		t.Fatal(err)
	}
	tids, err := Threads("", "self")
	if err != nil {
		t.Skipf("needs /proc/self/task: %v", err)
	}
	if len(tids) < 5 {
		t.Fatalf("%d threads listed, want at least the 4 locked ones and this one", len(tids))
	}
	for _, tid := range tids {
		got, err := unix.SchedGetaffinity(tid)
		if err != nil {
			continue // exited since the listing
		}
		if !slices.Equal(got, []int(want)) {
			t.Errorf("thread %d may run on %v, want %v", tid, got, want)
		}
	}
}

func TestPinProcessEmpty(t *testing.T) {
	if err := PinProcess(Set{}); err == nil {
		t.Fatal("PinProcess with no CPUs succeeded")
	}
}

func TestThreads(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"42/task/42", "42/task/43", "42/task/not-a-tid", "7/task"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		pid     string
		want    []int
		wantErr bool
	}{
		{"42", []int{42, 43}, false},
		{"7", []int{}, false},
		{"99", nil, true}, // the process is gone
	}
	for _, tt := range tests {
		got, err := Threads(root, tt.pid)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("Threads(%q) = %v, %v; want %v (error %v)", tt.pid, got, err, tt.want, tt.wantErr)
		}
	}
	if self, err := Threads("", "self"); err != nil || len(self) == 0 {
		t.Errorf("Threads of this process: %v, %v", self, err)
	}
}

// TestProcessAllowed: on a thread pinned to one CPU (as a carrier's thread
// that the scheduler lends to another goroutine is), Allowed says that CPU
// alone and ProcessAllowed the process's CPUs.
func TestProcessAllowed(t *testing.T) {
	all, err := ProcessAllowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Skipf("the process may use %d CPU: nothing to narrow", len(all))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		orig, err := Allowed()
		if err != nil {
			t.Error(err)
			return
		}
		if err := Pin(Set{all[0]}); err != nil {
			t.Error(err)
			return
		}
		defer func() {
			if err := Pin(orig); err != nil {
				t.Error(err)
			}
		}()
		mine, _ := Allowed()
		got, err := ProcessAllowed()
		if err != nil {
			t.Error(err)
			return
		}
		if !slices.Equal(mine, Set{all[0]}) || !slices.Equal(got, all) {
			t.Errorf("on a thread pinned to CPU %d: Allowed %v, ProcessAllowed %v; want [%d] and %v", all[0], mine, got, all[0], all)
		}
	}()
	<-done
}
