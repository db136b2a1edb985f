package carrierhttp

import (
	"bufio"
	"net"
	"net/http"
	"path"
	"runtime"
	"time"

	"github.com/spindle-lab/spindle/http1"
)

// hijackBuffer is the size of the buffered reader and writer Hijack
// returns (net/http's: 4 KiB each); the reader grows to hold more input
// already read.
const hijackBuffer = 4 << 10

// Hijack lets the handler take over the connection (http.Hijacker, and
// http.ResponseController's Hijack), as net/http's does: a head the handler
// set with WriteHeader is sent first (body bytes it wrote and did not flush
// are dropped), the deadlines are cleared, and the returned reader holds
// the input the server read past the request's head (the rest of its body,
// pipelined requests, a websocket's first frames), so that none is lost.
// The connection is the TCP conn, or the TLS one over it: a carrier.Conn,
// which any goroutine may use. From then on the server does not touch it:
// Write returns http.ErrHijacked, Shutdown does not wait for it, Close does
// not close it, and when the handler returns the conn stays open (its
// task lets go of it: carrier.Task.Release) until the hijacker closes it or
// the group closes. ConnState sees http.StateHijacked, and nothing after.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c := w.c
	if w.handlerDone {
		panic("net/http: Hijack called after ServeHTTP finished")
	}
	if c.hijacked {
		return nil, nil, http.ErrHijacked
	}
	c.body.expect = false // no "100 Continue" now
	if w.wroteHeader {
		w.pending = w.pending[:0] // net/http drops what its 2 KiB buffer holds
		w.commit()
	}
	c.flush()       // net/http ignores this write's error too: the hijacker sees the conn's state
	c.unwatchGone() // the conn's end is the hijacker's to see, not the request context's (net/http's too)
	c.hijacked = true
	c.rwc.SetDeadline(time.Time{})
	c.rdl = time.Time{}
	src := c.detach()
	br := bufio.NewReaderSize(src, max(hijackBuffer, len(src.pending)))
	if n := len(src.pending); n > 0 {
		br.Peek(n) // into br's buffer: Buffered reports it, as net/http's does
	}
	c.s.track(c, false)
	c.setState(http.StateHijacked)
	return c.rwc, bufio.NewReadWriter(br, bufio.NewWriterSize(c.rwc, hijackBuffer)), nil
}

// detach takes the input the server read and did not consume out of the
// connection's buffer, for whoever takes the connection over: a reader
// that yields it before reading the connection (rwc) on.
func (c *conn) detach() *prefixedConn { return detach(&c.InBuf, c.rwc) }

// detach takes the input read from rwc into in and not consumed out of
// in: a reader of rwc that yields it first (a hijacked or upgraded server
// connection, a Transport's connection after a 101).
func detach(in *http1.InBuf, rwc net.Conn) *prefixedConn {
	p := &prefixedConn{Conn: rwc}
	if in.Start < in.End {
		p.pending = append([]byte(nil), in.Buf[in.Start:in.End]...)
	}
	in.Consume(in.End - in.Start)
	return p
}

// prefixedConn is a connection whose first reads return input read from
// it before: a hijacked or upgraded connection's buffered bytes.
type prefixedConn struct {
	net.Conn
	pending []byte
}

func (p *prefixedConn) Read(b []byte) (int, error) {
	if len(p.pending) == 0 {
		return p.Conn.Read(b)
	}
	n := copy(b, p.pending)
	p.pending = p.pending[n:]
	if len(p.pending) == 0 {
		p.pending = nil
	}
	return n, nil
}

// hijackedCaller logs a use of the ResponseWriter after Hijack, naming the
// caller as net/http's log line does.
func (w *response) hijackedCaller(what string) {
	pc, file, line, _ := runtime.Caller(2)
	name := "?"
	if f := runtime.FuncForPC(pc); f != nil {
		name = f.Name()
	}
	w.c.s.logf("http: response.%s on hijacked connection from %s (%s:%d)", what, name, path.Base(file), line)
}

// EnableFullDuplex lets the handler read the request body while it writes
// the response (http.ResponseController): the unread rest of the body is
// then not discarded when the head is sent, only after the handler.
func (w *response) EnableFullDuplex() error {
	w.fullDuplex = true
	return nil
}
