package carrierhttp

import (
	"errors"
	"io"
)

// inbuf is a connection's read buffer: buf[start:end] is input not yet
// consumed. Both sides' connections embed it: the server's (conn, whose
// fill writes queued answers out first) and the Transport's (clientConn).
type inbuf struct {
	buf        []byte
	start, end int
	eof        bool // the peer closed its side
}

// room makes room for a read when the buffer is full: it moves pending
// input to the front, or grows the buffer (doubling, up to limit bytes, at
// least one byte). It reports whether input moved (slices into it are
// stale then).
func (b *inbuf) room(limit int) bool {
	if b.buf == nil {
		b.buf = make([]byte, initialBuffer)
	}
	if b.end < len(b.buf) {
		return false
	}
	if b.start > 0 {
		b.end = copy(b.buf, b.buf[b.start:b.end])
		b.start = 0
		return true
	}
	nb := make([]byte, max(min(2*len(b.buf), limit), len(b.buf)+1))
	b.end = copy(nb, b.buf[b.start:b.end])
	b.buf = nb
	return true
}

// read reads once from r into the free space (room must have made some).
// At end of file it sets eof and returns nil; a read of nothing without an
// error is io.ErrNoProgress.
func (b *inbuf) read(r io.Reader) (int, error) {
	n, err := r.Read(b.buf[b.end:])
	b.end += n
	switch {
	case errors.Is(err, io.EOF):
		b.eof = true
		return n, nil
	case n > 0:
		return n, nil
	case err == nil:
		return 0, io.ErrNoProgress
	}
	return 0, err
}

// consume drops n bytes of input; with none left the buffer rewinds, and
// one grown past keepBuffer is dropped.
func (b *inbuf) consume(n int) {
	b.start += n
	if b.start == b.end {
		b.start, b.end = 0, 0
		if len(b.buf) > keepBuffer {
			b.buf = nil
		}
	}
}
