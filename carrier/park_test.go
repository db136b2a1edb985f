package carrier

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A parking carrier (ParkIdle) waits in Go's netpoller, its goroutine in
// "IO wait" (a carrier blocked in the poller's system call is in
// "syscall", its P kept until sysmon retakes it), and New keeps GOMAXPROCS
// at the number of carriers: with one carrier and GOMAXPROCS 1, the test's
// goroutine and an offloaded function run in the carrier's idle time.
func TestParkIdleGivesPUp(t *testing.T) {
	checkLeaks(t)
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	g := newGroup(t, Options{Carriers: 1, ParkIdle: true})
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS with one parking carrier = %d, want 1 kept", got)
	}
	inTask(t, g, func(tk *Task) {
		ran := false
		for range 20 {
			tk.Offload(func() { ran = true })
		}
		if !ran {
			t.Error("an offloaded function did not run")
		}
	})
	buf := make([]byte, 1<<20)
	var dump string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		dump = string(buf[:runtime.Stack(buf, true)])
		for _, gr := range strings.Split(dump, "\n\n") {
			if strings.Contains(gr, "(*parker).wait") && strings.Contains(gr, "[IO wait") {
				return
			}
		}
	}
	t.Errorf("no idle carrier goroutine parked in the netpoller (\"IO wait\" in parker.wait) within 5s:\n%s", dump)
}

// Timers end a parked wait on time, however the poller keeps its timer:
// many tasks sleeping short random times make waits whose deadline is a
// few hundred nanoseconds away (the timer then goes off inside the look
// before the park), and waits whose poller timer is an earlier wait's (the
// ring keeps one timeout request while it is close enough). Both once
// parked a carrier for good on io_uring.
func TestParkIdleTimers(t *testing.T) {
	checkLeaks(t)
	for _, float := range []bool{false, true} {
		g := newGroup(t, Options{Carriers: 2, ParkIdle: true, Float: float, Steal: float})
		const tasks, sleeps = 32, 60
		var left atomic.Int32
		left.Store(tasks)
		done := make(chan struct{})
		for i := range tasks {
			seed := uint64(i)
			g.Carrier(i % 2).Submit(func(tk *Task) {
				rng := rand.New(rand.NewPCG(seed, 3))
				for range sleeps {
					d := time.Duration(rng.IntN(300)) * time.Microsecond
					start := time.Now()
					tk.Sleep(d)
					if el := time.Since(start); el < d {
						t.Errorf("Sleep(%v) returned after %v", d, el)
					}
				}
				if left.Add(-1) == 0 {
					close(done)
				}
			})
		}
		within(t, done, 20*time.Second, "sleeping tasks on parking carriers")
		g.Close()
	}
}
