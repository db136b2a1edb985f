package carrierhttp

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"net/textproto"
	"slices"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
)

// HTTP/2 is Go's own server (golang.org/x/net/http2's ServeConn), given the
// connection once the carrier's task has found that the client speaks
// HTTP/2: by TLS ALPN "h2", by the client preface (h2c with prior
// knowledge), or by an "Upgrade: h2c" request. The task then releases the
// conn (carrier.Task.Release) and ends; ServeConn runs on a goroutine of
// its own and starts one per stream for the handler, as under net/http.
// So HTTP/2 handlers run on goroutines, not in a carrier's task: HTTP/2
// multiplexes streams over one conn, and x/net's server reads frames on
// one goroutine, writes them from another, and hands each stream to a
// handler goroutine through channels, all Go-way waits that a carrier's
// task must not make. The conn's reads and writes are still its carrier's
// conn's (a carrier.Conn serves any goroutine, through Go's netpoller).

// h2Preface is the HTTP/2 client connection preface (RFC 9113 §3.4).
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// protocols is the set of protocols the server speaks: Protocols, or
// net/http's default, HTTP/1 and HTTP/2 over TLS.
func (s *Server) protocols() http.Protocols {
	if s.Protocols != nil {
		return *s.Protocols
	}
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	return p
}

// initHTTP1 makes s.h1, the Server described as an http.Server: what a
// handler finds under http.ServerContextKey (net/http's handlers find
// their Server there; x/net's HTTP/2 server puts its BaseConfig there),
// and where x/net's HTTP/2 server reads the Server's settings. It serves
// nothing: its Shutdown only starts the HTTP/2 connections' graceful
// shutdown (shutdownHTTP2), and its Close does nothing.
func (s *Server) initHTTP1() {
	s.h1 = &http.Server{
		Handler:           s.handler(),
		ReadTimeout:       s.ReadTimeout,
		ReadHeaderTimeout: s.ReadHeaderTimeout,
		WriteTimeout:      s.WriteTimeout,
		IdleTimeout:       s.idleTimeout(),
		MaxHeaderBytes:    s.MaxHeaderBytes,
		ErrorLog:          s.ErrorLog,
		HTTP2:             s.HTTP2,
		ConnContext:       s.ConnContext,

		DisableGeneralOptionsHandler: s.DisableGeneralOptionsHandler,
	}
	f := s.ConnState
	s.h1.ConnState = func(nc net.Conn, st http.ConnState) {
		if st == http.StateActive && s.shutdown.Load() {
			// x/net registers a connection for its graceful shutdown
			// before its first state (StateActive): one that registered
			// after Shutdown's shutdownHTTP2 ran sees shutdown set here
			// and sends itself the GOAWAY (one that read it unset was
			// registered before that run, which sent it one).
			s.shutdownHTTP2()
		}
		if f == nil {
			return
		}
		if p, ok := nc.(*prefixedConn); ok {
			nc = p.Conn // the conn the hook saw at StateNew
		}
		f(nc, st)
	}
}

// initHTTP2 makes the HTTP/2 server, when the server speaks HTTP/2 at
// all, reading the Server's settings from s.h1; s.h1's TLSConfig is set
// after it.
func (s *Server) initHTTP2(p http.Protocols) {
	if p.UnencryptedHTTP2() || p.HTTP2() && s.TLSConfig != nil {
		s.h2 = &http2.Server{}
		// Registers s.h2's graceful shutdown with s.h1 (shutdownHTTP2
		// runs it), and fails only for a TLSConfig of s.h1's, which it
		// has none of yet.
		http2.ConfigureServer(s.h1, s.h2)
	}
	s.h1.TLSConfig = s.tlsConfig
}

// nextProtos is the TLS ALPN list for the protocols p: the configured
// list without the protocols p leaves out, then "h2" and "http/1.1" where
// p has them and the list lacks them (net/http's order).
func nextProtos(configured []string, p http.Protocols) []string {
	out := slices.DeleteFunc(slices.Clone(configured), func(proto string) bool {
		return proto == "h2" && !p.HTTP2() || proto == "http/1.1" && !p.HTTP1()
	})
	if p.HTTP2() && !slices.Contains(out, "h2") {
		out = append(out, "h2")
	}
	if p.HTTP1() && !slices.Contains(out, "http/1.1") {
		out = append(out, "http/1.1")
	}
	return out
}

// sawPreface reads, under the head's timeout, until the buffered input is
// the HTTP/2 client preface or cannot become it, and consumes the preface
// when it is there. A failed read (the client left or was silent past the
// timeout) is returned: the connection ends without an answer, as
// net/http's does.
func (c *conn) sawPreface() (bool, error) {
	armed := false
	if d := c.s.readHeaderTimeout(); d > 0 && c.Start == c.End {
		c.setReadDeadline(time.Now().Add(d))
		armed = true
	}
	for {
		in := c.Buf[c.Start:c.End]
		n := min(len(in), len(h2Preface))
		if string(in[:n]) != h2Preface[:n] {
			break
		}
		if n == len(h2Preface) {
			c.Consume(n)
			return true, nil
		}
		if err := c.fill(); err != nil {
			return false, err
		}
	}
	if armed {
		c.setReadDeadline(time.Time{}) // the HTTP/1 loop arms its own, where it reads
	}
	return false, nil
}

// upgradeH2c answers a request that asks to upgrade to h2c (RFC 7540
// §3.2: "Upgrade: h2c", "Connection: Upgrade, HTTP2-Settings", one
// HTTP2-Settings field) with 101 Switching Protocols and prepares the
// HTTP/2 start, with the request as the first stream's; it reports true
// then, and when the 101 could not be written (the connection is over). It
// reports false, leaving the request to HTTP/1, for any other request, one
// with a body
// (the server may ignore an Upgrade, and reading a whole body here would
// hold it in memory), or one followed by pipelined input.
func (c *conn) upgradeH2c() bool {
	req := c.req
	if req.ProtoMajor != 1 || req.ProtoMinor != 1 || req.ContentLength != 0 || c.Start != c.End {
		return false
	}
	h := req.Header
	if !httpguts.HeaderValuesContainsToken(h["Upgrade"], "h2c") ||
		!httpguts.HeaderValuesContainsToken(h["Connection"], "Upgrade") ||
		!httpguts.HeaderValuesContainsToken(h["Connection"], "HTTP2-Settings") {
		return false
	}
	vals := h[textproto.CanonicalMIMEHeaderKey("HTTP2-Settings")]
	if len(vals) != 1 {
		return false
	}
	settings, err := base64.RawURLEncoding.DecodeString(vals[0])
	if err != nil {
		return false
	}
	c.out = append(c.out, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"...)
	if c.flush() != nil {
		return true // the conn failed: nothing more to serve on it (c.h2 stays nil)
	}
	c.startHTTP2(http2.ServeConnOpts{Settings: settings})
	up := req.Clone(c.h2ctx) // req's Header and URL may be the connection's (ReuseRequests)
	up.Body = http.NoBody
	up.Proto, up.ProtoMajor, up.ProtoMinor = "HTTP/2.0", 2, 0
	for _, k := range []string{"Upgrade", "Connection", "Http2-Settings"} {
		delete(up.Header, k) // hop by hop: not part of an HTTP/2 request
	}
	c.h2.UpgradeRequest = up
	return true
}

// startHTTP2 marks the connection for HTTP/2 with opts, and makes the
// context its requests derive from.
func (c *conn) startHTTP2(opts http2.ServeConnOpts) {
	c.h2ctx, c.h2cancel = context.WithCancel(c.base)
	c.h2 = &opts
}

// serveHTTP2 serves the connection with x/net's HTTP/2 server, on the
// goroutine ServeConn started once the task released the conn, until the
// client, the server's Close or its graceful shutdown ends it.
func (c *conn) serveHTTP2() {
	s := c.s
	defer c.closed()
	defer c.h2cancel()
	rwc := c.rwc
	c.rwc.SetDeadline(time.Time{}) // x/net sets its own
	if p := c.detach(); p.pending != nil {
		rwc = p
	}
	opts := c.h2
	opts.Context = c.h2ctx
	opts.BaseConfig = s.h1
	opts.Handler = s.handler()
	s.h2.ServeConn(rwc, opts)
	rwc.Close() // ServeConn closed it on most paths; a second close is harmless
}

// shutdownHTTP2 starts the graceful shutdown of the HTTP/2 connections
// x/net serves now (GOAWAY; each closes once its streams are done; a
// second GOAWAY to one is not sent), through the http.Server x/net
// registered it with, whose Shutdown is the only way in: it runs x/net's
// hook on a goroutine and returns at once, since it has no listener or
// conn of its own. Shutdown calls it once; a connection x/net starts
// serving after that calls it at its first state (initHTTP2).
func (s *Server) shutdownHTTP2() {
	if s.h2 != nil {
		s.h1.Shutdown(context.Background())
	}
}
