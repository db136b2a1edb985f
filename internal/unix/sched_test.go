package unix

import (
	"os/exec"
	"runtime"
	"testing"

	xunix "golang.org/x/sys/unix"
)

// onThread runs f on a thread of its own, which ends with it (so that
// whatever f does to the thread's scheduling ends there too).
func onThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		f()
	}()
	<-done
}

func TestSetSlice(t *testing.T) {
	onThread(func() {
		def, err := Slice(0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := setSlice(300_000)
		if err != nil {
			t.Fatal(err)
		}
		if def == 0 && got == 0 {
			t.Skip("the kernel keeps no time slice per thread (before Linux 6.12)")
		}
		for _, tc := range []struct {
			name string
			ask  uint64
			want uint64
		}{
			{"300µs", 300_000, 300_000},
			{"the shortest", MinSlice, MinSlice},
			{"below the shortest: clamped", 1_000, MinSlice},
			{"above the longest: clamped", 10 * MaxSlice, MaxSlice},
			{"0: the default", 0, def},
		} {
			got, err := setSlice(tc.ask)
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			if got != tc.want {
				t.Errorf("%s: SetSlice(%d), then the slice is %d, want %d", tc.name, tc.ask, got, tc.want)
			}
		}
	})
}

// TestSetSliceKeepsNice: asking for a slice leaves the thread's nice value
// (sched_setattr sets policy, nice and slice at once).
func TestSetSliceKeepsNice(t *testing.T) {
	onThread(func() {
		tid := Gettid()
		if err := setNice(tid, 5); err != nil {
			t.Skipf("cannot renice this thread: %v", err)
		}
		if err := SetSlice(0, 200_000); err != nil {
			t.Fatal(err)
		}
		if n, err := nice(tid); err != nil || n != 5 {
			t.Errorf("nice after SetSlice = %d (%v), want 5", n, err)
		}
	})
}

func setNice(tid, n int) error { return xunix.Setpriority(xunix.PRIO_PROCESS, tid, n) }

func nice(tid int) (int, error) {
	attr, err := xunix.SchedGetAttr(tid, 0)
	if err != nil {
		return 0, err
	}
	return int(attr.Nice), nil
}

// TestSetSliceNotInherited: a process started from a thread given a slice
// runs with the kernel's default (SCHED_FLAG_RESET_ON_FORK): so do the
// threads the Go runtime clones from it.
func TestSetSliceNotInherited(t *testing.T) {
	onThread(func() {
		def, err := Slice(0)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := setSlice(200_000); err != nil || got == 0 {
			t.Skipf("the kernel keeps no time slice per thread (before Linux 6.12): %d, %v", got, err)
		}
		cmd := exec.Command("sleep", "5")
		if err := cmd.Start(); err != nil {
			t.Skipf("no child process: %v", err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		if got, err := Slice(cmd.Process.Pid); err != nil || got != def {
			t.Errorf("the child's slice: %d (%v), want the default %d", got, err, def)
		}
	})
}

// setSlice gives the calling thread a slice of ns (SetSlice) and returns
// the slice the kernel then reports.
func setSlice(ns uint64) (uint64, error) {
	if err := SetSlice(0, ns); err != nil {
		return 0, err
	}
	return Slice(0)
}

// SetBatch moves a thread between SCHED_NORMAL and SCHED_BATCH, keeping
// its nice and its slice, says when it changed the policy, leaves a
// real-time thread as it is, and takes a thread that has exited as done.
func TestSetBatch(t *testing.T) {
	onThread(func() {
		tid := Gettid()
		if err := setNice(tid, 3); err != nil {
			t.Fatal(err)
		}
		if err := SetSlice(0, 2_000_000); err != nil {
			t.Fatal(err)
		}
		slice, err := Slice(0)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name        string
			on, changed bool
		}{
			{"to batch", true, true},
			{"batch again", true, false},
			{"back to normal", false, true},
			{"normal again", false, false},
			{"batch from normal", true, true},
		} {
			changed, err := SetBatch(0, tc.on)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			batch, err := Batch(0)
			if err != nil {
				t.Fatal(err)
			}
			n, err := nice(tid)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Slice(0)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed || batch != tc.on || n != 3 || s != slice {
				t.Errorf("%s: changed %v, batch %v, nice %d, slice %d; want %v, %v, 3, %d", tc.name, changed, batch, n, s, tc.changed, tc.on, slice)
			}
		}
	})
	if changed, err := SetBatch(1<<22+7, true); changed || err != nil { // above pid_max's default: no such thread
		t.Errorf("SetBatch of a thread that does not exist: %v, %v; want no change and no error", changed, err)
	}
	onThread(func() {
		if err := SetFIFO(1); err != nil {
			t.Skipf("no real-time policy here: %v", err)
		}
		if changed, err := SetBatch(0, true); changed || err != nil {
			t.Errorf("SetBatch of a SCHED_FIFO thread: %v, %v; want it left", changed, err)
		}
		if attr, err := xunix.SchedGetAttr(0, 0); err != nil || attr.Policy != xunix.SCHED_FIFO {
			t.Errorf("policy after SetBatch of a SCHED_FIFO thread: %+v, %v", attr, err)
		}
	})
}

// SetFair changes the slice, the policy or both in one call, leaves the
// rest (nice, the other attribute) as it was, and reports whether anything
// changed; a change that asks for nothing makes no call.
func TestSetFair(t *testing.T) {
	onThread(func() {
		tid := Gettid()
		if err := setNice(tid, 2); err != nil {
			t.Fatal(err)
		}
		def, err := Slice(0)
		if err != nil {
			t.Fatal(err)
		}
		if def == 0 {
			t.Skip("the kernel keeps no time slice per thread (before Linux 6.12)")
		}
		for _, tc := range []struct {
			name      string
			f         Fair
			changed   bool
			slice     uint64 // 0: the kernel's default (def)
			batch     bool
			resetFork bool
		}{
			{"nothing asked", Fair{}, false, 0, false, false},
			{"a carrier's: slice, normal", Fair{SetSlice: true, Slice: 700_000, SetBatch: true}, true, 700_000, false, true},
			{"the same again", Fair{SetSlice: true, Slice: 700_000, SetBatch: true}, false, 700_000, false, true},
			{"given up: default slice, batched", Fair{SetSlice: true, SetBatch: true, Batch: true}, true, 0, true, true},
			{"policy alone", Fair{SetBatch: true}, true, 0, false, true},
			{"slice alone", Fair{SetSlice: true, Slice: 2_000_000}, true, 2_000_000, false, true},
		} {
			changed, err := SetFair(0, tc.f)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			attr, err := xunix.SchedGetAttr(0, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.slice
			if want == 0 {
				want = def
			}
			n, err := nice(tid)
			if err != nil {
				t.Fatal(err)
			}
			batch := attr.Policy == xunix.SCHED_BATCH
			resetFork := attr.Flags&xunix.SCHED_FLAG_RESET_ON_FORK != 0
			if changed != tc.changed || attr.Runtime != want || batch != tc.batch || n != 2 || resetFork != tc.resetFork {
				t.Errorf("%s: changed %v, slice %d, batch %v, nice %d, reset-on-fork %v; want %v, %d, %v, 2, %v",
					tc.name, changed, attr.Runtime, batch, n, resetFork, tc.changed, want, tc.batch, tc.resetFork)
			}
		}
	})
	if changed, err := SetFair(1<<22+7, Fair{SetBatch: true, Batch: true}); changed || err != nil {
		t.Errorf("SetFair of a thread that does not exist: %v, %v; want no change and no error", changed, err)
	}
}
