package carrierhttp

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/spindle-lab/spindle/http1"
)

// body is a request body, streamed from the connection's read buffer: a
// Read that finds nothing buffered parks the task until data arrives. It is
// reused for each request of the connection.
type body struct {
	c         *conn
	remaining int64 // bytes still to come of a Content-Length body
	chunked   bool
	dec       http1.ChunkedDecoder
	expect    bool  // "Expect: 100-continue": answer 100 before the first read
	done      bool  // the whole body was read
	closed    bool  // the handler closed it
	err       error // the error that ended reading early
}

func (b *body) reset(n int64, chunked, expect bool) {
	b.remaining, b.chunked, b.expect = n, chunked, expect
	b.done, b.closed, b.err = n == 0 && !chunked, false, nil
	if chunked { // the decoder is used only then: a body by length leaves it alone
		b.dec.MaxBody = b.c.s.MaxBodyBytes
		b.dec.Reset()
	}
}

// Read reads body bytes into p.
func (b *body) Read(p []byte) (int, error) {
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
	b.closed = true
	return nil
}

// next consumes up to limit body bytes from the read buffer, reading from
// the connection when it holds none, and returns them (valid until the
// next read), with io.EOF once the body is complete.
func (b *body) next(limit int) ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.done {
		return nil, io.EOF
	}
	c := b.c
	if b.expect && !c.w.wroteCont && !c.w.wroteHeader {
		c.w.wroteCont = true
		c.out = append(c.out, "HTTP/1.1 100 Continue\r\n\r\n"...)
		if err := c.flush(); err != nil {
			b.err = err
			return nil, err
		}
	}
	for {
		if c.Start == c.End {
			if c.EOF {
				b.err = io.ErrUnexpectedEOF
				return nil, b.err
			}
			if err := c.fill(); err != nil {
				b.err = err
				return nil, err
			}
			continue
		}
		in := c.Buf[c.Start:c.End]
		if !b.chunked {
			k := int(min(int64(len(in)), int64(limit), b.remaining))
			c.Consume(k)
			b.remaining -= int64(k)
			if b.remaining == 0 {
				b.done = true
				return in[:k], io.EOF
			}
			return in[:k], nil
		}
		n, data, err := b.dec.Decode(in[:min(len(in), limit)])
		c.Consume(n)
		if err != nil {
			b.err = b.decodeError(err)
			return nil, b.err
		}
		if b.dec.Done() {
			b.done = true
			return data, io.EOF
		}
		if len(data) > 0 {
			return data, nil
		}
	}
}

// decodeError turns a chunked decoding error into what the handler sees:
// *http.MaxBytesError past Server.MaxBodyBytes, else a malformed body.
func (b *body) decodeError(err error) error {
	if http1.StatusOf(err) == http.StatusRequestEntityTooLarge {
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
	switch {
	case b.done:
		return false
	case b.closed, b.err != nil, b.expect && !b.c.w.wroteCont:
		return true
	case !b.chunked && b.remaining >= maxPostHandlerRead:
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
