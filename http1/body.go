package http1

import "io"

// BodyReader frames one message body as its bytes arrive: a length
// (Content-Length), the chunked coding with its trailer section
// (ChunkedDecoder), or, for a response, the end of the connection. It is
// the one body framing of this package's parsers and readers and of
// carrierhttp's Server and Transport: Take frames bytes the caller holds,
// Next streams a body out of a connection's InBuf. It keeps no reference
// to the bytes it is given. Set MaxBody and KeepTrailer, then Reset before
// each body.
type BodyReader struct {
	// MaxBody bounds the body, in bytes (decoded size for a chunked one; 0
	// or less: no bound): a body by length over it is refused before its
	// first byte, a chunked one or one delimited by the close once it
	// passes it, with a 413 *Error.
	MaxBody int64
	// KeepTrailer keeps a copy of a chunked body's trailer section (see
	// Trailer), for a client that hands trailer fields on.
	KeepTrailer bool

	dec     ChunkedDecoder // the chunked body's state; reset only for one
	left    int64          // bytes to come of a body by length; -1: chunked or to the close
	taken   int64          // bytes taken of a body delimited by the close
	chunked bool
	done    bool
}

// Reset prepares r for a body of length bytes, or, with length -1, one
// that is chunked or (chunked false) delimited by the end of the
// connection.
func (r *BodyReader) Reset(length int64, chunked bool) {
	r.chunked, r.taken = chunked, 0
	switch {
	case chunked:
		r.left, r.done = -1, false
		// The decoder is reset only for a chunked body: one by length
		// leaves its hundred-odd bytes alone.
		r.dec.MaxBody, r.dec.KeepTrailer = r.MaxBody, r.KeepTrailer
		r.dec.Reset()
	case length < 0:
		r.left, r.done = -1, false
	default:
		r.left, r.done = length, length == 0
	}
}

// Done reports whether the whole body (a chunked one's trailer section
// included) was taken.
func (r *BodyReader) Done() bool { return r.done }

// Chunked reports whether the body is chunked.
func (r *BodyReader) Chunked() bool { return r.chunked }

// Length returns how many bytes of a body by length are still to come, or
// -1 for a chunked body or one delimited by the close.
func (r *BodyReader) Length() int64 { return r.left }

// Trailer returns the trailer section of a chunked body read with
// KeepTrailer once Done (ChunkedDecoder.Trailer), else nil.
func (r *BodyReader) Trailer() []byte {
	if !r.chunked {
		return nil
	}
	return r.dec.Trailer()
}

// Take frames the bytes of p, which continue the body: it returns how many
// of them it consumed and data, the body bytes among them (a sub-slice of
// p, possibly empty). A body by length takes at most what is left of it; a
// chunked one stops at the end of the first run of chunk data in p (call
// again with the rest until p is consumed or Done); one delimited by the
// close takes all of p, and is Done once atEOF says no byte follows p.
// Errors are *Error values (400 for a malformed chunked body, 413 past
// MaxBody).
func (r *BodyReader) Take(p []byte, atEOF bool) (n int, data []byte, err error) {
	switch {
	case r.done:
		return 0, nil, nil
	case r.chunked:
		n, data, err = r.dec.Decode(p)
		r.done = r.dec.Done()
		return n, data, err
	case r.left >= 0:
		if r.MaxBody > 0 && r.left > r.MaxBody {
			return 0, nil, errBodyTooLarge
		}
		k := int(min(int64(len(p)), r.left))
		r.left -= int64(k)
		r.done = r.left == 0
		return k, p[:k], nil
	}
	r.taken += int64(len(p))
	if r.MaxBody > 0 && r.taken > r.MaxBody {
		return 0, nil, errBodyTooLarge
	}
	r.done = atEOF
	return len(p), p, nil
}

// Next returns the next body bytes, at most limit of them (limit > 0),
// consuming them from in's pending input and reading from src when none
// is pending; they are valid until the next read into in. It returns
// io.EOF with the last of the body (or alone, after it),
// io.ErrUnexpectedEOF when the connection ends before the body does, an
// *Error from Take, or src's error.
func (r *BodyReader) Next(in *InBuf, src Source, limit int) ([]byte, error) {
	for !r.done {
		if in.Start == in.End {
			if in.EOF {
				if r.left < 0 && !r.chunked { // delimited by the close
					r.done = true
					break
				}
				return nil, io.ErrUnexpectedEOF
			}
			// Nothing is pending: Room only makes a buffer that Consume
			// dropped.
			in.Room(initialBuffer)
			if err := src.Refill(in); err != nil {
				return nil, err
			}
			continue
		}
		p := in.Buf[in.Start:in.End]
		n, data, err := r.Take(p[:min(len(p), limit)], false)
		in.Consume(n)
		switch {
		case err != nil:
			return nil, err
		case r.done:
			return data, io.EOF
		case len(data) > 0:
			return data, nil
		}
	}
	return nil, io.EOF
}

// Bypass reports whether a read of n body bytes is better made from the
// connection straight into the caller's memory than through in: nothing
// is pending, the connection has not ended, the body is not chunked, and n
// is at least in's first size (a read that large gains nothing from the
// buffer). The caller frames what it reads with Take.
func (r *BodyReader) Bypass(in *InBuf, n int) bool {
	return in.Start == in.End && !in.EOF && !r.chunked && !r.done && n >= initialBuffer
}

// takeBody goes on with the body of m, framed by r, in p, whose first head
// bytes are m's head and whose bytes up to seen were taken before, and
// returns how far p is taken now and whether the body is complete. Chunk
// data is appended to m.chunks; once complete, m.Body is the body (chunks,
// or the bytes of p after the head), unless discard drops every body byte
// and leaves m.Body nil. It serves the whole-buffer parsers and the
// readers alike.
func takeBody(r *BodyReader, m *Message, p []byte, head, seen int, atEOF, discard bool) (int, bool, error) {
	for {
		n, data, err := r.Take(p[seen:], atEOF)
		if err != nil {
			return seen, false, err
		}
		seen += n
		if r.chunked && !discard {
			m.chunks = append(m.chunks, data...)
		}
		switch {
		case r.done && discard:
			return seen, true, nil
		case r.done && r.chunked:
			m.Body = m.chunks
			return seen, true, nil
		case r.done:
			m.Body = p[head:seen]
			return seen, true, nil
		case seen == len(p):
			return seen, false, nil
		}
	}
}
