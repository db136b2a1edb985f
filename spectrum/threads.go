package spectrum

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
)

// The background modes. The waiting modes (busy, pause, block, adaptive,
// tpause, umwait) are carrier/wait strategies polling the shared line; the
// others compute.
const (
	ModeMatmul = "matmul" // the foreground's kernel: compute-heavy background
	ModeWork   = "work"   // pseudo packets without pause: a saturated stack
)

// Modes lists every background mode in display order.
func Modes() []string { return append([]string{ModeMatmul, ModeWork}, wait.Names()...) }

// ModeAvailable returns nil when this machine can run mode, else an error
// wrapping ErrNotSupported (tpause and umwait without WAITPKG) or naming the
// valid modes.
func ModeAvailable(mode string) error {
	switch mode {
	case ModeMatmul, ModeWork:
		return nil
	}
	err, ok := wait.Available()[mode]
	if !ok {
		return fmt.Errorf("unknown background mode %q (want one of %v)", mode, Modes())
	}
	return err
}

// threadStats is what one pinned thread reports.
type threadStats struct {
	ops     int64 // matmuls (foreground, matmul background)
	packets int64 // pseudo packets processed
	elapsed time.Duration
	usage   unix.ThreadUsage // CPU time and context switches over the run
	procNs  int64            // CPU time spent processing packets
	blocks  int64            // waits that blocked in the kernel
	spunNs  int64            // time the strategy reported spinning
	wakes   []int64          // wake latencies, ns
	dropped int64            // wake latencies not kept (buffer full)
	err     error
}

// maxWakes bounds the wake latencies one thread keeps: 100µs periods for
// 60 s; beyond it latencies are counted as dropped.
const maxWakes = 600_000

// gate starts a group of threads together and stops them together.
type gate struct {
	ready sync.WaitGroup // each thread is pinned and set up
	start chan struct{}  // closed to start
	stop  atomic.Bool
	done  sync.WaitGroup
}

func newGate() *gate { return &gate{start: make(chan struct{})} }

// pinned runs body on a new OS thread pinned to c. The thread stays locked
// until it exits, so its affinity never leaks to other goroutines.
func (g *gate) pinned(c int, name string, out *threadStats, body func(out *threadStats)) {
	g.ready.Add(1)
	g.done.Add(1)
	go func() {
		defer g.done.Done()
		runtime.LockOSThread()
		if err := cpu.Pin(cpu.Set{c}); err != nil {
			out.err = err
			g.ready.Done()
			return
		}
		_ = unix.SetThreadName(name) // a name only helps perf and top
		g.ready.Done()
		<-g.start
		usage, err := usageOf(func() {
			t0 := time.Now()
			body(out)
			out.elapsed = time.Since(t0)
		})
		if err != nil {
			out.err = err
			return
		}
		out.usage = usage
	}()
}

// usageOf runs f on the calling (locked) thread and returns the thread's CPU
// time and context switches over it.
func usageOf(f func()) (unix.ThreadUsage, error) {
	u0, err0 := unix.GetThreadUsage()
	f()
	u1, err1 := unix.GetThreadUsage()
	if err := errors.Join(err0, err1); err != nil {
		return unix.ThreadUsage{}, err
	}
	return unix.ThreadUsage{
		UserNs: u1.UserNs - u0.UserNs, SysNs: u1.SysNs - u0.SysNs,
		Voluntary: u1.Voluntary - u0.Voluntary, Involuntary: u1.Involuntary - u0.Involuntary,
	}, nil
}

// spareProcs are the Ps left for everything that is not a pinned thread:
// the goroutine that times the run and the runtime's own work.
const spareProcs = 2

// enoughProcs raises GOMAXPROCS so that each of threads pinned threads
// holds a P of its own, and returns the function that restores it. A
// locked thread runs Go code only while it holds a P: with GOMAXPROCS at
// the CPU count, spinning foreground and background threads hold every P,
// and a driver or poller returning from a sleep waits for Go's scheduler to
// preempt one of them (up to 10ms), whatever its OS priority. With a P
// each, the kernel alone decides who runs, as the experiment intends.
func enoughProcs(threads int) (restore func()) {
	prev := runtime.GOMAXPROCS(0)
	if need := threads + spareProcs; need > prev {
		runtime.GOMAXPROCS(need)
		return func() { runtime.GOMAXPROCS(prev) }
	}
	return func() {}
}

// noGC turns the collector off until the returned function is called
// (SetGCPercent(-1) waits for a collection under way to finish, so none
// runs once it returns). A collection stops the world, and the world stops only
// once every goroutine has reached a safe point: a foreground thread sharing
// a CPU with a real-time poller that spins may not run for hundreds of
// milliseconds (until the kernel's real-time throttling lets it), and the
// driver and pollers stand still all that time (dev-2vcpu: flips 874ms late).
// A run allocates only its wake-latency records, bounded by maxWakes.
func noGC() (restore func()) {
	prev := debug.SetGCPercent(-1)
	return func() { debug.SetGCPercent(prev) }
}

// matmulLoop multiplies until the gate closes; seed picks the matrices.
func matmulLoop(g *gate, k Kernel, seed uint64) func(*threadStats) {
	rng := rand.New(rand.NewPCG(seed, 1))
	a, b := RandomIntMatrix(rng), RandomIntMatrix(rng)
	return func(out *threadStats) {
		var dst Matrix
		var n int64
		for !g.stop.Load() {
			k.Mul(&dst, a, b)
			n++
		}
		out.ops = n
	}
}

// workLoop processes pseudo packets until the gate closes.
func workLoop(g *gate) func(*threadStats) {
	return func(out *threadStats) {
		p := NewPacket()
		var n int64
		for !g.stop.Load() {
			p.Process()
			n++
		}
		out.packets = n
	}
}

// steadyPoll is how long a waiting thread on a line that never becomes busy
// waits per Wait call: the paper's Block mode "sleeps between polls", and
// 1ms is a typical poll timer for a network stack.
const steadyPoll = time.Millisecond

// pollLoop waits on line with s. With bursts, every busy period is
// processed (pseudo packets until the line goes idle) and its wake latency
// kept; without, the line stays idle and s just waits, a Wait per steadyPoll.
func pollLoop(line *Line, s wait.Strategy, bursty bool) func(*threadStats) {
	t := line.Target()
	return func(out *threadStats) {
		p := NewPacket()
		out.wakes = make([]int64, 0, 1024)
		var lastSeq uint64
		for !line.Closed() {
			if !line.Busy() {
				deadline := int64(-1)
				if !bursty {
					deadline = wait.Now() + int64(steadyPoll)
				}
				r := s.Wait(t, deadline)
				out.spunNs += int64(r.Spun)
				// A spin that reached its deadline also reports
				// KindTimer; only a wait that slept paid a block-and-wake.
				if r.Kind == wait.KindBlock || (r.Kind == wait.KindTimer && r.Blocked > 0) {
					out.blocks++
				}
			}
			if !line.Busy() || line.Closed() {
				continue
			}
			now := wait.Now()
			if seq, at := line.Since(); seq != lastSeq {
				lastSeq = seq
				if len(out.wakes) < maxWakes {
					out.wakes = append(out.wakes, max(now-at, 0))
				} else {
					out.dropped++
				}
			}
			// The packets' CPU time, read after the wake-up was stamped,
			// is what the waiting cost leaves out.
			cpu0 := unix.ThreadCPUTime()
			var n int64
			for line.Busy() && !line.Closed() {
				p.Process()
				n++
			}
			out.packets += n
			out.procNs += unix.ThreadCPUTime() - cpu0
		}
	}
}
