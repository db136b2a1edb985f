package carrier

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
)

// TestParkYield: a task that waits the Go way for far less than the
// hand-off threshold (here 2 s, so the monitor never takes it) no longer
// holds its carrier while it waits: each of its waits is for a signal that
// only another task of the same carrier sends, from a carrier timer. Before
// the park watch every wait held the carrier and ran out at its 200 ms
// fallback (0 served); now the watch takes the run on the carrier's thread
// as the task parks, counts a park yield (not a hand-off), and the task
// rejoins at its next carrier operation. Only the first round's run is
// long: the later waits follow a rejoin and a short run (watched for
// parkArmRuns runs; with the next run only, 1 was served). At the end every yielded task is
// back and no watcher goroutine is left.
func TestParkYield(t *testing.T) {
	for _, cfg := range handoffConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			if cfg.o.Float {
				t.Skip("a floating carrier has no park watch: its goroutine is not locked, and a short wait holds it as before")
			}
			checkLeaks(t)
			o := cfg.o
			o.ParkWatch = true
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
				for i := range rounds {
					if i == 0 {
						for s := wait.Now(); wait.Now()-s < int64(2*parkArmAfter); { // a long run: the next ones are watched
						}
					}
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

// The park watch where it cannot watch is refused, not silently off.
func TestParkWatchOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		bad  string // substring of the error; "": accepted
	}{
		{"on", Options{Carriers: 1, ParkWatch: true}, ""},
		{"without hand-off", Options{Carriers: 1, ParkWatch: true, HandoffThreshold: -1}, "ParkWatch needs hand-off"},
		{"floating", Options{Carriers: 1, ParkWatch: true, Float: true}, "floating carriers have no park watch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(tc.o)
			switch {
			case tc.bad == "" && err != nil:
				t.Fatal(err)
			case tc.bad == "":
				g.Close()
			case err == nil:
				g.Close()
				t.Fatalf("New(%+v) accepted", tc.o)
			case !strings.Contains(err.Error(), tc.bad):
				t.Errorf("error %q: want %q", err, tc.bad)
			}
		})
	}
}
