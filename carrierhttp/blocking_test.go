package carrierhttp

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/leakcheck"
)

// blockingHandlers are handlers that wait the Go way, as ordinary Go code
// does (issue 22's corpus): each must answer on carriers as it answers
// under net/http, never hang its carrier. backend is a URL answering after
// 100 ms; rt the RoundTripper of the server's kind (carrierhttp.Transport
// on carriers). Before the carriers handed off a blocked run, the first
// (singleflight over a backend call) hung every carrier that served two of
// its requests at once, for ever.
func blockingHandlers(backend string, rt http.RoundTripper) map[string]http.Handler {
	client := &http.Client{Transport: rt}
	call := func(ctx context.Context) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, backend, nil)
		if err != nil {
			return "", err
		}
		return getBody(client.Do(req))
	}
	var sf singleflight.Group
	var wgMu sync.Mutex
	var wg *sync.WaitGroup
	var wgBody string
	var mu sync.Mutex
	var condMu sync.Mutex
	cond := sync.NewCond(&condMu)
	ready := false
	polls := make(chan string, 16)
	return map[string]http.Handler{
		// Followers wait for the leader's backend call.
		"singleflight": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			v, err, _ := sf.Do("k", func() (any, error) { return call(r.Context()) })
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			io.WriteString(w, v.(string))
		}),
		// The same by hand: a WaitGroup leader and followers.
		"waitgroup": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			wgMu.Lock()
			g, leader := wg, wg == nil
			if leader {
				g = &sync.WaitGroup{}
				g.Add(1)
				wg = g
			}
			wgMu.Unlock()
			if leader {
				b, err := call(r.Context())
				if err != nil {
					b = "error: " + err.Error()
				}
				wgMu.Lock()
				wgBody, wg = b, nil
				wgMu.Unlock()
				g.Done()
				io.WriteString(w, b)
				return
			}
			g.Wait()
			wgMu.Lock()
			b := wgBody
			wgMu.Unlock()
			io.WriteString(w, b)
		}),
		// A mutex held across a sleep, contended by every request.
		"mutex": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			time.Sleep(5 * time.Millisecond)
			mu.Unlock()
			io.WriteString(w, "locked")
		}),
		// Long poll: a request with ?send waits on nothing, the others for it.
		"longpoll": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Has("send") {
				for range 16 {
					polls <- "news"
				}
				io.WriteString(w, "sent")
				return
			}
			select {
			case m := <-polls:
				io.WriteString(w, m)
			case <-time.After(3 * time.Second):
				http.Error(w, "no news", http.StatusGatewayTimeout)
			}
		}),
		// sync.Cond: the ?set request wakes the waiters.
		"cond": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			condMu.Lock()
			if r.URL.Query().Has("set") {
				ready = true
				cond.Broadcast()
			}
			for !ready {
				cond.Wait()
			}
			condMu.Unlock()
			io.WriteString(w, "ready")
		}),
		"sleep": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(20 * time.Millisecond)
			io.WriteString(w, "slept")
		}),
		// Three backend calls from goroutines of the handler's.
		"errgroup": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g, ctx := errgroup.WithContext(r.Context())
			var out [3]string
			for i := range out {
				g.Go(func() (err error) { out[i], err = call(ctx); return err })
			}
			if err := g.Wait(); err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			io.WriteString(w, strings.Join(out[:], "|"))
		}),
		"compute": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			x := uint64(1)
			for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
				for range 1000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			fmt.Fprintf(w, "computed %v", x != 0)
		}),
	}
}

// TestBlockingHandlers serves each handler of the corpus under net/http
// and on carriers (one and two, unpinned, pinned and floating, epoll and io_uring), eight
// concurrent requests each (for longpoll and cond one of them the sender),
// and wants the same answers from both within a time bound. The corpus's
// "sqlite" case (sqlite_test.go) is database/sql on a SQLite file with the
// pure-Go driver, each server with a pool of its own, smaller than the
// requests, shared by them. The "redis" and "pgxpool" cases
// (drivers_test.go) are go-redis and pgxpool against a real Redis and
// PostgreSQL: a barrier of BLPOPs woken by the last request, and the
// sqlite case's query on a pool of two.
func TestBlockingHandlers(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(100 * time.Millisecond)
		io.WriteString(w, "backend")
	}))
	t.Cleanup(slow.Close)
	names := []string{"singleflight", "waitgroup", "mutex", "longpoll", "cond", "sleep", "errgroup", "compute", "sqlite"}
	dbPath := newSQLiteDB(t)
	driverNames, driverHandler := driverCorpus(t) // "redis", "pgxpool" where their servers start
	names = append(names, driverNames...)
	// handler returns the corpus's handler called name, for a server of
	// its own: the sqlite one gets a fresh *sql.DB (a pool of its own) on
	// the one file, closed when t ends; the drivers' a client or pool of
	// their own.
	handler := func(t *testing.T, name string, rt http.RoundTripper) http.Handler {
		if name == "sqlite" {
			return sqliteHandler(openSQLite(t, dbPath), sqliteReport)
		}
		if h := driverHandler(t, name); h != nil {
			return h
		}
		return blockingHandlers(slow.URL, rt)[name]
	}
	type setup struct {
		name string
		opts carrier.Options
	}
	setups := []setup{
		{"1 carrier", carrier.Options{Carriers: 1}},
		{"2 carriers", carrier.Options{Carriers: 2}},
		{"2 carriers pinned", carrier.Options{Carriers: 2, Pin: carrier.PinCPU}},
		{"2 carriers floating", carrier.Options{Carriers: 2, Float: true}},
		{"1 carrier io_uring", carrier.Options{Carriers: 1, Poller: carrier.PollerURing}},
		{"2 carriers io_uring pinned", carrier.Options{Carriers: 2, Pin: carrier.PinCPU, Poller: carrier.PollerURing}},
		{"1 carrier parking", carrier.Options{Carriers: 1, ParkIdle: true}},
		{"2 carriers io_uring parking", carrier.Options{Carriers: 2, Poller: carrier.PollerURing, ParkIdle: true}},
	}
	for _, name := range names {
		want := serveAll(t, name, netHTTP(t, handler(t, name, http.DefaultTransport)))
		for _, su := range setups {
			t.Run(name+"/"+su.name, func(t *testing.T) {
				leakcheck.Register(t, 5*time.Second)
				_, base := serveOnCarriers(t, su.opts, func(rt http.RoundTripper) http.Handler { return handler(t, name, rt) })
				got := serveAll(t, name, base)
				if got != want {
					t.Errorf("answers on carriers %q, under net/http %q", got, want)
				}
			})
		}
	}
}

// handsOff reports whether g's carriers hand off a blocked run: they do
// where a run that blocks the Go way is counted as a hand-off, or as a
// park yield (a watcher readied for an earlier run may take it).
func handsOff(g *carrier.Group) bool {
	done := make(chan struct{})
	g.Go(func(*carrier.Task) {
		time.Sleep(10 * time.Millisecond)
		close(done)
	})
	select {
	case <-done:
	case <-time.After(2 * time.Second): // a carrier that blocks still finishes this one
	}
	time.Sleep(5 * time.Millisecond)
	first, last := g.Snapshot()[0], g.Snapshot()[len(g.Snapshot())-1]
	return first.GaveUp()+last.GaveUp() > 0
}

// serveAll sends the corpus handler's eight concurrent requests to base and
// returns their answers, sorted into one string; it fails the test past 10
// seconds (a hang).
func serveAll(t *testing.T, name, base string) string {
	t.Helper()
	const n = 8
	answers := make([]string, n)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := base + "/"
			if i == n-1 && (name == "longpoll" || name == "cond") {
				time.Sleep(50 * time.Millisecond) // the waiters first
				u += map[string]string{"longpoll": "?send", "cond": "?set"}[name]
			}
			resp, err := client.Get(u)
			if err != nil {
				answers[i] = "error"
				t.Errorf("%s request %d: %v", name, i, err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers[i] = fmt.Sprintf("%d %s", resp.StatusCode, b)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: requests hang", name)
	}
	slices.Sort(answers)
	return strings.Join(answers, ";")
}

// netHTTP serves h under net/http for the test and returns its URL.
func netHTTP(t *testing.T, h http.Handler) string {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

// serveOnCarriers serves the handler h makes on a group of options o and
// returns the group and the server's URL; h gets the RoundTripper for its
// backend calls: this Transport, or net/http's on floating carriers, for
// which this Transport is not (docs/carrierhttp.md), and which then
// blocks the Go way. It skips the test where o cannot run here (no
// io_uring) or its carriers do not hand off.
func serveOnCarriers(t *testing.T, o carrier.Options, h func(rt http.RoundTripper) http.Handler) (*carrier.Group, string) {
	t.Helper()
	g := newCarriers(t, o)
	if !handsOff(g) {
		g.Close()
		t.Skip("these carriers do not hand off a blocked run (an architecture without getm)")
	}
	tr := &Transport{}
	var rt http.RoundTripper = tr
	if o.Float {
		rt = &http.Transport{}
	}
	s := &Server{Handler: h(rt), ErrorLog: log.New(io.Discard, "", 0)}
	return g, "http://" + listenOn(t, g, s, tr.CloseIdleConnections, closeIdle(rt))
}

// closeIdle is rt's CloseIdleConnections, or nothing.
func closeIdle(rt http.RoundTripper) func() {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		return c.CloseIdleConnections
	}
	return func() {}
}
