package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
)

// ModeNetHTTP is idiomatic net/http server and client, a goroutine per
// connection on Go's scheduler (see the package comment).
const ModeNetHTTP Mode = "nethttp"

func init() { registerMode(ModeNetHTTP, 10, (*Server).startNetHTTP) }

// netHTTPHeaderSlack is what net/http reads beyond Server.MaxHeaderBytes
// before answering 431 (its bufio slack): subtracted so that the head limit
// is the same as in the other modes.
const netHTTPHeaderSlack = 4096

// backendIdleTimeout is how long an idle backend connection of the
// net/http client is kept: net/http's DefaultTransport value.
const backendIdleTimeout = 90 * time.Second

// maxBackendBody bounds a backend response, in bytes (the mock's is 636).
const maxBackendBody = 1 << 20

// errBackendTooLarge is a backend body over maxBackendBody (a "protocol"
// failure, as http1's limit error is in the carrier modes).
var errBackendTooLarge = errors.New("backend body larger than 1 MiB")

// netBackend is the net/http backend client of the nethttp, handoff and
// nethttp-carrier modes: a blocking http.Client on a net/http Transport
// with one keep-alive connection owned by one client connection (nethttp,
// handoff), or on a carrierhttp.Transport shared by the server
// (nethttp-carrier).
type netBackend struct {
	tr     http.RoundTripper
	client *http.Client
	url    string
	// timeout bounds each exchange through the request's context, not
	// http.Client.Timeout: with a RoundTripper other than net/http's own
	// (carrierhttp.Transport in nethttp-carrier mode) Client.Timeout
	// starts a goroutine and a timer per request, which on carriers wakes
	// a second thread for every backend call.
	timeout time.Duration
}

func (s *Server) newNetBackend() *netBackend {
	d := &net.Dialer{Timeout: s.o.BackendTimeout}
	tr := &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConnsPerHost: 1,
		DisableCompression:  true,
		// A connection returned to the pool after its client connection
		// closed (an exchange still in flight at Close) is dropped after
		// this long at the latest.
		IdleConnTimeout: backendIdleTimeout,
	}
	return &netBackend{tr: tr, client: &http.Client{Transport: tr}, url: s.backend.raw, timeout: s.o.BackendTimeout}
}

// get fetches the backend's body; any status other than 200 is an error.
// ctx is the client request's context: in nethttp-carrier mode it carries
// the task, so that the exchange runs on the task's carrier.
func (b *netBackend) get(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	// One byte past the limit tells a body that is too large from one that
	// is exactly at it; it fails as the carrier mode's http1 reader does,
	// rather than reaching the decoder cut short.
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBackendBody+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxBackendBody {
		return nil, errBackendTooLarge
	}
	if resp.StatusCode != 200 {
		return nil, errBadStatus
	}
	return body, nil
}

func (b *netBackend) close() {
	if ci, ok := b.tr.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// backendKey and framingKey are the context keys of a connection's
// backend client and its framingConn.
type (
	backendKey struct{}
	framingKey struct{}
)

func (s *Server) startNetHTTP() error {
	if set := s.o.Carrier.CPUs; len(set) > 0 {
		if err := cpu.PinProcess(set); err != nil {
			return err
		}
	}
	if s.o.Threads > 0 {
		s.procs = runtime.GOMAXPROCS(s.o.Threads)
	}
	if err := s.appHandler(nil); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.o.Addr)
	if err != nil {
		return err
	}
	if s.o.MaxConns > 0 {
		ln = limitListener{Listener: ln, s: s}
	}
	o := s.o.HTTP.WithDefaults()
	ln = framingListener{Listener: ln, o: o}
	var backends sync.Map // net.Conn -> *netBackend
	s.ln = ln.Addr()
	s.hs = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		// net/http's write deadline runs from the end of the request
		// head to the end of the answer, so it also covers the handler's
		// backend exchange: that time is added, so that only the write
		// is bounded by WriteTimeout, as in the carrier modes.
		WriteTimeout:   o.WriteTimeout + s.o.BackendTimeout,
		IdleTimeout:    o.IdleTimeout,
		MaxHeaderBytes: max(o.MaxHeaderBytes-netHTTPHeaderSlack, 1),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			ctx = context.WithValue(ctx, framingKey{}, c)
			if s.o.App == AppTFB { // no backend but the database
				return ctx
			}
			b := s.newNetBackend()
			backends.Store(c, b)
			return context.WithValue(ctx, backendKey{}, b)
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				s.m.openConns.Add(1)
			case http.StateClosed, http.StateHijacked:
				s.m.openConns.Add(-1)
				if b, ok := backends.LoadAndDelete(c); ok {
					b.(*netBackend).close()
				}
			}
		},
	}
	s.closeBackends = func() {
		backends.Range(func(k, v any) bool {
			v.(*netBackend).close()
			backends.Delete(k)
			return true
		})
	}
	s.serveErr = make(chan error, 1)
	go func() { s.serveErr <- s.hs.Serve(ln) }()
	return nil
}

// appHandler sets s.handler to the app's handler: the study's
// serveNetHTTP, or AppTFB's on g's carriers (g nil: on net/http's server).
func (s *Server) appHandler(g *carrier.Group) error {
	if s.o.App != AppTFB {
		s.handler = http.HandlerFunc(s.serveNetHTTP)
		return nil
	}
	h, err := s.tfbHandler(g)
	if err != nil {
		return fmt.Errorf("app %s: %w", s.o.App, err)
	}
	s.handler = h
	return nil
}

// serveNetHTTP is the handler of the nethttp and nethttp-carrier modes: the
// same code under two schedulers. The request's context holds its backend
// client (backendKey).
func (s *Server) serveNetHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.netHTTPRequestOK(w, r) {
		return
	}
	start := wait.Now()
	b := r.Context().Value(backendKey{}).(*netBackend)
	rt := routeFor(r.Method, r.RequestURI)
	ctx := r.Context()
	if rt == routeBlock {
		// A singleflight leader's exchange serves its followers too: its
		// own client going away must not cancel it (the context keeps its
		// values: in nethttp-carrier mode, the task).
		ctx = context.WithoutCancel(ctx)
	}
	status, ctype, body, closeConn := s.answer(rt, blockQuery(rt, r.RequestURI), func() ([]byte, error) { return b.get(ctx) })
	s.write(w, status, ctype, body, closeConn)
	s.m.handledCtx(r.Context(), status, time.Duration(wait.Now()-start))
}

func (s *Server) write(w http.ResponseWriter, status int, ctype string, body []byte, closeConn bool) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if a := allowFor(status); a != "" {
		h.Set("Allow", a)
	}
	if closeConn {
		h.Set("Connection", "close")
	}
	w.WriteHeader(status)
	w.Write(body)
	s.m.request(status)
}
