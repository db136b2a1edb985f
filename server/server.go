// Package server is the system under test of the scheduler study: an HTTP
// server whose /fruits handler makes a blocking GET to the mock backend,
// decodes its JSON into structs, re-encodes it compactly and answers, in
// four scheduling designs:
//
//   - ModeNetHTTP: idiomatic net/http server and client, a goroutine per
//     connection on Go's work-stealing scheduler and netpoller (the study's
//     ForkJoinPool baseline).
//   - ModeHandoff: carriers do the client network I/O; each request's
//     handler runs on a plain goroutine (Task.Offload) with a blocking
//     net/http backend client, and the answer goes back to the carrier
//     (the study's event loops plus separate workers).
//   - ModeCarrier: everything on carriers, with affinity: the connection's
//     task parses, calls the backend on a socket polled by the same carrier,
//     transforms and writes; no goroutine per connection or request (the
//     study's custom scheduler).
//   - ModeNetHTTPCarrier: ModeNetHTTP's handler and http.Client code, the
//     same functions, hosted on carriers by carrierhttp (the handler runs in
//     the connection's task; the backend exchange is polled by its carrier):
//     one application under two schedulers.
//
// Every mode keeps one keep-alive backend connection per client connection
// (ModeNetHTTPCarrier: a pool per carrier, one per request in flight),
// answers 502 when the backend refuses, resets, closes, fails or sends
// something unusable, 504 when it is slower than the backend timeout, and
// reconnects on the next request. The /fruits body is byte-identical in
// every mode.
//
// With Options.BlockingEndpoint, /block runs a handler that blocks the Go
// way (a sleep, a mutex, a singleflight follower's wait; block.go), for
// measuring how each mode keeps the other requests from waiting behind it.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/singleflight"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrierhttp"
	"github.com/spindle-lab/spindle/http1"
	"github.com/spindle-lab/spindle/internal/memrelease"
	"github.com/spindle-lab/spindle/mock"
	"github.com/spindle-lab/spindle/tfb"
)

// Defaults for Options; the spindle command reuses them as flag defaults.
const (
	DefaultPort    = 8081
	DefaultBackend = "http://127.0.0.1:8080/fruits"
	// DefaultBackendTimeout bounds one backend exchange (connect, request
	// and response) before the client gets 504.
	DefaultBackendTimeout = 2 * time.Second
)

// Options configure a server.
type Options struct {
	// Mode is the scheduling design (one of Modes); "": ModeNetHTTP.
	Mode Mode
	// Addr is the listen address, "ip:port" or ":port"; port 0 picks one.
	Addr string
	// Backend is the URL of the mock's /fruits; "": DefaultBackend. Only
	// http URLs with a literal or resolvable host are supported.
	Backend string
	// BackendTimeout bounds each backend exchange; 0: DefaultBackendTimeout.
	BackendTimeout time.Duration
	// Threads is the number of carriers (handoff, carrier, nethttp-carrier) or GOMAXPROCS
	// (nethttp, process-wide, restored by Close); 0: the runtime's default
	// (one carrier per CPU of the set; GOMAXPROCS unchanged).
	Threads int
	// Carrier configures the carriers (handoff, carrier, nethttp-carrier): CPUs, wait
	// strategy, stealing, pinning, N+1. Its Carriers field is set from
	// Threads. In nethttp mode only Carrier.CPUs is used: the whole
	// process is moved onto those CPUs (not undone by Close).
	Carrier carrier.Options
	// ReusePort gives every carrier its own SO_REUSEPORT listener instead
	// of one acceptor that hands connections out round-robin.
	ReusePort bool
	// AdminAddr is where /metrics, /debug/pprof/, /debug/carrier and
	// /debug/runtime are served; "": no admin server.
	AdminAddr string
	// HTTP are the client request limits and timeouts (every mode; the
	// carrier modes drop request bodies as they arrive whatever its
	// DiscardBody says: no handler reads them).
	HTTP http1.Options
	// MaxConns bounds the client connections open at once; a connection
	// beyond it is accepted and closed at once, and counted in
	// spindle_server_rejected_connections_total. 0: no bound.
	MaxConns int
	// BlockingEndpoint serves GET /block?kind=K&d=D (block.go,
	// docs/server.md "Blocking endpoint"): handlers that block the Go way
	// (time.Sleep, a mutex, a singleflight follower's wait) beside the
	// study's, to measure how each mode keeps its other requests from
	// waiting behind them. false: /block is 404 like any unknown path.
	BlockingEndpoint bool
	// App is the application served: AppFruits ("": the default) or
	// AppTFB, which runs in TFBModes only, with its database at DB.
	App App
	// DB is AppTFB's PostgreSQL database, a URL
	// ("postgres://user@host:port/db?sslmode=disable") or key=value
	// string as pgx reads it. Start fails when it does not answer.
	DB string
	// DBPool bounds AppTFB's connections to DB: in nethttp mode the
	// server's, in nethttp-carrier mode each carrier's (a pool per
	// carrier); 0: tfb.DefaultPoolSize.
	DBPool int
	// DBGoConns, in nethttp-carrier and carrier modes, gives AppTFB one pool of
	// ordinary net.Conns, as nethttp's, instead of a pool per carrier
	// dialled on it: the handlers then wait for PostgreSQL the Go way (and
	// are handed off) where they park on their carrier otherwise. It shows
	// what the carrier-polled conns buy (issue 25).
	DBGoConns bool
}

// Server is a running server.
type Server struct {
	o       Options
	backend backendURL
	ln      net.Addr

	group *carrier.Group      // handoff, carrier
	cl    *carrier.Listener   // handoff, carrier
	hs    *http.Server        // nethttp
	hc    *carrierhttp.Server // nethttp-carrier
	procs int                 // GOMAXPROCS to restore (nethttp), 0: none
	// closeBackends closes the nethttp mode's backend clients.
	closeBackends func()
	// handler is the net/http handler of the nethttp and nethttp-carrier
	// modes: the app's.
	handler http.Handler
	// closeDB closes AppTFB's database pools (dbPools); nil without.
	closeDB func()
	dbPools []*pgxpool.Pool
	// tfb is AppTFB's answers in carrier mode (serveTFB).
	tfb     *tfb.Answers
	admin   *http.Server
	adminLn net.Listener
	m       *metrics
	// blockMu and flights are /block's mutex and singleflight calls.
	blockMu sync.Mutex
	flights singleflight.Group

	closeOnce sync.Once
	done      chan struct{}
	closeErr  error
	serveErr  chan error // nethttp Serve's result
	wg        sync.WaitGroup
}

// backendURL is the parsed backend address.
type backendURL struct {
	raw    string // the URL as given
	addr   string // host:port to dial
	host   string // Host header value
	target string // request target ("/fruits")
}

// CheckBackend reports whether raw is a backend URL Start accepts (an
// http://host:port/path URL), so that a command refuses a bad one as bad
// input before starting anything.
func CheckBackend(raw string) error {
	_, err := parseBackend(raw)
	return err
}

func parseBackend(raw string) (backendURL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return backendURL{}, fmt.Errorf("backend %q: %w", raw, err)
	}
	if u.Scheme != "http" || u.Host == "" {
		return backendURL{}, fmt.Errorf("backend %q: want an http://host:port/path URL", raw)
	}
	b := backendURL{raw: raw, host: u.Host, target: u.RequestURI()}
	b.addr = u.Host
	if u.Port() == "" {
		b.addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return b, nil
}

// Start starts a server; it stops when ctx is cancelled or Close is called.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Mode == "" {
		o.Mode = ModeNetHTTP
	}
	if o.Backend == "" {
		o.Backend = DefaultBackend
	}
	if o.BackendTimeout <= 0 {
		o.BackendTimeout = DefaultBackendTimeout
	}
	if o.Threads < 0 {
		return nil, fmt.Errorf("server: threads %d: must not be negative", o.Threads)
	}
	if o.MaxConns < 0 {
		return nil, fmt.Errorf("server: max conns %d: must not be negative", o.MaxConns)
	}
	o.HTTP.DiscardBody = true
	if o.App == "" {
		o.App = AppFruits
	}
	if err := CheckApp(o.App, o.Mode); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if o.App == AppTFB {
		if err := CheckDB(o.DB, o.DBPool); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		if o.BlockingEndpoint {
			return nil, fmt.Errorf("server: app %s does not serve %s (the blocking endpoint is the fruits app's)", o.App, BlockPath)
		}
	}
	b, err := parseBackend(o.Backend)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{o: o, backend: b, done: make(chan struct{}), m: newMetrics(o.Mode.String())}
	if o.AdminAddr != "" {
		// Bound before the mode answers: whoever saw /health answer may
		// read the admin port at once (its connections wait in the
		// backlog until it serves).
		if s.adminLn, err = net.Listen("tcp", o.AdminAddr); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	if spec, ok := lookupMode(o.Mode); ok {
		err = spec.start(s)
	} else {
		err = fmt.Errorf("unknown mode %v", o.Mode)
	}
	if err == nil && o.AdminAddr != "" {
		err = s.startAdmin()
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		select {
		case <-ctx.Done():
			s.shutdown()
		case <-s.done:
		}
	}()
	// Memory a burst of connections used goes back to the OS once it ends
	// (package memrelease says why a server has to ask).
	go func() {
		defer s.wg.Done()
		memrelease.New(s.m.openConns.Load, memrelease.Options{}).Run(s.done)
	}()
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln }

// AdminAddr returns the admin server's address, or nil without one.
func (s *Server) AdminAddr() net.Addr {
	if s.adminLn == nil {
		return nil
	}
	return s.adminLn.Addr()
}

// Close stops the server: listeners, client and backend connections,
// carriers and the admin server. Nothing it started survives it.
func (s *Server) Close() error {
	s.shutdown()
	s.wg.Wait()
	return s.closeErr
}

func (s *Server) shutdown() {
	s.closeOnce.Do(func() {
		var errs []error
		switch {
		case s.admin != nil:
			errs = append(errs, s.admin.Close())
		case s.adminLn != nil: // bound, never served: New failed
			errs = append(errs, s.adminLn.Close())
		}
		if s.hs != nil {
			errs = append(errs, s.hs.Close())
			if err := <-s.serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs = append(errs, err)
			}
			s.closeBackends()
		}
		if s.hc != nil {
			s.hc.Close()
		}
		if s.closeDB != nil { // before the carriers its pools' conns are on
			s.closeDB()
		}
		if s.cl != nil {
			errs = append(errs, ignoreClosed(s.cl.Close()))
		}
		if s.group != nil {
			errs = append(errs, s.group.Close())
		}
		if s.hc != nil && s.closeBackends != nil {
			s.closeBackends() // the fallback client's idle connections, if any
		}
		if s.procs > 0 {
			runtime.GOMAXPROCS(s.procs)
		}
		s.closeErr = errors.Join(errs...)
		close(s.done)
	})
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Answers that do not depend on the backend.
var (
	healthBody   = []byte("OK")
	notFoundBody = []byte("Not Found")
	// methodNotAllowedBody answers CONNECT, with allowMethods in its
	// Allow field (RFC 9110 §15.5.6: a 405 must list what is allowed).
	methodNotAllowedBody = []byte("Method Not Allowed")
	textPlain            = "text/plain; charset=utf-8"
	appJSON              = "application/json"
)

// route is what a path asks for.
type route int

const (
	routeNotFound route = iota
	routeHealth
	routeFruits
	routeOptions // OPTIONS *: 200, no body
	routeConnect // CONNECT: 405, close (not a proxy)
	routeBlock   // /block: with Options.BlockingEndpoint (block.go), else 404
)

// routeOf maps a raw path (the request target before any '?') to its route.
func routeOf[T string | []byte](path T) route {
	switch string(path) {
	case "/health":
		return routeHealth
	case "/fruits":
		return routeFruits
	case BlockPath:
		return routeBlock
	}
	return routeNotFound
}

// transform decodes the backend's fruits and encodes them compactly: the
// work the study's handler does between its backend call and its answer.
func transform(src []byte) ([]byte, error) {
	var fruits []mock.Fruit
	if err := json.Unmarshal(src, &fruits); err != nil {
		return nil, &backendError{kind: "decode", err: err}
	}
	return json.Marshal(fruits)
}

// backendError is a failed backend exchange, classified.
type backendError struct {
	kind string // refused, reset, timeout, status, decode, protocol
	err  error
}

func (e *backendError) Error() string { return "backend " + e.kind + ": " + e.err.Error() }
func (e *backendError) Unwrap() error { return e.err }

// status is the answer to the client: 504 for a slow backend, else 502.
func (e *backendError) status() int {
	if e.kind == "timeout" {
		return 504
	}
	return 502
}

var errBadStatus = errors.New("backend answered a status other than 200")

// classify turns a backend I/O error into a backendError.
func classify(err error) *backendError {
	var be *backendError
	if errors.As(err, &be) {
		return be
	}
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return &backendError{kind: "timeout", err: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &backendError{kind: "refused", err: err}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &backendError{kind: "reset", err: err}
	case errors.Is(err, errBadStatus):
		return &backendError{kind: "status", err: err}
	}
	return &backendError{kind: "protocol", err: err}
}

// fruits answers /fruits from a backend body, or the error's status.
func (s *Server) fruits(body []byte, err error) (status int, ctype string, out []byte) {
	if err == nil {
		out, err = transform(body)
	}
	if err != nil {
		be := classify(err)
		s.m.backendError(be.kind)
		return be.status(), textPlain, []byte(http1.StatusText(be.status()))
	}
	return 200, appJSON, out
}

// allowMethods is the Allow field of the 405 answering CONNECT: the
// methods the study's endpoints are for (others are served as GET).
const allowMethods = "GET, HEAD"

// allowFor is the Allow field of an answer of status: allowMethods for a
// 405, else none.
func allowFor(status int) string {
	if status == 405 {
		return allowMethods
	}
	return ""
}

// answer decides the response to a request for r; query is the target's
// query for /block (blockQuery), fetch performs the backend GET. Unknown
// paths close the connection.
func (s *Server) answer(r route, query string, fetch func() ([]byte, error)) (status int, ctype string, body []byte, closeConn bool) {
	switch r {
	case routeHealth:
		return 200, textPlain, healthBody, false
	case routeFruits:
		status, ctype, body = s.fruits(fetch())
		return status, ctype, body, false
	case routeOptions:
		return 200, "", nil, false
	case routeConnect:
		return 405, textPlain, methodNotAllowedBody, true
	case routeBlock:
		if s.o.BlockingEndpoint {
			status, ctype, body = s.block(query, fetch)
			return status, ctype, body, false
		}
	}
	return 404, textPlain, notFoundBody, true
}
