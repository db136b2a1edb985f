package server

import (
	"context"
	"log"
	"net"
	"net/http"
	"sync"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrierhttp"
)

// ModeNetHTTPCarrier runs ModeNetHTTP's handler and http.Client code,
// unchanged, on carriers (carrierhttp's Server and Transport).
const ModeNetHTTPCarrier Mode = "nethttp-carrier"

func init() { registerMode(ModeNetHTTPCarrier, 40, (*Server).startNetHTTPCarrier) }

// maxCarrierBackendIdle bounds the idle backend connections one carrier
// keeps in nethttp-carrier mode. The carrier's client connections share
// them, and one is dialled only when none is idle, so in practice the pool
// holds as many as requests were once in flight on the carrier at the same
// time; the bound is far above that (the I/O-bound preset has 10,000
// client connections, as many backend ones as the nethttp mode's one per
// client connection), so that none is closed and dialled again.
const maxCarrierBackendIdle = 1 << 16

// startNetHTTPCarrier starts the nethttp-carrier mode: the nethttp mode's
// handler (serveNetHTTP) and backend client (netBackend, an http.Client),
// unchanged, hosted on carriers by carrierhttp: the handler runs in its
// connection's task, and the backend exchange is dialled and polled by
// that task's carrier through a carrierhttp.Transport whose keep-alive
// pool is per carrier.
func (s *Server) startNetHTTPCarrier() error {
	g, err := s.newGroup()
	if err != nil {
		return err
	}
	if err := s.appHandler(g); err != nil {
		return err
	}
	tr := &carrierhttp.Transport{DialTimeout: s.o.BackendTimeout, MaxIdleConnsPerHost: maxCarrierBackendIdle}
	b := &netBackend{tr: tr, client: &http.Client{Transport: tr}, url: s.backend.raw, timeout: s.o.BackendTimeout}
	s.closeBackends = b.close
	o := s.o.HTTP.WithDefaults()
	var rejected sync.Map // net.Conn -> struct{}: closed at once for MaxConns, never admitted
	s.hc = &carrierhttp.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		// As in nethttp mode: the write deadline runs from the end of the
		// head, so it covers the backend exchange too.
		WriteTimeout:   o.WriteTimeout + s.o.BackendTimeout,
		IdleTimeout:    o.IdleTimeout,
		MaxHeaderBytes: max(o.MaxHeaderBytes-netHTTPHeaderSlack, 1),
		// Its watchdog's reports (and panics) at most once a second, as
		// the carriers' hand-off reports: not a line per /block request.
		ErrorLog: log.New(newSparseLog(log.Writer()), "", log.LstdFlags),
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, backendKey{}, b)
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				if !s.admit() { // beyond MaxConns: closed before its first read
					rejected.Store(c, struct{}{})
					c.Close()
				}
			case http.StateClosed, http.StateHijacked: // a hijack ends the server's part (netHTTPRequestOK's close without an answer)
				if _, ok := rejected.LoadAndDelete(c); !ok {
					s.connClosed()
				}
			}
		},
	}
	s.cl, err = s.hc.Listen(g, s.o.Addr, carrier.ListenOptions{ReusePort: s.o.ReusePort})
	if err != nil {
		return err
	}
	s.ln = s.cl.Addr()
	return nil
}
