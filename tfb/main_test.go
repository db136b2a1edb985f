package tfb

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrierhttp"
	"github.com/spindle-lab/spindle/http1"
	"github.com/spindle-lab/spindle/internal/leakcheck"
	"github.com/spindle-lab/spindle/internal/testsvc"
)

// TestMain stops the PostgreSQL server the tests and benchmarks start
// (internal/testsvc) once they have run.
func TestMain(m *testing.M) { os.Exit(testsvc.Main(m)) }

// leakWithin is how long a test's goroutines and descriptors get to be
// counted out after its cleanups (leakcheck.Register).
const leakWithin = 5 * time.Second

// setupOnce runs Setup once per binary: the tests and benchmarks share
// the tables.
var (
	setupOnce sync.Once
	setupErr  error
)

// testDSN returns the DSN of this binary's PostgreSQL, its tables made
// (Setup), skipping tb where PostgreSQL is not installed.
func testDSN(tb testing.TB) string {
	tb.Helper()
	dsn := testsvc.Postgres(tb)
	setupOnce.Do(func() {
		pool, err := pgxpool.New(context.Background(), dsn)
		if err != nil {
			setupErr = err
			return
		}
		defer pool.Close()
		setupErr = Setup(context.Background(), pool)
	})
	if setupErr != nil {
		tb.Fatal(setupErr)
	}
	return dsn
}

// checkLeaks starts the binary's PostgreSQL (whose waiting goroutine stays
// for the binary's life) and then registers tb's leak check, which runs
// after the cleanups of everything tb starts afterwards; it returns the
// DSN.
func checkLeaks(tb testing.TB) string {
	tb.Helper()
	dsn := testDSN(tb)
	leakcheck.Register(tb, leakWithin)
	return dsn
}

// A side is a server the handler is served by: net/http's, or
// carrierhttp's on a group of carriers.
type side struct {
	name     string
	carriers int // 0: net/http
}

// sides are the servers the tests run the handler on.
var sides = []side{{"nethttp", 0}, {"carrier1", 1}, {"carrier2", 2}}

// serve serves h on s at a loopback port until tb ends and returns the
// base URL, and the carriers (nil for net/http).
func (s side) serve(tb testing.TB, h http.Handler) (string, *carrier.Group) {
	tb.Helper()
	if s.carriers == 0 {
		return serveNetHTTP(tb, h), nil
	}
	return serveCarriers(tb, h, s.carriers)
}

// serveNetHTTP serves h with net/http's server.
func serveNetHTTP(tb testing.TB, h http.Handler) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	hs := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		hs.Serve(ln)
	}()
	tb.Cleanup(func() {
		hs.Close()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// serveCarriers serves h with a carrierhttp.Server on a fresh group of n
// carriers, whose hand-offs are counted but not logged.
func serveCarriers(tb testing.TB, h http.Handler, n int) (string, *carrier.Group) {
	tb.Helper()
	g, err := carrier.New(carrier.Options{Carriers: n, OnHandoff: func(carrier.Handoff) {}})
	if err != nil {
		tb.Fatal(err)
	}
	s := &carrierhttp.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	l, err := s.Listen(g, "127.0.0.1:0", carrier.ListenOptions{})
	if err != nil {
		g.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.Close()
		g.Close()
	})
	return "http://" + l.Addr().String(), g
}

// servePolled serves NewPools on a fresh group of n carriers, with one
// pool of poolSize conns per carrier dialled on it (Carrier.DialContext):
// a request's queries go over conns its own carrier polls.
func servePolled(tb testing.TB, dsn string, n int, poolSize int32) (string, *carrier.Group) {
	tb.Helper()
	var h atomic.Pointer[http.Handler]
	base, g := serveCarriers(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }), n)
	pools, err := NewCarrierPools(context.Background(), g, dsn, poolSize)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { // before the group's close, registered earlier
		for _, p := range pools.All() {
			p.Close()
		}
	})
	ph := NewPools(pools.Get)
	h.Store(&ph)
	return base, g
}

// serveNative serves Answers from spindle's own HTTP/1 handler on a fresh
// group of n carriers, each with a pool of poolSize conns it polls, as
// spindle serve's carrier mode does (server.serveTFB, which adds the
// server's /health and metrics).
func serveNative(tb testing.TB, dsn string, n int, poolSize int32) string {
	tb.Helper()
	g, err := carrier.New(carrier.Options{Carriers: n, OnHandoff: func(carrier.Handoff) {}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { g.Close() }) // after the pools' close, registered later
	pools, err := NewCarrierPools(context.Background(), g, dsn, poolSize)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		for _, p := range pools.All() {
			p.Close()
		}
	})
	a := NewAnswers(pools.Get)
	o := http1.Options{Server: ServerName}.WithDefaults()
	l, err := g.Listen("127.0.0.1:0", func(t *carrier.Task, c *carrier.Conn) {
		ctx := carrier.ContextWithTask(context.Background(), t)
		http1.ServeConn(c, o, func(req *http1.Request, rep *http1.Reply) {
			path, query, _ := strings.Cut(string(req.Target), "?")
			a.Answer(ctx, string(req.Method), path, query).Fill(rep)
		}, nil)
	}, carrier.ListenOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return "http://" + l.Addr().String()
}

// newClient is an HTTP client keeping up to conns connections alive,
// closed when tb ends; timeout bounds each request.
func newClient(tb testing.TB, conns int, timeout time.Duration) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: timeout}
}
