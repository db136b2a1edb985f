package carrier

import (
	"errors"
	"iter"
	"runtime"
	"sync"
	"time"
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

// checkWait bounds how long a start-up check waits for a goroutine it
// started to park: a few scheduler rounds on a machine, but much more
// under an emulator (qemu) on a loaded host.
const checkWait = 2 * time.Second

// Goroutine statuses (runtime/runtime2.go), as gstatus reads them less
// the scan bit.
const (
	gRunning   = 2
	gSyscall   = 3
	gWaiting   = 4
	gScanBit   = 0x1000
	gStatusSet = 0xff // the values the checks below may see
)

// statusOK reports whether gstatus passed its check: it reads running for
// the caller and waiting for a goroutine blocked on a channel. Where it
// fails (a runtime whose g moved atomicstatus) the monitor cannot tell a
// blocked run from a computing one and hands off every run past the
// threshold (handoffDue).
var statusOK = sync.OnceValue(func() bool {
	if !mOK() {
		return false
	}
	if gstatus(getg())&^gScanBit != gRunning {
		return false
	}
	gs := make(chan uintptr)
	release := make(chan struct{})
	go func() {
		gs <- getg()
		<-release
	}()
	g := <-gs
	defer close(release)
	return awaitParked(g, nil) // on release: a few scheduler rounds
})

// awaitParked waits, yielding, up to checkWait for goroutine g (which a
// start-up check started) to park: it reports whether g came to wait for
// a reason that ok accepts (nil: any; g may wait for another meanwhile,
// a GC assist), and false at once where g's status reads a value no
// status has (a field read at a wrong offset).
func awaitParked(g uintptr, ok func(reason uint8) bool) bool {
	for end := time.Now().Add(checkWait); time.Now().Before(end); runtime.Gosched() {
		switch st := gstatus(g) &^ gScanBit; {
		case st > gStatusSet:
			return false
		case st == gWaiting && (ok == nil || ok(gwaitreason(g))):
			return true
		}
	}
	return false
}

// blockedGoWay reports whether goroutine g waits the Go way (parked on a
// channel, a mutex, a timer) or is in a system call: a run of it that held
// its carrier past the threshold is handed off then. A goroutine running or
// runnable (preempted) gets computeFactor thresholds first: a GC stack scan
// or a CPU shared with another process preempts runs for a moment, and a
// hand-off for each would cost a thread, a few system calls and, on the
// carrier's CPU, a second runnable thread.
func blockedGoWay(g uintptr) bool {
	if g == 0 {
		return false // a coroutine not started yet, or ended: nothing waits
	}
	st := gstatus(g) &^ gScanBit
	if st == gWaiting && reasonOK() && gwaitreason(g) == waitCoroutine {
		return false // it switched to a coroutine of its own (iter.Pull), which runs on its thread
	}
	return st == gWaiting || st == gSyscall
}

// computeFactor is how many hand-off thresholds a run that computes (or
// was preempted) may hold its carrier before it is handed off: 10 ms at
// the default threshold, Go's own time slice before it preempts a
// goroutine (forcePreemptNS).
const computeFactor = 10

// lockedOK reports whether glockedm passed its check: 0 for an unlocked
// goroutine, its own M (getm) once it calls runtime.LockOSThread.
var lockedOK = sync.OnceValue(func() bool {
	if !mOK() {
		return false
	}
	ok := make(chan bool)
	go func() {
		g := getg()
		before := glockedm(g)
		runtime.LockOSThread()
		locked := glockedm(g)
		m := getm()
		runtime.UnlockOSThread()
		ok <- before == 0 && locked != 0 && locked == m && glockedm(g) == 0
	}()
	return <-ok
})

// errLockedThread is the panic of a task that called runtime.LockOSThread
// and did not unlock before its next carrier operation.
var errLockedThread = errors.New("carrier: a task called runtime.LockOSThread and did not call UnlockOSThread before its next carrier operation: a task runs as a coroutine that its carrier resumes from its own thread, so it cannot keep a thread to itself (use Task.Offload, whose function runs on a goroutine of its own)")

// refuseLocked ends a task of a carrier whose runs are unlocked
// (handoffState.unlocked: it hands off or parks idle) whose goroutine is
// locked to its thread before it switches back to the carrier: the runtime
// would throw there ("coro: OS thread locking must match locking at
// coroutine creation"), ending the process. It unlocks the goroutine (as
// often as the task locked it) and panics with errLockedThread, which the
// task's code, a server's handler recovery say, sees as any panic.
func (t *Task) refuseLocked() {
	if c := t.home; c == nil || !c.ho.unlocked || !lockedOK() {
		return
	}
	g := getg()
	if glockedm(g) == 0 {
		return
	}
	for i := 0; i < 1<<20 && glockedm(g) != 0; i++ {
		runtime.UnlockOSThread()
	}
	panic(errLockedThread)
}

// seqOK reports whether gtrackseq passed its check: a goroutine that parks
// on a channel three times counts three (more where the scheduler also
// preempted it or a GC assist parked it meanwhile: up to 16 on a loaded
// host under an emulator), and a coroutine that yields three times
// (iter.Pull switches as the carrier's coroutines do) counts none, or one
// where it was preempted. Where it fails (a runtime whose g moved
// trackingSeq, or whose coroutine switch now counts) the park watch is off
// (Carrier.ho.watch).
var seqOK = sync.OnceValue(func() bool {
	if !mOK() {
		return false
	}
	gs := make(chan uintptr)
	step := make(chan struct{})
	done := make(chan uint8)
	go func() {
		g := getg()
		gs <- g
		before := gtrackseq(g)
		for range 3 {
			<-step
		}
		done <- gtrackseq(g) - before
	}()
	g := <-gs
	for range 3 {
		if !awaitParked(g, nil) { // parked on step, not about to
			close(step)
			<-done
			return false
		}
		step <- struct{}{}
	}
	if parks := <-done; parks < 3 || parks > 16 {
		return false
	}
	var cg uintptr
	next, stop := iter.Pull(func(yield func(uint8) bool) {
		cg = getg()
		for yield(gtrackseq(cg)) {
		}
	})
	defer stop()
	first, _ := next()
	for range 3 {
		next()
	}
	last, _ := next()
	return last-first <= 1
})

// Wait reasons (runtime/runtime2.go, Go 1.26), as gwaitreason reads them:
// the ones reasonOK checks, and the ones the park watch leaves alone
// (runtimeWait).
const (
	waitGCAssistMarking   = 1
	waitGarbageCollection = 4
	waitGCScan            = 5
	waitGCAssistWait      = 7
	waitGCSweepWait       = 8
	waitSemacquire        = 13 // the runtime's own semaphores: gcStart's, a poll.FD's lock
	waitChanReceive       = 19
	waitSyncMutexLock     = 22
	waitGCMarkTermination = 32
	waitStoppingTheWorld  = 33
	waitFlushProcCaches   = 34
	waitCoroutine         = 38
)

// reasonOK reports whether gwaitreason passed its check: it reads the
// constants above for a goroutine parked on a channel receive, one on a
// sync.Mutex held by another, and a coroutine that yielded (iter.Pull's). Where it fails
// (another runtime's numbering, or a moved field) the park watch takes
// every run whose task waits, as before it read reasons.
var reasonOK = sync.OnceValue(func() bool {
	if !statusOK() {
		return false
	}
	// parkedAs reports whether f's goroutine comes to wait for reason
	// want: it may wait for another meanwhile (a GC assist), and a field
	// read at a wrong offset never reads want.
	parkedAs := func(f func(), want uint8) bool {
		gs := make(chan uintptr)
		go func() {
			gs <- getg()
			f()
		}()
		return awaitParked(<-gs, func(r uint8) bool { return r == want })
	}
	release := make(chan struct{})
	defer close(release)
	if !parkedAs(func() { <-release }, waitChanReceive) {
		return false
	}
	var mu sync.Mutex
	mu.Lock()
	defer mu.Unlock()
	if !parkedAs(func() { mu.Lock(); mu.Unlock() }, waitSyncMutexLock) {
		return false
	}
	var cg uintptr
	next, stop := iter.Pull(func(yield func(struct{}) bool) {
		cg = getg()
		for yield(struct{}{}) {
		}
	})
	defer stop()
	next()
	return gstatus(cg)&^gScanBit == gWaiting && gwaitreason(cg) == waitCoroutine
})

// runtimeWait says whether a goroutine waiting for reason r waits for the
// runtime itself (the collector: an assist, a sweep, the stop of the
// world it asked for; gcStart's semaphores) or has switched to another
// coroutine (one of its own, iter.Pull's, which its thread runs
// meanwhile): waits that the park watch leaves to the task, where taking
// the run would cost a new owner and a rejoin (nethttp-carrier /fruits:
// 166 of 166 park yields in a 4 s run, before it read reasons).
func runtimeWait(r uint8) bool {
	switch r {
	case waitGCAssistMarking, waitGarbageCollection, waitGCScan, waitGCAssistWait, waitGCSweepWait,
		waitSemacquire, waitGCMarkTermination, waitStoppingTheWorld, waitFlushProcCaches, waitCoroutine:
		return true
	}
	return false
}
