package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"spindle/cpu"
	"spindle/http1"
)

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

// netBackend is a blocking net/http client with one keep-alive connection,
// owned by one client connection (nethttp and handoff modes).
type netBackend struct {
	tr     *http.Transport
	client *http.Client
	url    string
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
	return &netBackend{tr: tr, client: &http.Client{Transport: tr, Timeout: s.o.BackendTimeout}, url: s.backend.raw}
}

// get fetches the backend's body; any status other than 200 is an error.
func (b *netBackend) get() ([]byte, error) {
	resp, err := b.client.Get(b.url)
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

func (b *netBackend) close() { b.tr.CloseIdleConnections() }

type backendKey struct{}

func (s *Server) startNetHTTP() error {
	if set := s.o.Carrier.CPUs; len(set) > 0 {
		if err := cpu.PinProcess(set); err != nil {
			return err
		}
	}
	if s.o.Threads > 0 {
		s.procs = runtime.GOMAXPROCS(s.o.Threads)
	}
	ln, err := net.Listen("tcp", s.o.Addr)
	if err != nil {
		return err
	}
	o := s.o.HTTP.WithDefaults()
	var backends sync.Map // net.Conn -> *netBackend
	s.ln = ln.Addr()
	s.hs = &http.Server{
		Handler:           http.HandlerFunc(s.serveNetHTTP),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    max(o.MaxHeaderBytes-netHTTPHeaderSlack, 1),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
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

// serveNetHTTP is the nethttp mode's handler.
func (s *Server) serveNetHTTP(w http.ResponseWriter, r *http.Request) {
	maxBody := s.o.HTTP.WithDefaults().MaxBodyBytes
	if r.ContentLength > maxBody {
		s.write(w, 413, textPlain, []byte(http1.StatusText(413)), true)
		return
	}
	if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxBody)); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.write(w, 413, textPlain, []byte(http1.StatusText(413)), true)
			return
		}
		s.write(w, 400, textPlain, []byte(http1.StatusText(400)), true)
		return
	}
	start := time.Now()
	b := r.Context().Value(backendKey{}).(*netBackend)
	path, _, _ := strings.Cut(r.RequestURI, "?")
	status, ctype, body, closeConn := s.answer(routeOf(path), b.get)
	s.write(w, status, ctype, body, closeConn)
	s.m.handled(status, time.Since(start))
}

func (s *Server) write(w http.ResponseWriter, status int, ctype string, body []byte, closeConn bool) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if closeConn {
		h.Set("Connection", "close")
	}
	w.WriteHeader(status)
	w.Write(body)
	s.m.request(status)
}
