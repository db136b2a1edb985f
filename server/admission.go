package server

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/spindle-lab/spindle/http1"
)

// routeFor maps a request to its route, the same way in every mode: by the
// path of its target as sent (origin or absolute form, RFC 9112 §3.2.2),
// with "OPTIONS *" answered 200 (as net/http does) and CONNECT refused 405
// (this is not a proxy).
func routeFor[T string | []byte](method, target T) route {
	switch {
	case string(method) == "CONNECT":
		return routeConnect
	case string(target) == "*":
		if string(method) == "OPTIONS" {
			return routeOptions
		}
		return routeNotFound
	}
	return routeOf(http1.TargetPath(target))
}

// admit counts a new client connection open and reports whether it is
// within MaxConns. One beyond it is counted rejected and not open: the
// caller closes it at once and does not count it closed (connClosed).
func (s *Server) admit() bool {
	n := s.m.openConns.Add(1)
	if s.o.MaxConns > 0 && n > int64(s.o.MaxConns) {
		s.m.openConns.Add(-1)
		s.m.rejectedConns.Inc()
		return false
	}
	return true
}

// connClosed counts an admitted connection closed.
func (s *Server) connClosed() { s.m.openConns.Add(-1) }

// limitListener closes, as soon as it accepts them, the connections beyond
// the server's MaxConns (nethttp mode). The count is net/http's ConnState
// count, updated by Serve before it accepts again.
type limitListener struct {
	net.Listener
	s *Server
}

// Accept returns the next connection within the limit.
func (l limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.s.m.openConns.Load() < int64(l.s.o.MaxConns) {
			return c, err
		}
		l.s.m.rejectedConns.Inc()
		c.Close()
	}
}

// netHTTPRequestOK makes, in nethttp mode, the checks that http1 makes in
// the carrier modes and net/http's server does not, and reads and drops the
// request body. It answers (or closes) and returns false for a request not
// to route.
func (s *Server) netHTTPRequestOK(w http.ResponseWriter, r *http.Request) bool {
	refuse := func(status int) bool {
		s.write(w, status, textPlain, []byte(http1.StatusText(status)), true)
		return false
	}
	if r.ProtoMajor != 1 { // "PRI * HTTP/2.0" (the h2c preface) reaches handlers
		return refuse(505)
	}
	if c, ok := r.Context().Value(framingKey{}).(*framingConn); ok {
		switch c.next() {
		case framingRefuse:
			return refuse(400)
		case framingCloseAfter:
			w.Header().Set("Connection", "close") // net/http closes after the answer
		}
	}
	maxBody := s.o.HTTP.WithDefaults().MaxBodyBytes
	if r.ContentLength > maxBody {
		return refuse(413)
	}
	_, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooLarge):
		return refuse(413)
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The whole request did not arrive within ReadTimeout: close
		// without an answer, as the carrier modes (and net/http, for a
		// late head) do.
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
			return false
		}
	}
	return refuse(400)
}

// oneAtATime serves h to one request at a time and answers 409 Conflict,
// with a body that says why, to a request that comes while one is served
// (the runtime takes one CPU profile or one execution trace at a time per
// process; net/http/pprof answers 500 then).
func oneAtATime(busy *atomic.Bool, what string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !busy.CompareAndSwap(false, true) {
			http.Error(w, what+" is already being taken (one at a time per process): retry when it ends", http.StatusConflict)
			return
		}
		defer busy.Store(false)
		h(w, r)
	}
}

// cpuProfiling and tracing are set while /debug/pprof/profile and
// /debug/pprof/trace serve a request: both are process-wide.
var cpuProfiling, tracing atomic.Bool
