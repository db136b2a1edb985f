package carrier

import (
	"runtime"
	"sync"
)

// mOK reports whether getm passed its check: non-zero, stable on a locked
// thread across scheduling, and different on two threads at once. The
// hand-off of a blocked carrier (handoff.go) needs it; where it fails (an
// architecture without it, or a runtime whose g no longer has m at the
// offset getm reads) hand-off is off and carriers behave as before it.
var mOK = sync.OnceValue(func() bool {
	if !haveGetg {
		return false
	}
	ms := make(chan uintptr, 2)
	stable := make(chan bool, 2)
	var ready, hold sync.WaitGroup
	ready.Add(2)
	hold.Add(1)
	for range 2 {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			m := getm()
			ok := m != 0 && m%8 == 0
			for range 3 {
				runtime.Gosched()
				ok = ok && getm() == m
			}
			ms <- m
			stable <- ok
			ready.Done()
			hold.Wait() // both threads held at once: their Ms differ
		}()
	}
	ready.Wait()
	a, b := <-ms, <-ms
	okA, okB := <-stable, <-stable
	hold.Done()
	return okA && okB && a != b
})
