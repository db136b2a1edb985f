package carrier

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cputest"
)

// BenchmarkSubmitToRun measures the delay from Submit on one CPU to the
// task's first instruction on a carrier pinned to another CPU, when that
// carrier waits by blocking in epoll_wait and when it spins. Before each
// submission the submitter lets 50µs pass, so that a blocking carrier is
// asleep. Metrics: median and p99 delay in ns.
func BenchmarkSubmitToRun(b *testing.B) {
	allowed, err := cpu.Allowed()
	if err != nil {
		b.Fatal(err)
	}
	if len(allowed) < 2 {
		b.Skipf("needs 2 CPUs (submitter and carrier), this process may use %s", allowed)
	}
	for _, w := range []string{"block", "busy"} {
		b.Run("wait="+w, func(b *testing.B) {
			g := newGroup(b, Options{Carriers: 1, Wait: w, Pin: PinCPU, CPUs: cpu.Set{allowed[1]}})
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := cpu.Pin(cpu.Set{allowed[0]}); err != nil {
				b.Fatal(err)
			}
			defer cpu.Pin(allowed)
			var ranAt atomic.Int64
			fn := func(*Task) { ranAt.Store(wait.Now()) }
			c := g.Carrier(0)
			lat := make([]int64, 0, b.N)
			const gap = 50_000 // ns between submissions: long enough to fall asleep
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for t := wait.Now(); wait.Now()-t < gap; {
				}
				ranAt.Store(0)
				t0 := wait.Now()
				if err := c.Submit(fn); err != nil {
					b.Fatal(err)
				}
				for ranAt.Load() == 0 {
				}
				lat = append(lat, ranAt.Load()-t0)
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2]), "median-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
		})
	}
}

// BenchmarkGoLocal measures starting and running an empty task on a
// carrier, submitted from a task of the same carrier (Task.Go), so the
// figure is the runtime's own cost without any thread wake-up.
func BenchmarkGoLocal(b *testing.B) {
	g := newGroup(b, Options{Carriers: 1})
	done := make(chan struct{})
	b.ReportAllocs()
	g.Carrier(0).Submit(func(tk *Task) {
		var ran int
		fn := func(*Task) { ran++ }
		for i := 0; i < 1000; i++ { // warm the task and coroutine pools
			tk.Go(fn)
		}
		tk.Yield()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			tk.Go(fn)
			tk.Yield()
		}
		b.StopTimer()
		close(done)
	})
	<-done
}

// BenchmarkEchoRoundTrip sends 64-byte messages through an echo handler
// and back, client and server tasks on two carriers of one group, and
// reports allocations: the Read/Write/park path allocates nothing.
func BenchmarkEchoRoundTrip(b *testing.B) { benchEcho(b, 2, 0) }

// BenchmarkImbalance measures what floating mode buys when work is
// unevenly placed after it started: 16 tasks start on carrier 0 of two
// stealing carriers while carrier 1 is busy, then carrier 1 goes idle.
// Each task runs b.N/16 iterations of 20µs of computation and a Yield
// (compute), plus a 64-byte round trip on a conn it dialed to an echo
// server on a third, pinned carrier (echo). Pinned carriers cannot move a
// started task, so carrier 0 runs all of them; floating carriers hand
// half over, with their conns. Metric: ns per iteration, from carrier 1's
// release to the last task's end.
func BenchmarkImbalance(b *testing.B) {
	for _, work := range []string{"compute", "echo"} {
		for _, float := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/float=%v", work, float), func(b *testing.B) {
				const n = 16
				per := max(1, b.N/n)
				var addr string
				if work == "echo" {
					_, l := echoGroup(b, Options{Carriers: 1}, ListenOptions{})
					addr = l.Addr().String()
				}
				var failed atomic.Value
				b.ReportAllocs()
				b.ResetTimer()
				_, el := imbalance(b, Options{Carriers: 2, Steal: true, Float: float}, n, func(tk *Task, _ *Carrier) {
					var c *Conn
					if addr != "" {
						var err error
						if c, err = tk.Dial(addr, 5*time.Second); err != nil {
							failed.Store(err)
							return
						}
						defer c.Close()
					}
					msg := make([]byte, 64)
					for i := 0; i < per; i++ {
						spin(20 * time.Microsecond)
						if c != nil {
							if _, err := c.Write(msg); err != nil {
								failed.Store(err)
								return
							}
							if _, err := io.ReadFull(c, msg); err != nil {
								failed.Store(err)
								return
							}
						}
						tk.Yield()
					}
				})
				b.StopTimer()
				if err, ok := failed.Load().(error); ok {
					b.Fatal(err)
				}
				b.ReportMetric(float64(el.Nanoseconds())/float64(per*n), "ns/iter")
			})
		}
	}
}

// BenchmarkForeignRoundTrip is a plain goroutine's 64-byte round trip
// with a net echo server over a plain net.Conn and over a carrier conn of
// a 1-carrier group (issue 25: at most 1.2x the net.Conn's). Run the two
// interleaved (-count) and compare ns/op.
func BenchmarkForeignRoundTrip(b *testing.B) {
	addr := netEcho(b)
	g := newGroup(b, Options{Carriers: 1})
	dials := []struct {
		name string
		dial func() (net.Conn, error)
	}{
		{"net.Conn", func() (net.Conn, error) { return net.Dial("tcp", addr) }},
		{"carrier conn", func() (net.Conn, error) {
			return g.Carrier(0).DialContext(context.Background(), "tcp", addr)
		}},
	}
	for _, d := range dials {
		b.Run(d.name, func(b *testing.B) {
			c, err := d.dial()
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			msg, back := make([]byte, 64), make([]byte, 64)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, back); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGreetedRoundTrip is a task's 64-byte round trip over a carrier
// conn of a 1-carrier group, with an echo server on a carrier of its own
// (so that nothing else waits in Go's netpoller, as in a server whose I/O
// is all on carriers): a conn that only tasks used ("fresh") and one that
// a goroutine used first ("greeted", as pgxpool's goroutine dials and
// greets a database conn). GOMAXPROCS is one more than the carriers, as
// spindle serve sets it: a P is idle, and a runtime thread waits in Go's
// netpoller. Besides ns/op it reports the process's CPU time per round
// trip (the echo server's included): a greeted conn whose duplicate stayed
// in Go's netpoller woke that thread at every arrival, for nothing. Run it
// on one CPU (taskset -c 1), as the server under test runs.
func BenchmarkGreetedRoundTrip(b *testing.B) {
	_, l := echoGroup(b, Options{Carriers: 1}, ListenOptions{})
	addr := l.Addr().String()
	for _, greeted := range []bool{false, true} {
		name := map[bool]string{false: "fresh", true: "greeted"}[greeted]
		b.Run(name, func(b *testing.B) {
			// After the testing package's own setting for the sub-benchmark.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
			g := newGroup(b, Options{Carriers: 1})
			nc, err := g.Carrier(0).DialContext(context.Background(), "tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			cn := nc.(*Conn)
			defer cn.Close()
			if greeted {
				msg := []byte("hello")
				if _, err := cn.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(cn, msg); err != nil {
					b.Fatal(err)
				}
			}
			done := make(chan error, 1)
			cpu0 := cputest.ProcessNs(b)
			if err := g.Carrier(0).SubmitLocal(func(*Task) { done <- benchLoop(b, cn, cn) }); err != nil {
				b.Fatal(err)
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(cputest.ProcessNs(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
