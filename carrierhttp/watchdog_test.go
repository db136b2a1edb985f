package carrierhttp

import (
	"io"
	"log"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/leakcheck"
	"github.com/spindle-lab/spindle/internal/syncbuf"
)

// startOne serves h on a group of one carrier.
func startOne(t *testing.T, h http.Handler, logTo io.Writer) (*Server, *carrier.Group, string) {
	t.Helper()
	return startOneWith(t, carrier.Options{Carriers: 1}, h, logTo)
}

// startOneWith serves h on a group of options o.
func startOneWith(t *testing.T, o carrier.Options, h http.Handler, logTo io.Writer) (*Server, *carrier.Group, string) {
	t.Helper()
	leakcheck.Register(t, 5*time.Second)
	g, err := carrier.New(o)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, ErrorLog: log.New(logTo, "", 0)}
	return s, g, listenOn(t, g, s)
}

func sleeper(d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(d) // blocks the Go way
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Slept", d.String())
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "slept, read "+string(b))
	})
}

// TestWatchdog: a handler that blocks the Go way past the watchdog's
// threshold is counted and logged once, naming its request and saying
// what its carrier did: went on without it (the hand-off) or waited for
// it (no hand-off).
func TestWatchdog(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold time.Duration
		what      string
	}{
		{"hand-off", 0, "its carrier handed the run off and went on without it"},
		{"no hand-off", -1, "it held its carrier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			mux := http.NewServeMux()
			mux.Handle("/blocks", sleeper(60*time.Millisecond))
			mux.HandleFunc("/quick", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "quick") })
			s, g, addr := startOneWith(t, carrier.Options{Carriers: 1, HandoffThreshold: tc.threshold}, mux, &logs)
			for _, path := range []string{"/quick", "/blocks?x=1", "/quick"} {
				got := exchange(t, addr, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", nil, 100*time.Millisecond)
				if len(got.Responses) != 1 {
					t.Fatalf("%s: %s", path, got)
				}
			}
			if n := s.Pinned(); n != 1 {
				t.Errorf("Server.Pinned = %d, want 1 (the one blocking handler)", n)
			}
			if n := g.Snapshot()[0].Pinned; n < 1 {
				t.Errorf("carrier telemetry Pinned = %d, want at least 1", n)
			}
			if l := logs.String(); strings.Count(l, "ran over 20ms without parking") != 1 || !strings.Contains(l, "GET /blocks?x=1") || !strings.Contains(l, tc.what) {
				t.Errorf("log %q: want one line naming GET /blocks?x=1 and saying %q", l, tc.what)
			}
		})
	}
}

// TestOffloadHandler: a handler that sleeps the Go way, offloaded, keeps
// its carrier free (a quick request is answered while it sleeps), is not
// counted by the watchdog, and answers as it would unwrapped. The checks
// are orderings, not wall-clock bounds, so a busy machine cannot fail
// them: the quick answer must come before the sleeper's, and the watchdog
// must not name the sleeper (on a machine busy enough to keep the
// carrier's thread off the CPU for 20 ms, the quick handler's run may be
// counted, as the watchdog counts wall time).
func TestOffloadHandler(t *testing.T) {
	var logs syncbuf.Buffer
	mux := http.NewServeMux()
	mux.Handle("/slow", OffloadHandler(sleeper(time.Second)))
	mux.HandleFunc("/quick", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "quick") })
	_, _, addr := startOne(t, mux, &logs)
	slow := make(chan outcome, 1)
	go func() {
		slow <- exchange(t, addr, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody", nil, 100*time.Millisecond)
	}()
	time.Sleep(50 * time.Millisecond) // the slow handler is running
	quick := exchange(t, addr, "GET /quick HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", nil, 100*time.Millisecond)
	if len(quick.Responses) != 1 {
		t.Errorf("quick request beside an offloaded sleeper: %s", quick)
	}
	select {
	case got := <-slow:
		t.Fatalf("the quick request was answered only after the offloaded sleeper (%s)", got)
	default:
	}
	got := <-slow
	if len(got.Responses) != 1 || !strings.Contains(got.Responses[0], " 202 ") ||
		!strings.Contains(got.Responses[0], `X-Slept: ["1s"]`) || !strings.Contains(got.Responses[0], "slept, read body") {
		t.Errorf("offloaded answer: %s", got)
	}
	if l := logs.String(); strings.Contains(l, "/slow") {
		t.Errorf("the watchdog counted the offloaded handler: %q", l)
	}
}

// TestLogEvery: the watchdog logs at most one line a second, and the line
// after a quiet second says how many it held back.
func TestLogEvery(t *testing.T) {
	var l logEvery
	t0 := time.Unix(1000, 0)
	for _, step := range []struct {
		at       time.Duration
		wantOK   bool
		wantHeld int64
	}{
		{0, true, 0},
		{10 * time.Millisecond, false, 0},
		{999 * time.Millisecond, false, 0},
		{time.Second, true, 2},
		{1500 * time.Millisecond, false, 0},
		{3 * time.Second, true, 1},
		{5 * time.Second, true, 0},
	} {
		held, ok := l.due(t0.Add(step.at))
		if ok != step.wantOK || held != step.wantHeld {
			t.Errorf("at +%v: due = %d, %v; want %d, %v", step.at, held, ok, step.wantHeld, step.wantOK)
		}
	}
}
