package http1

import (
	"errors"
	"io"
	"net"
	"os"
)

// ServerConn is a client connection a server answers on: a carrier.Conn or
// a net.Conn.
type ServerConn interface {
	Conn
	Write(p []byte) (int, error)
}

// Reply is a handler's answer to one request.
type Reply struct {
	Status      int    // status code; 0 means 200
	ContentType string // Content-Type; empty: none
	// Body is the response body. It may point into a buffer the handler
	// owns; it must stay unchanged until the handler is called again.
	Body []byte
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
// the client closes, stays idle or slow past o's timeouts, sends a request
// to refuse (answered with its status and "Connection: close"), or a
// response closes the connection. Responses to pipelined requests are
// written together once no further request is buffered. A client that sent
// "Expect: 100-continue" gets "100 Continue" when its body is awaited. HEAD
// requests get
// the head of h's answer. ServeConn does not close c. It returns nil when the
// conversation ended normally (including timeouts and refused requests),
// else the I/O error.
func ServeConn(c ServerConn, o Options, h Handler, obs Observer) error {
	rd := NewServerReader(c, o)
	var (
		req Request
		rep Reply
		w   Writer
		out = make([]byte, 0, initialBuffer)
	)
	rd.sendContinue = func() error {
		err := flush(c, append(out, continueLine...), nil)
		out = out[:0]
		return err
	}
	for {
		err := rd.Next(&req)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				return endError(flush(c, out, nil))
			}
			out = w.AppendResponse(out, ResponseHead{Status: e.Status, ContentType: "text/plain; charset=utf-8", Close: true},
				[]byte(StatusText(e.Status)))
			if obs != nil {
				obs(e.Status)
			}
			return endError(flush(c, out, nil))
		}
		rep = Reply{}
		h(&req, &rep)
		if rep.Abort {
			return endError(flush(c, out, nil))
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
		}, rep.Body)
		if obs != nil {
			obs(rep.Status)
		}
		if !keep || rd.Buffered() == 0 || len(out) >= flushAt {
			if err := flush(c, out, nil); err != nil {
				return endError(err)
			}
			out = out[:0]
		}
		if !keep {
			return nil
		}
	}
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
