package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/http1"
	"github.com/spindle-lab/spindle/tfb"
)

// The carrier-hosted modes with spindle's own code path (see the package
// comment).
const (
	// ModeHandoff: carriers for client I/O, goroutines for handlers.
	ModeHandoff Mode = "handoff"
	// ModeCarrier: everything on carriers.
	ModeCarrier Mode = "carrier"
)

func init() {
	registerMode(ModeHandoff, 20, (*Server).startCarriers)
	registerMode(ModeCarrier, 30, (*Server).startCarriers)
}

// newGroup starts the carrier group of the carrier-hosted modes: the
// Carrier options, with one carrier per thread when Threads is set.
func (s *Server) newGroup() (*carrier.Group, error) {
	co := s.o.Carrier
	if s.o.Threads > 0 {
		co.Carriers = s.o.Threads
	}
	g, err := carrier.New(co)
	if err != nil {
		return nil, err
	}
	s.group = g
	s.m.usePerCarrier(g.Len())
	return g, nil
}

func (s *Server) startCarriers() error {
	g, err := s.newGroup()
	if err != nil {
		return err
	}
	handler := s.serveCarrier
	switch {
	case s.o.Mode == ModeHandoff:
		handler = s.serveHandoff
	case s.o.App == AppTFB:
		poolFor, err := s.tfbPools(g)
		if err != nil {
			return fmt.Errorf("app %s: %w", s.o.App, err)
		}
		s.tfb, handler = tfb.NewAnswers(poolFor), s.serveTFB
	}
	s.cl, err = g.Listen(s.o.Addr, s.admitted(handler), carrier.ListenOptions{ReusePort: s.o.ReusePort})
	if err != nil {
		return err
	}
	s.ln = s.cl.Addr()
	return nil
}

// admitted wraps a carrier mode's connection handler with the admission
// check: a connection beyond MaxConns is closed at once, and an admitted
// one is counted closed when h returns.
func (s *Server) admitted(h func(*carrier.Task, *carrier.Conn)) func(*carrier.Task, *carrier.Conn) {
	return func(t *carrier.Task, c *carrier.Conn) {
		if !s.admit() {
			c.Close()
			return
		}
		defer s.connClosed()
		h(t, c)
	}
}

// serveCarrier answers one client connection entirely on its carrier: the
// backend socket is dialed and polled by the same carrier.
func (s *Server) serveCarrier(t *carrier.Task, c *carrier.Conn) {
	b := &nativeBackend{s: s, t: t}
	defer b.drop()
	fetch := b.get
	s.serveTimed(t, c, s.o.HTTP, func(req *http1.Request, rep *http1.Reply) {
		r := routeFor(req.Method, req.Target)
		rep.Status, rep.ContentType, rep.Body, rep.Close = s.answer(r, blockQuery(r, req.Target), fetch)
		rep.Allow = allowFor(rep.Status)
	})
}

// serveTimed serves c's requests with h (http1.ServeConn with o), each
// answer counted by status and timed into the request-duration histogram.
// A request's start is the carrier's clock reading when the task resumed
// with its bytes (no clock read), or the end of the previous request when
// the same run goes on with a pipelined one.
func (s *Server) serveTimed(t *carrier.Task, c *carrier.Conn, o http1.Options, h http1.Handler) {
	var last int64
	http1.ServeConn(c, o, func(req *http1.Request, rep *http1.Reply) {
		start := max(t.Now(), last)
		h(req, rep)
		last = wait.Now()
		s.m.handledIn(t, cmp.Or(rep.Status, http.StatusOK), time.Duration(last-start))
	}, s.m.request)
}

// serveHandoff answers one client connection: the carrier reads and writes
// the client socket, each request's handler runs on a plain goroutine with
// a blocking net/http backend client.
func (s *Server) serveHandoff(t *carrier.Task, c *carrier.Conn) {
	b := s.newNetBackend()
	defer b.close()
	http1.ServeConn(c, s.o.HTTP, func(req *http1.Request, rep *http1.Reply) {
		r := routeFor(req.Method, req.Target)
		q := blockQuery(r, req.Target)
		start := wait.Now()
		t.Offload(func() {
			rep.Status, rep.ContentType, rep.Body, rep.Close = s.answer(r, q, func() ([]byte, error) { return b.get(context.Background()) })
			rep.Allow = allowFor(rep.Status)
		})
		s.m.handledIn(t, rep.Status, time.Duration(wait.Now()-start))
	}, s.m.request)
}

// nativeBackend is the carrier mode's backend client: one keep-alive
// connection dialed and polled by the client connection's carrier.
type nativeBackend struct {
	s     *Server
	t     *carrier.Task
	conn  *carrier.Conn
	rd    *http1.ClientReader
	req   []byte // the GET request, built once
	resp  http1.Response
	stale bool // the backend said it closes: reconnect before the next GET
}

// get fetches the backend's body; it is valid until the next call. A
// connection that was reused and turns out closed by the backend is
// retried once on a fresh one, as net/http's Transport does for GET.
func (b *nativeBackend) get() ([]byte, error) {
	if b.stale {
		b.drop()
	}
	if b.req == nil {
		b.req = http1.AppendGet(nil, b.s.backend.target, b.s.backend.host)
	}
	for attempt := 0; ; attempt++ {
		deadline := time.Now().Add(b.s.o.BackendTimeout)
		reused := b.conn != nil
		if !reused {
			c, err := b.t.Dial(b.s.backend.addr, b.s.o.BackendTimeout)
			if err != nil {
				return nil, err
			}
			b.conn = c
			if b.rd == nil {
				b.rd = http1.NewClientReader(c, http1.Options{MaxBodyBytes: maxBackendBody})
			} else {
				b.rd.Reset(c)
			}
		}
		if err := b.exchange(deadline); err != nil {
			b.drop()
			if reused && attempt == 0 && classify(err).kind == "reset" {
				continue
			}
			return nil, err
		}
		b.stale = !b.resp.KeepAlive
		if b.resp.Status != 200 {
			return nil, errBadStatus
		}
		return b.resp.Body, nil
	}
}

func (b *nativeBackend) exchange(deadline time.Time) error {
	b.conn.SetWriteDeadline(deadline)
	if _, err := b.conn.Write(b.req); err != nil {
		return err
	}
	return b.rd.Next(&b.resp, deadline)
}

// drop closes the backend connection, if any.
func (b *nativeBackend) drop() {
	if b.conn != nil {
		b.conn.Close()
		b.conn = nil
	}
	b.stale = false
}
