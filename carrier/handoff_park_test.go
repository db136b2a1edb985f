package carrier

import (
	"fmt"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestParkYield: a task that waits the Go way for far less than the
// hand-off threshold (here 2 s, so the monitor never takes it) no longer
// holds its carrier while it waits: each of its waits is for a signal that
// only another task of the same carrier sends, from a carrier timer. Before
// the park watch every wait held the carrier and ran out at its 200 ms
// fallback (0 served); now the watch takes the run on the carrier's thread
// as the task parks, counts a park yield (not a hand-off), and the task
// rejoins at its next carrier operation. Only the first two rounds'
// waits are not watched (the watch needs two runs of the last eight that
// waited, parkArmWaits): the later waits follow
// a rejoin and a short run (watched for parkArmRuns runs; with the next
// run only, 1 was served). At the end every yielded task is back and no
// watcher goroutine is left.
func TestParkYield(t *testing.T) {
	for _, cfg := range handoffConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			if cfg.o.Float {
				t.Skip("a floating carrier has no park watch: its goroutine is not locked, and a short wait holds it as before")
			}
			checkLeaks(t)
			o := cfg.o
			o.HandoffThreshold = 2 * time.Second // the monitor would take a wait (at most fallback) at 400 ms at the soonest (alertState)
			g := newGroupOrSkip(t, o)
			needHandoff(t, g)
			const rounds = 20
			const fallback = 200 * time.Millisecond
			reqs := make(chan chan struct{}, 1)
			var served atomic.Int32
			var stop atomic.Bool
			done := make(chan struct{})
			g.Go(func(tk *Task) { // the answering task: on the carrier's timer, as a backend's reply
				for !stop.Load() {
					tk.Sleep(100 * time.Microsecond)
					select {
					case r := <-reqs:
						close(r)
					default:
					}
				}
			})
			g.Go(func(tk *Task) {
				defer close(done)
				for range rounds {
					tk.Yield() // a rejoin, from the second round on
					tk.Yield() // a short run between: the wait below comes after it, still watched
					r := make(chan struct{})
					reqs <- r
					select { // waits the Go way, holding the carrier unless the watch takes the run
					case <-r:
						served.Add(1)
					case <-time.After(fallback):
						select { // not answered: take it back, unless the answerer just did
						case <-reqs:
						default:
						}
					}
				}
				tk.Yield() // rejoin, if the last wait was taken
			})
			within(t, done, rounds*fallback+10*time.Second, "the waiting task")
			stop.Store(true)
			s := g.Snapshot()[0]
			for end := time.Now().Add(5 * time.Second); s.Rejoins != s.Handoffs+s.ParkYields && time.Now().Before(end); s = g.Snapshot()[0] {
				time.Sleep(time.Millisecond)
			}
			if served.Load() < rounds/2 || s.ParkYields == 0 {
				t.Errorf("%d of %d waits answered by a task of the same carrier, %d park yields: want half of them at least, and park yields", served.Load(), rounds, s.ParkYields)
			}
			if s.Rejoins != s.Handoffs+s.ParkYields {
				t.Errorf("%d hand-offs and %d park yields, %d rejoins: want all back", s.Handoffs, s.ParkYields, s.Rejoins)
			}
			t.Logf("%d of %d waits answered; %d park yields, %d hand-offs", served.Load(), rounds, s.ParkYields, s.Handoffs)
		})
	}
}

// TestParkWatchOn: the park watch is on by default wherever runs are
// handed off and carriers are bound; off with NoParkWatch, without
// hand-off, and on floating carriers (whose watcher could not take a run
// on the same thread), each accepted by New.
func TestParkWatchOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want bool
	}{
		{"default", Options{Carriers: 1}, true},
		{"NoParkWatch", Options{Carriers: 1, NoParkWatch: true}, false},
		{"without hand-off", Options{Carriers: 1, HandoffThreshold: -1}, false},
		{"floating", Options{Carriers: 1, Float: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			switch {
			case tc.want && !g.carriers[0].ho.on:
				t.Skipf("poller %s does not hand off: no park watch", g.opts.Poller)
			case tc.want && !seqOK():
				t.Skip("gtrackseq failed its check on this runtime: no park watch (TestGetgChecks)")
			}
			if got := g.carriers[0].ho.watch; got != tc.want {
				t.Errorf("park watch on: %v, want %v", got, tc.want)
			}
		})
	}
}

// TestParkWatchArming: the watch watches the runs of a task two of whose
// last eight runs waited the Go way, and no others where every CPU is a
// carrier's. A task that computes 100 µs per run (the first rule, "the
// last run lasted 25 µs or more", watched every one of its runs:
// nethttp-carrier /fruits on one CPU paid 1.6x the CPU per request), one
// that sleeps on the carrier's own timers, and one whose run waited once
// (a collection's stop of the world or an assist looks the same) are not
// watched; one that sleeps the Go way every time is, from its third run
// on. Where a CPU is not a carrier's (spareCPU) long runs arm the watch
// too, as the first rule did: the computing task is watched there.
func TestParkWatchArming(t *testing.T) {
	const runs = 100
	compute := func(*Task) { spin(100 * time.Microsecond) }
	for _, tc := range []struct {
		name    string
		spare   bool
		run     func(*Task)
		watched bool
	}{
		{"computes", false, compute, false},
		{"computes, a spare CPU", true, compute, true},
		{"sleeps on the carrier", false, func(tk *Task) { tk.Sleep(100 * time.Microsecond) }, false},
		{"sleeps the Go way once", false, func() func(*Task) {
			once := false
			return func(*Task) {
				if !once {
					once = true
					time.Sleep(100 * time.Microsecond)
				}
			}
		}(), false},
		{"sleeps the Go way", false, func(*Task) { time.Sleep(100 * time.Microsecond) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			g := watchedGroup(t, Options{Carriers: 1})
			defer g.Close()
			g.spareCPU = tc.spare // before the first task: the carrier reads it in its runs
			done := make(chan struct{})
			g.Go(func(tk *Task) {
				defer close(done)
				for range runs {
					tc.run(tk)
					tk.Yield()
				}
			})
			within(t, done, 30*time.Second, "the task")
			s := g.Snapshot()[0]
			// A GC cycle may count as a wait once in a while (an assist
			// parks the goroutine; a stack scan makes a coroutine switch
			// go through the runtime's status change), and a loaded host
			// may stretch a 100 µs sleep past the hand-off threshold (a
			// rejoin arms parkArmRuns runs): a quarter of the runs allows
			// for three such.
			checkWatched(t, s.ParkWatched, runs, tc.watched)
			t.Logf("%d of %d runs watched, %d park yields", s.ParkWatched, runs, s.ParkYields)
		})
	}
}

// TestParkWatchYoungTasks: tasks of no history of their own (a new
// connection's) get the park watch once the carrier's recent young tasks
// waited the Go way, and not where they computed or waited on the carrier.
func TestParkWatchYoungTasks(t *testing.T) {
	const tasks = 60
	for _, tc := range []struct {
		name    string
		run     func(*Task)
		watched bool
	}{
		{"computes", func(*Task) { spin(100 * time.Microsecond) }, false},
		{"sleeps on the carrier", func(tk *Task) { tk.Sleep(100 * time.Microsecond) }, false},
		{"sleeps the Go way", func(*Task) { time.Sleep(100 * time.Microsecond) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			g := watchedGroup(t, Options{Carriers: 1})
			defer g.Close()
			for range tasks { // one at a time, each a single run
				done := make(chan struct{})
				g.Go(func(tk *Task) {
					defer close(done)
					tc.run(tk)
				})
				within(t, done, 10*time.Second, "a task")
			}
			s := g.Snapshot()[0]
			// The first young tasks that wait teach the carrier; a GC
			// cycle or a loaded host may make a run count as a wait now
			// and then (TestParkWatchArming).
			checkWatched(t, s.ParkWatched, tasks, tc.watched)
			t.Logf("%d of %d tasks' runs watched, %d park yields, %d hand-offs", s.ParkWatched, tasks, s.ParkYields, s.Handoffs)
		})
	}
}

// BenchmarkNewConnWaits: clients that connect for each request, whose
// handler waits the Go way for 200 µs (a driver's round trip), on one
// carrier, with a keep-alive echo client beside them whose round trips
// wait behind whatever holds the carrier. Without the young tasks' watch
// each new connection's wait held the carrier until the monitor handed it
// off (the hand-off threshold, 1 ms). Reported: the new connections'
// requests per second, the echo's p50 and p99 (µs), and hand-offs per
// request.
func BenchmarkNewConnWaits(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("young-watch=%v", on), func(b *testing.B) {
			defer func(old bool) { youngWatch = old }(youngWatch)
			youngWatch = on
			g := watchedGroup(b, Options{Carriers: 1, OnHandoff: func(Handoff) {}}) // no report per hand-off
			defer g.Close()
			l, err := g.Listen("127.0.0.1:0", func(tk *Task, c *Conn) {
				buf := make([]byte, 1)
				if _, err := c.Read(buf); err != nil {
					return
				}
				if buf[0] == 'w' {
					time.Sleep(200 * time.Microsecond)
				}
				c.Write(buf)
				if buf[0] == 'e' {
					echo(tk, c)
				}
			}, ListenOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			addr := l.Addr().String()
			ec, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer ec.Close()
			ebuf := []byte{'e'}
			ec.Write(ebuf)
			if _, err := io.ReadFull(ec, ebuf); err != nil {
				b.Fatal(err)
			}
			stop := make(chan struct{})
			echoed := make(chan []time.Duration, 1)
			go func() {
				var lat []time.Duration
				for {
					select {
					case <-stop:
						echoed <- lat
						return
					default:
					}
					t0 := time.Now()
					ec.Write(ebuf)
					if _, err := io.ReadFull(ec, ebuf); err != nil {
						echoed <- lat
						return
					}
					lat = append(lat, time.Since(t0))
					time.Sleep(100 * time.Microsecond)
				}
			}()
			before := g.Snapshot()[0].Handoffs
			b.ResetTimer()
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				buf := []byte{'w'}
				for pb.Next() {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						b.Error(err)
						return
					}
					c.Write(buf)
					io.ReadFull(c, buf)
					c.Close()
				}
			})
			b.StopTimer()
			close(stop)
			lat := <-echoed
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "echo-p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "echo-p99-µs")
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			b.ReportMetric(float64(g.Snapshot()[0].Handoffs-before)/float64(b.N), "handoffs/op")
		})
	}
}

// watchedGroup starts a group of o for a park watch test, which it skips
// where the carriers have no watch.
func watchedGroup(t testing.TB, o Options) *Group {
	t.Helper()
	g := newGroupOrSkip(t, o)
	if !g.carriers[0].ho.watch {
		g.Close()
		t.Skip("no park watch here (no hand-off, or gtrackseq failed its check)")
	}
	return g
}

// checkWatched fails t unless at least half of runs were watched (want),
// or at most a quarter (not want): a GC cycle may count as a wait once in
// a while, and a loaded host may stretch a 100 µs sleep past the
// hand-off threshold.
func checkWatched(t *testing.T, watched uint64, runs int, want bool) {
	t.Helper()
	if want && watched < uint64(runs/2) || !want && watched > uint64(runs/4) {
		t.Errorf("%d of %d runs watched: want %s", watched, runs, map[bool]string{true: "half of them at least", false: "a quarter at most"}[want])
	}
}
