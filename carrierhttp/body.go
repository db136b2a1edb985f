package carrierhttp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sync"

	"github.com/spindle-lab/spindle/http1"
)

// body is a request body, streamed from the connection's read buffer by
// http1's BodyReader: a Read that finds nothing buffered parks the task
// until data arrives. It is reused for each request of the connection.
// Its reads, and the task's settle, hold mu (net/http's body.mu): a handler
// may give the body to another goroutine (httputil.ReverseProxy's
// Transport writes it from its own) and answer meanwhile.
type body struct {
	mu     sync.Mutex
	c      *conn
	r      http1.BodyReader // the framing: by length or chunked
	expect bool             // "Expect: 100-continue": answer 100 before the first read
	closed bool             // the handler closed it
	err    error            // the error that ended reading early
}

func (b *body) reset(n int64, chunked, expect bool) {
	b.expect, b.closed, b.err = expect, false, nil
	b.r.MaxBody = b.c.s.MaxBodyBytes
	b.r.Reset(n, chunked)
}

// limitHit reports whether the request's Body is an http.MaxBytesReader
// that the handler put in place of b and that stopped at its limit:
// net/http's server closes the connection then rather than read the rest
// (it learns of the limit from the reader, through an unexported
// interface that no other package can implement). The reader's error is
// sticky, and a zero-length Read of it returns that error and reads
// nothing; no other reader is read (a zero-length Read of a pipe blocks).
// A handler that wraps the body without storing the reader in the Body of
// the Request it was given (or stores it in a copy that a middleware made)
// is not seen: its connection's rest of body is discarded, up to net/http's
// 256 KiB, as for any body the handler left unread.
func (b *body) limitHit() bool {
	r := b.c.req.Body
	if r == nil || reflect.TypeOf(r) != maxBytesReaderType {
		return false
	}
	_, err := r.Read(nil)
	var tooLarge *http.MaxBytesError
	return errors.As(err, &tooLarge)
}

// maxBytesReaderType is the type of http.MaxBytesReader's readers.
var maxBytesReaderType = reflect.TypeOf(http.MaxBytesReader(nil, http.NoBody, 0))

// Read reads body bytes into p.
func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read(p)
}

// read is Read, b.mu held.
func (b *body) read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if len(p) == 0 {
		return 0, nil
	}
	data, err := b.next(len(p))
	n := copy(p, data)
	return n, err
}

// Close stops reading: the rest of the body is discarded after the
// handler, or the connection closed when it is too long.
func (b *body) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// next consumes up to limit body bytes from the read buffer, reading from
// the connection when it holds none, and returns them (valid until the
// next read), with io.EOF once the body is complete.
func (b *body) next(limit int) ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.c.hijacked { // its bytes went to the hijacker
		return nil, http.ErrHijacked
	}
	if b.r.Done() {
		return nil, io.EOF
	}
	c := b.c
	if b.expect {
		if err := c.sendContinue(); err != nil {
			b.err = err
			return nil, err
		}
	}
	data, err := b.r.Next(&c.InBuf, c, limit)
	if err != nil && err != io.EOF {
		b.err = b.decodeError(err)
		return nil, b.err
	}
	if err == io.EOF {
		// The request is read: the client's end of stream now means gone.
		switch {
		case !c.inTask():
			if c.Start == c.End {
				c.watchLate()
			}
		case !c.w.handlerDone:
			c.watchGone()
		}
	}
	return data, err
}

// sendContinue answers "100 Continue" before the first read of a body that
// expects it, unless the handler sent one (WriteHeader(100)) or its
// answer's status is set.
func (c *conn) sendContinue() error {
	c.interim.Lock()
	defer c.interim.Unlock()
	if c.w.wroteCont || c.w.wroteHeader {
		return nil
	}
	c.w.wroteCont = true
	c.out = append(c.out, "HTTP/1.1 100 Continue\r\n\r\n"...)
	return c.flush()
}

// decodeError turns a framing error of the body (an *http1.Error) into
// what the handler sees: *http.MaxBytesError past Server.MaxBodyBytes, else
// a malformed body. The connection's errors are left as they are.
func (b *body) decodeError(err error) error {
	var he *http1.Error
	switch {
	case !errors.As(err, &he):
		return err
	case he.Status == http.StatusRequestEntityTooLarge:
		return &http.MaxBytesError{Limit: b.c.s.MaxBodyBytes}
	}
	return fmt.Errorf("http: malformed chunked encoding: %w", err)
}

// settle makes the connection ready for its next request once the handler
// is done with the body, as net/http does: a body the handler left unread
// is discarded up to maxPostHandlerRead bytes. It reports whether the
// connection must close instead (body too long, closed early, broken, or
// a 100-continue never answered).
func (b *body) settle() bool {
	if b.limitHit() { // before the lock: a MaxBytesReader's Read(nil) reads b
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.r.Done():
		return false
	case b.closed, b.err != nil, b.expect && !b.c.w.wroteCont:
		return true
	case b.r.Length() >= maxPostHandlerRead: // by length (chunked: -1)
		return true
	}
	b.expect = false // discarding: no 100 Continue now
	for left := maxPostHandlerRead; left > 0; {
		data, err := b.next(left)
		left -= len(data)
		if errors.Is(err, io.EOF) {
			b.closed = true // as net/http's: a later Read says the body was closed
			return false
		}
		if err != nil {
			return true
		}
	}
	return true
}
