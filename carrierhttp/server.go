// Package carrierhttp hosts unchanged net/http application code on
// carriers: Server serves any http.Handler on a carrier.Group, calling
// ServeHTTP in the task of the request's connection, and Transport is an
// http.RoundTripper whose backend connections are dialled and polled by
// the calling task's carrier.
//
// A connection's task reads requests with http1's head parser and chunked
// decoder, builds an *http.Request (method, URL, proto, headers, Host,
// RemoteAddr, ContentLength, TransferEncoding, TLS, a Context of its own,
// cancelled once the handler returns, when the client goes away, even
// while the handler waits, or when the server closes) and calls the
// handler.
// The ResponseWriter sends Content-Length when the handler's body fits its
// buffer and chunked encoding otherwise, answers HEAD with the head only,
// implements http.Flusher, http.Hijacker (websockets: the hijacked
// carrier.Conn serves the handler's task and any goroutine) and the
// http.ResponseController methods (SetReadDeadline, SetWriteDeadline,
// Flush, Hijack, EnableFullDuplex), sends "100 Continue" when a
// handler reads the body of a request that expects it, and writes
// trailers. Request bodies stream: a Read parks the task until data
// arrives, and nothing holds a whole body.
//
// Protocols (net/http's field) adds HTTP/2: over TLS by default (ALPN
// "h2"), and h2c with UnencryptedHTTP2, served by golang.org/x/net/http2's
// server on goroutines (http2.go says why); HTTP/1.1 stays in the tasks.
//
// Handlers run in their connection's task, on its carrier's thread. A
// handler that blocks the Go way (channels, mutexes, time.Sleep,
// database/sql, net.Conn) or computes for long delays only its own
// request: past carrier.Options.HandoffThreshold (1 ms by default) the
// carrier hands itself off to another thread and serves its other
// connections, and the handler rejoins it at its next carrier operation
// (the hand-off; docs/carrierhttp.md). OffloadHandler runs a handler on a
// goroutine from the start, for handlers known to block on every request,
// where a hand-off per request would cost more. The carriers' watchdog
// (carrier.Options.PinnedThreshold, 20 ms by default) counts task runs
// that ran that long; Server logs such requests, naming them (at most one
// line a second), and counts them all (Pinned).
//
// Each request's *http.Request, with its Header, URL, Body and context, is
// its own and may be kept after the handler returns, as under net/http
// (Server.ReuseRequests reuses them for handlers that keep none). The
// ResponseWriter is the connection's, reused: as net/http asks, it must not
// be used once the handler has returned.
package carrierhttp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/http1"
)

// Defaults of Server's fields.
const (
	// DefaultMaxHeaderBytes is net/http's http.DefaultMaxHeaderBytes, 1 MiB.
	DefaultMaxHeaderBytes = http.DefaultMaxHeaderBytes
)

// Server serves an http.Handler on carriers. Its fields have net/http's
// meanings; set them before Listen or ServeConn and leave them alone
// afterwards. The zero value serves http.DefaultServeMux without timeouts.
type Server struct {
	// Handler answers requests; nil: http.DefaultServeMux.
	Handler http.Handler
	// TLSConfig, when not nil, serves TLS: "h2" and "http/1.1" are added
	// to its NextProtos (ALPN) when missing, as Protocols has them, and
	// removed when Protocols leaves them out.
	TLSConfig *tls.Config
	// Protocols is the set of protocols the server accepts, with
	// net/http's meanings; nil: HTTP/1 and, over TLS, HTTP/2 (net/http's
	// default). HTTP/1 is served in the connection's task on its carrier;
	// HTTP/2 by golang.org/x/net/http2's server, whose handlers run on
	// goroutines (see the package's HTTP/2 notes, http2.go).
	// UnencryptedHTTP2 serves h2c to clients that send the HTTP/2 preface
	// (prior knowledge) or ask with "Upgrade: h2c". A server without HTTP1
	// closes connections that do not speak HTTP/2.
	Protocols *http.Protocols
	// HTTP2 configures HTTP/2 connections (net/http's http.HTTP2Config:
	// MaxConcurrentStreams, MaxReadFrameSize, ...); nil: x/net's defaults.
	HTTP2 *http.HTTP2Config
	// ReadTimeout bounds reading a whole request, head and body, from its
	// first byte (from the connection's start for its first request, as
	// net/http counts); 0: none.
	ReadTimeout time.Duration
	// ReadHeaderTimeout bounds reading a request head; 0: ReadTimeout.
	ReadHeaderTimeout time.Duration
	// WriteTimeout bounds writing a response, counted from the end of its
	// request's head; 0: none.
	WriteTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a keep-alive
	// connection; 0: ReadTimeout; both 0: none.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request head, in bytes (plus net/http's 4096
	// bytes of slack); a larger one is answered 431. 0:
	// DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// MaxBodyBytes bounds a request body, in bytes: a declared
	// Content-Length over it is answered 413 without calling the handler,
	// and a chunked body that grows past it fails the handler's Read with
	// an *http.MaxBytesError and closes the connection after the response.
	// 0: no limit (net/http has none).
	MaxBodyBytes int64
	// ReuseRequests reuses each connection's *http.Request, with its
	// Header, URL and Body, for the connection's next request, where by
	// default every request gets its own, as under net/http: two fewer
	// allocations and about 0.5 KiB less garbage per request, for handlers
	// that keep none of them once they return. A goroutine that reads the
	// request after its handler returned (a logger's, or the handler that
	// http.TimeoutHandler wraps, which runs on after the timeout) would
	// read the connection's next request, racing with its parse: wrong
	// values, and Go's "concurrent map read and map write", which ends
	// the process. The request's context is its own either way.
	ReuseRequests bool
	// ErrorLog receives handler panics, watchdog reports and other
	// unexpected errors; nil: the log package's standard logger.
	ErrorLog *log.Logger
	// ConnContext, when not nil, derives a connection's base context (as
	// in net/http); it runs in the connection's task.
	ConnContext func(ctx context.Context, c net.Conn) context.Context
	// DisableGeneralOptionsHandler, as in net/http, passes "OPTIONS *"
	// requests to Handler instead of answering them 200 with
	// Content-Length: 0.
	DisableGeneralOptionsHandler bool
	// ConnState, when not nil, is told of a connection's changes of state
	// with net/http's states (StateNew, StateActive, StateIdle,
	// StateHijacked, StateClosed). For HTTP/1 it runs in the connection's
	// task, so it must not block; an HTTP/2 connection's changes after
	// StateNew come from x/net's goroutines.
	ConnState func(net.Conn, http.ConnState)

	mu        sync.Mutex
	listeners map[*carrier.Listener]struct{}
	conns     map[*conn]struct{}
	shutdown  atomic.Bool
	closed    atomic.Bool
	initOnce  sync.Once
	baseCtx   context.Context
	cancel    context.CancelFunc
	pinned    atomic.Uint64
	watchLog  logEvery // the watchdog's lines
	tlsConfig *tls.Config
	protos    http.Protocols
	// h1 is the Server described as an http.Server (initHTTP1): what
	// handlers find under http.ServerContextKey, where x/net's HTTP/2
	// server reads its settings (timeouts, ErrorLog, HTTP2) and registers
	// its graceful shutdown; h2 is that server, nil when the server speaks
	// no HTTP/2.
	h1 *http.Server
	h2 *http2.Server
}

// headerSlack is what net/http reads beyond MaxHeaderBytes before it
// answers 431 (its read buffer): the same head is refused here.
const headerSlack = http1.NetHTTPBuffer

// ErrServerClosed is returned by Listen and ServeConn after Shutdown or
// Close (it is net/http's).
var ErrServerClosed = http.ErrServerClosed

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.initHTTP1()
		s.baseCtx, s.cancel = context.WithCancel(context.Background())
		s.baseCtx = context.WithValue(s.baseCtx, http.ServerContextKey, s.h1)
		s.listeners = map[*carrier.Listener]struct{}{}
		s.conns = map[*conn]struct{}{}
		s.protos = s.protocols()
		if s.TLSConfig != nil {
			cfg := s.TLSConfig.Clone()
			cfg.NextProtos = nextProtos(cfg.NextProtos, s.protos)
			s.tlsConfig = cfg
		}
		s.initHTTP2(s.protos)
	})
}

// Listen listens on addr (carrier.Group.Listen's rules) and serves every
// connection accepted there with ServeConn. It returns at once; the
// listener closes with Shutdown, Close or the group.
func (s *Server) Listen(g *carrier.Group, addr string, o carrier.ListenOptions) (*carrier.Listener, error) {
	s.init()
	if s.shutdown.Load() {
		return nil, fmt.Errorf("carrierhttp: listen %s: %w", addr, ErrServerClosed)
	}
	l, err := g.Listen(addr, s.ServeConn, o)
	if err != nil {
		return nil, fmt.Errorf("carrierhttp: %w", err)
	}
	s.mu.Lock()
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	if s.shutdown.Load() { // Shutdown ran between the check and the registration
		l.Close()
		return nil, fmt.Errorf("carrierhttp: listen %s: %w", addr, ErrServerClosed)
	}
	return l, nil
}

// ServeConn serves HTTP on cn until the client closes, the connection
// times out or fails, a response closes it, or the server shuts down. Its
// signature is carrier.Group.Listen's handler's, so a caller that makes its
// own listener passes s.ServeConn; it closes nothing (the listener's task
// closes cn when ServeConn returns), and a connection a handler hijacked it
// releases (carrier.Task.Release): the caller must not close cn itself.
func (s *Server) ServeConn(t *carrier.Task, cn *carrier.Conn) {
	s.init()
	if s.shutdown.Load() {
		return
	}
	c := newConn(s, t, cn)
	if !s.track(c, true) {
		return
	}
	c.setState(http.StateNew)
	served := false
	defer func() {
		if !served { // the carrier unwinds the task: it stops
			c.closed()
		}
	}()
	c.serve()
	served = true
	switch {
	case c.hijacked:
		t.Release(cn) // the handler's now: the task ends without closing it
	case c.h2 != nil:
		t.Release(cn) // HTTP/2's, on a goroutine (http2.go)
		go c.serveHTTP2()
	default:
		c.closed()
	}
}

// closed takes a connection off the server's books as it ends: a hijacked
// one was taken off at the hijack, and its state stays StateHijacked.
func (c *conn) closed() {
	c.s.track(c, false)
	if !c.hijacked {
		c.setState(http.StateClosed)
	}
}

// track adds or removes a connection; adding fails once the server shuts
// down.
func (s *Server) track(c *conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.shutdown.Load() {
			return false
		}
		s.conns[c] = struct{}{}
		return true
	}
	delete(s.conns, c)
	return true
}

// shutdownPoll is how often Shutdown looks for connections gone idle
// (net/http polls from 1 ms up to 500 ms; a carrier's idle close is cheap,
// so a fixed short period serves).
const shutdownPoll = 5 * time.Millisecond

// Shutdown stops the server gracefully, as net/http's does: it closes the
// listeners, closes idle connections, and waits for connections with a
// request in flight to finish it (they close after their response) until
// ctx ends, when it returns ctx's error and leaves the rest to Close.
// HTTP/2 connections get a GOAWAY and close when their streams are done;
// hijacked ones are not waited for (they are their handlers'). It must not
// be called from a task of the server's group (it would wait for its own
// carrier): call it from a goroutine, or with Task.Offload.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.shutdown.Store(true)
	s.closeListeners()
	s.shutdownHTTP2()
	tick := time.NewTicker(shutdownPoll)
	defer tick.Stop()
	for {
		if s.closeIdle() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Close stops the server at once: it closes the listeners and every
// connection, HTTP/2 ones too, but for hijacked ones (a handler running on
// one sees its writes fail and its request context cancelled). It does not
// wait for handlers to return: carrier.Group.Close unwinds the HTTP/1 ones
// parked in their tasks and closes the hijacked connections left; a
// handler its carrier handed off (it blocked the Go way) runs on, sees
// net.ErrClosed from its writes, and ends when it returns, as HTTP/2
// handlers do (goroutines, waited for by nobody, as under net/http). Close
// the Server before its Group, so that every request's context is
// cancelled first.
func (s *Server) Close() error {
	s.init()
	s.shutdown.Store(true)
	s.closed.Store(true)
	s.cancel()
	s.closeListeners()
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.cn.CloseAsync() // the TCP conn, never TLS: its Close may wait on a lock a parked task holds; closed by whichever carrier has it now
	}
	return nil
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	ls := make([]*carrier.Listener, 0, len(s.listeners))
	for l := range s.listeners {
		ls = append(ls, l)
	}
	clear(s.listeners)
	s.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
}

// closeIdle asks every idle connection's carrier to close it and reports
// whether no connection is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.idle.Load() && c.nudged.CompareAndSwap(false, true) {
			c.home.Load().SubmitLocal(c.closeIfIdle) // local: a thief would close it from its own carrier
		}
	}
	return len(s.conns) == 0
}

// Pinned returns how many handler calls the watchdog found holding their
// carrier longer than its threshold (carrier.Options.PinnedThreshold).
func (s *Server) Pinned() uint64 { return s.pinned.Load() }

func (s *Server) handler() http.Handler {
	if s.Handler == nil {
		return http.DefaultServeMux
	}
	return s.Handler
}

func (s *Server) maxHeaderBytes() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes + headerSlack
	}
	return DefaultMaxHeaderBytes + headerSlack
}

func (s *Server) readHeaderTimeout() time.Duration {
	if s.ReadHeaderTimeout != 0 {
		return s.ReadHeaderTimeout
	}
	return s.ReadTimeout
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout != 0 {
		return s.IdleTimeout
	}
	return s.ReadTimeout
}

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

// errServerClosing ends a connection's loop when the server shuts down.
var errServerClosing = errors.New("carrierhttp: server shutting down")
