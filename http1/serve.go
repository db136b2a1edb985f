package http1

import (
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// ServerConn is a client connection a server answers on: a carrier.Conn or
// a net.Conn. One that also has CloseWrite (both do) is half-closed and
// drained before ServeConn returns after a response that ends the
// connection, so that the client reads the response (see Linger).
type ServerConn interface {
	Conn
	Write(p []byte) (int, error)
	SetWriteDeadline(t time.Time) error
}

// halfCloser is a connection that can stop sending and go on receiving.
type halfCloser interface{ CloseWrite() error }

const (
	// lingerTime bounds how long a connection the server ends is drained
	// after its last response, and lingerBytes how much is read from it
	// meanwhile: closing a socket with unread input sends a TCP RST, which
	// may destroy the response in the client's receive buffer before the
	// client reads it (a client still uploading a refused body). nginx
	// lingers up to 30 s, net/http 500 ms; 2 s and 8 MiB let a client on
	// loopback or a LAN see its answer without letting one hold the
	// connection for long.
	lingerTime  = 2 * time.Second
	lingerBytes = 8 << 20
	// lingerBuffer is the size of the buffer the drain reads into.
	lingerBuffer = 4 << 10
)

// Reply is a handler's answer to one request.
type Reply struct {
	Status      int    // status code; 0 means 200
	ContentType string // Content-Type; empty: none
	// Body is the response body. It may point into a buffer the handler
	// owns; it must stay unchanged until the handler is called again.
	Body []byte
	// Allow is the Allow header's value (the methods the target serves,
	// which a 405 answer must list); empty: none.
	Allow string
	// Close closes the connection after this response.
	Close bool
	// Abort closes the connection without answering this request (earlier
	// pipelined answers are still written): a fault to inject.
	Abort bool
}

// Handler answers one request by filling rep, which is zeroed before each
// call. req is valid only during the call.
type Handler func(req *Request, rep *Reply)

// Observer, when not nil, is told the status of every response ServeConn
// queues, including its refusals of bad requests (for metrics).
type Observer func(status int)

// continueLine is the interim answer to "Expect: 100-continue".
const continueLine = "HTTP/1.1 100 Continue\r\n\r\n"

// flushAt is the size of queued pipelined responses that is written out
// even while more requests are buffered, bounding the output buffer.
const flushAt = 64 << 10

// ServeConn reads requests from c and answers each with h, in order, until
// the client closes, stays idle or slow past o's timeouts, does not read
// its answers within o.WriteTimeout, sends a request to refuse (answered
// with its status and "Connection: close"), or a response closes the
// connection (then c is half-closed and drained for a while, see Linger). Responses to pipelined requests are
// written together once no further request is buffered. A client that sent
// "Expect: 100-continue" gets "100 Continue" when its body is awaited. HEAD
// requests get
// the head of h's answer. ServeConn does not close c. It returns nil when the
// conversation ended normally (including timeouts and refused requests),
// else the I/O error.
func ServeConn(c ServerConn, o Options, h Handler, obs Observer) error {
	o = o.WithDefaults()
	rd := NewServerReader(c, o)
	var (
		req Request
		rep Reply
		w   = Writer{Now: rd.now}
		out = make([]byte, 0, initialBuffer)
		wd  = writeDeadline{now: rd.now}
	)
	// flushHeld writes out the responses held. They are held while
	// pipelined requests are buffered whole, so that their answers go out
	// together, and written before any wait for input (rd.beforeWait): a
	// part of the next request buffered must not hold its predecessors'
	// answers until the rest comes, which the client may send only once it
	// has them.
	flushHeld := func() error {
		err := wd.flush(c, out, o.WriteTimeout)
		out = out[:0]
		if cap(out) > keepBuffer { // grown by a long pipeline
			out = make([]byte, 0, initialBuffer)
		}
		return err
	}
	rd.beforeWait = flushHeld
	rd.sendContinue = func() error {
		out = append(out, continueLine...)
		return flushHeld()
	}
	for {
		err := rd.Next(&req)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				return endError(flushHeld())
			}
			out = w.AppendResponse(out, ResponseHead{Status: e.Status, ContentType: "text/plain; charset=utf-8", Close: true, Server: o.Server,
				OmitBody: string(req.Method) == "HEAD"}, // a refused HEAD's answer has no body either (RFC 9110 §9.3.2)
				[]byte(StatusText(e.Status)))
			if obs != nil {
				obs(e.Status)
			}
			if err := flushHeld(); err != nil {
				return endError(err)
			}
			return endError(Linger(c, lingerTime, lingerBytes))
		}
		rep = Reply{}
		h(&req, &rep)
		if rep.Abort {
			return endError(flushHeld())
		}
		if rep.Status == 0 {
			rep.Status = 200
		}
		keep := req.KeepAlive && !rep.Close
		out = w.AppendResponse(out, ResponseHead{
			Status:      rep.Status,
			ContentType: rep.ContentType,
			Close:       !keep,
			KeepAlive10: keep && req.Minor == 0,
			OmitBody:    string(req.Method) == "HEAD",
			Server:      o.Server,
			Allow:       rep.Allow,
		}, rep.Body)
		if obs != nil {
			obs(rep.Status)
		}
		if !keep || len(out) >= flushAt { // else at the next wait for input, or with the next answers
			if err := flushHeld(); err != nil {
				return endError(err)
			}
		}
		if !keep {
			return endError(Linger(c, lingerTime, lingerBytes))
		}
	}
}

// writeDeadline is the write deadline ServeConn last armed on its
// connection.
type writeDeadline struct {
	at  time.Time
	now func() time.Time // the connection's clock (clockOf)
}

// flush writes out to c within timeout. The deadline is re-armed only when
// the one armed ends more than deadlineSlack sooner than now+timeout, so a
// busy connection sets it about once a second, not on every response.
func (d *writeDeadline) flush(c ServerConn, out []byte, timeout time.Duration) error {
	if len(out) == 0 {
		return nil
	}
	if want := d.now().Add(timeout); d.at.Before(want) {
		d.at = want.Add(deadlineSlack)
		if err := c.SetWriteDeadline(d.at); err != nil {
			return err
		}
	}
	return flush(c, out, nil)
}

// Linger ends a connection a server closes after a response: it stops
// sending (the client sees the end of the stream after the response) and
// reads and drops what the client still sends, until the client closes, an
// error, timeout passes, or maxBytes were read (0: no bound), so that
// closing does not reset the connection under a response the client has
// yet to read (RFC 9112 §9.6). A connection without CloseWrite is left as
// it is. It returns the error that ended it: the client's end of file, or
// the deadline, are the usual ones. ServeConn and carrierhttp's Server
// linger with it, with their bounds (nginx lingers up to 30 s, net/http
// 500 ms).
func Linger(c Conn, timeout time.Duration, maxBytes int) error {
	hc, ok := c.(halfCloser)
	if !ok {
		return nil
	}
	if err := hc.CloseWrite(); err != nil {
		return err
	}
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	buf := make([]byte, lingerBuffer)
	for n := 0; maxBytes <= 0 || n < maxBytes; {
		k, err := c.Read(buf)
		n += k
		if err != nil {
			return err
		}
	}
	return nil
}

// flush writes out to c, returning err when the write succeeds.
func flush(c ServerConn, out []byte, err error) error {
	if len(out) == 0 {
		return err
	}
	if _, werr := c.Write(out); werr != nil {
		return werr
	}
	return err
}

// endError maps the ways a client conversation normally ends to nil.
func endError(err error) error {
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, net.ErrClosed):
		return nil
	}
	return err
}
