package carrier

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
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
	parkedCarrier(t)
}

// parkedCarrier returns the stack of an idle carrier's goroutine parked in
// the netpoller ("IO wait" in parker.wait), its header first; "" (and a
// test error) when none parks within 5 s.
func parkedCarrier(t *testing.T) string {
	t.Helper()
	buf := make([]byte, 1<<20)
	var dump string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		dump = string(buf[:runtime.Stack(buf, true)])
		for _, gr := range strings.Split(dump, "\n\n") {
			if strings.Contains(gr, "(*parker).wait") && strings.Contains(gr, "[IO wait") {
				return gr
			}
		}
	}
	t.Errorf("no idle carrier goroutine parked in the netpoller (\"IO wait\" in parker.wait) within 5s:\n%s", dump)
	return ""
}

// A bound carrier parks with its goroutine unlocked, so that the thread
// that finds it ready runs it, with no hand-off of the P between threads
// (a locked one cost two futex wake-ups and two context switches per
// wake-up: 7 µs of CPU per request at 10,000/s); its tasks still run on
// its thread, pinned to its CPU, wherever it woke. With N+1 it parks
// locked, so that its thread runs nothing but the carrier.
func TestParkIdleUnlocked(t *testing.T) {
	allowed, err := cpu.ProcessAllowed()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		opts   Options
		locked bool
	}{
		{"pinned", Options{Carriers: 1, Pin: PinCPU}, false},
		{"hands off", Options{Carriers: 1, Pin: PinCPU, HandoffThreshold: DefaultHandoffThreshold}, false},
		{"N+1", Options{NPlusOne: true, Pin: PinCPU}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.NPlusOne && len(allowed) < 2 {
				t.Skipf("N+1 needs 2 CPUs, this process may use %s", allowed)
			}
			if !mOK() {
				t.Skip("getm failed its check: carriers park locked")
			}
			checkLeaks(t)
			tc.opts.ParkIdle = true
			g := newGroup(t, tc.opts)
			c := g.Carrier(0)
			for range 3 { // parks between runs, wherever they wake
				inTask(t, g, func(tk *Task) {
					tk.Sleep(time.Millisecond)
					if got, want := unix.Gettid(), int(c.tid.Load()); got != want {
						t.Errorf("a task runs on thread %d, its carrier's is %d", got, want)
					}
					if got, err := unix.SchedGetaffinity(0); err != nil || !slices.Equal(got, []int{c.CPU()}) {
						t.Errorf("a task runs with affinity %v (%v), want its carrier's CPU [%d]", got, err, c.CPU())
					}
				})
			}
			gr := parkedCarrier(t)
			header, _, _ := strings.Cut(gr, "\n")
			if locked := strings.Contains(header, "locked to thread"); locked != tc.locked {
				t.Errorf("the parked carrier's goroutine: %q, want locked %v", header, tc.locked)
			}
		})
	}
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

// Parking carriers keep GOMAXPROCS at their number, so a run that computes
// holds the only P: the monitor gives the process a spare P (the surge)
// once it sees one, so that it and the carrier each have a P, and takes it
// back surgeHold after the last computing run, or at Close.
func TestParkIdleSurge(t *testing.T) {
	if !mOK() || !statusOK() {
		t.Skip("getm or gstatus failed its check: no hand-off")
	}
	for _, closeEarly := range []bool{false, true} {
		t.Run(fmt.Sprintf("close during the surge %v", closeEarly), func(t *testing.T) {
			checkLeaks(t)
			prev := runtime.GOMAXPROCS(1)
			defer runtime.GOMAXPROCS(prev)
			g := newGroup(t, Options{Carriers: 1, ParkIdle: true, HandoffThreshold: DefaultHandoffThreshold, OnHandoff: func(Handoff) {}})
			if !g.Carrier(0).ho.on {
				t.Skipf("carriers on %s do not hand off", g.opts.Poller)
			}
			inTask(t, g, func(tk *Task) {
				for end := time.Now().Add(60 * time.Millisecond); time.Now().Before(end); {
				}
			})
			surged := false
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !surged; time.Sleep(time.Millisecond) {
				surged = runtime.GOMAXPROCS(0) == 2
			}
			if s := g.Snapshot()[0]; !surged || s.Surges == 0 {
				t.Fatalf("after a 60 ms computing run: GOMAXPROCS %d, %d surges, %d hand-offs; want 2 and a surge", runtime.GOMAXPROCS(0), s.Surges, s.Handoffs)
			}
			if closeEarly {
				if err := g.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				time.Sleep(surgeHold + 200*time.Millisecond)
			}
			if got := runtime.GOMAXPROCS(0); got != 1 {
				t.Errorf("GOMAXPROCS %d after the surge, want 1 back", got)
			}
		})
	}
}

// TestParkIdleComputeSeen has a parking carrier, alone on the only P,
// compute for 150 ms as a request comes after an idle second and a half:
// the run must be handed off within 60 ms (13-19 ms measured on a
// server). While every P is idle Go's sysmon sleeps until the next Go timer
// or a system call made through the runtime, and neither comes: the
// carrier's system calls are raw, and the byte comes from another process
// (bash), so that this one makes no system call as it comes, as a server's
// keep-alive client does. Without the timer the monitor keeps pending
// (surgeState.boundSysmon) nothing preempted the run, the monitor had no P
// to look with, and the run was never handed off.
func TestParkIdleComputeSeen(t *testing.T) {
	if !mOK() || !statusOK() {
		t.Skip("getm or gstatus failed its check: no hand-off")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash, the test's client")
	}
	checkLeaks(t)
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	var held atomic.Int64
	g := newGroup(t, Options{Carriers: 1, ParkIdle: true, HandoffThreshold: DefaultHandoffThreshold,
		OnHandoff: func(h Handoff) { held.CompareAndSwap(0, int64(h.Held)) }})
	if !g.Carrier(0).ho.on {
		t.Skipf("carriers on %s do not hand off", g.opts.Poller)
	}
	const rounds = 2
	computed := make(chan struct{}, rounds)
	l, err := g.Listen("127.0.0.1:0", func(tk *Task, c *Conn) {
		buf := make([]byte, 1)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			spin(150 * time.Millisecond)
			computed <- struct{}{}
		}
	}, ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	// Each byte comes 1.5 s after the last: past the surge of the last
	// round's hand-off (surgeHold), whose end wakes sysmon.
	client := exec.Command(bash, "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%d; for i in 1 2; do sleep 1.5; printf x >&3; done; sleep 2", addr.IP, addr.Port))
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	defer client.Wait()
	defer client.Process.Kill()
	for round := range rounds {
		within(t, computed, 10*time.Second, "the computing run")
		if h := time.Duration(held.Swap(0)); h == 0 || h > 60*time.Millisecond {
			t.Fatalf("round %d: a 150 ms computing run after an idle 1.5 s handed off after %v (0: never); want within 60 ms", round, h)
		}
	}
}
