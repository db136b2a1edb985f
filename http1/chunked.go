package http1

// ChunkedDecoder decodes a chunked body (RFC 9112 §7.1) from bytes that
// arrive in pieces of any size, keeping its place between pieces, so a body
// of n bytes costs O(n) however it is split. It keeps no reference to the
// bytes it is given. Its accept/reject decisions are net/http's (chunk-size
// lines end in CRLF, at most 16 hex digits, optional extensions; at most 16
// KiB of framing beyond 16 bytes plus twice the data per chunk; trailer
// fields checked as header fields), and an error is reported at the first
// byte that makes the body invalid. One deliberate difference: a trailer
// section other than an empty line must end in CRLF CRLF within
// maxTrailer bytes, where net/http accepts one that ends otherwise if such
// a sequence happens to follow (in the next message) within its 4 KiB
// read buffer. The zero value decodes without a body limit; Reset before
// each body.
type ChunkedDecoder struct {
	// MaxBody bounds the decoded body, in bytes (0 or less: no bound); a
	// chunk that would pass it is refused with a 413 *Error.
	MaxBody int64
	// KeepTrailer makes the decoder keep a copy of the trailer section
	// (see Trailer), for a client that hands trailer fields on.
	KeepTrailer bool

	state   uint8
	first   bool   // at the first trailer line
	crlf    bool   // the last trailer line ended in CRLF
	digits  int    // hex digits of the current chunk-size
	lineLen int    // bytes of the current line, CR and LF left out
	size    uint64 // current chunk-size, then data bytes still to come
	total   int64  // decoded body bytes so far
	excess  int64  // framing bytes beyond what the data justifies
	trailer int    // bytes of the trailer section so far
	kept    []byte // the trailer section, with KeepTrailer
}

// decoder states.
const (
	csSize         uint8 = iota // start of a chunk-size line
	csHex                       // chunk-size digits
	csSizeOWS                   // OWS after the digits
	csExt                       // chunk extension, up to CR
	csSizeLF                    // CR of a chunk-size line seen: LF must follow
	csData                      // chunk data
	csDataCR                    // CR after chunk data
	csDataLF                    // LF after chunk data
	csTrailer                   // start of a trailer line
	csTrailerName               // trailer field name
	csTrailerValue              // trailer field value
	csTrailerVLF                // CR in a trailer value: LF must follow
	csTrailerEnd                // CR at a trailer line start: LF must follow
	csDone                      // body complete
)

// Reset prepares d for the next body, keeping its limits and settings.
func (d *ChunkedDecoder) Reset() {
	*d = ChunkedDecoder{MaxBody: d.MaxBody, KeepTrailer: d.KeepTrailer, kept: d.kept[:0]}
}

// Trailer returns the trailer section of a body decoded with KeepTrailer,
// once Done: its field lines as received, each ending in CRLF or LF, as
// checked (field names are tokens, values have no control characters but
// HTAB, no line is folded); empty when the body has no trailer fields. It
// is valid until Reset or the next Decode.
func (d *ChunkedDecoder) Trailer() []byte {
	if !d.Done() || len(d.kept) < 2 {
		return nil
	}
	return d.kept[:len(d.kept)-2] // the CRLF of the empty line that ends it
}

// maxTrailer bounds the trailer section, in bytes: net/http looks for its
// end within its read buffer.
const maxTrailer = NetHTTPBuffer

// Done reports whether the whole body, trailer section included, was
// decoded.
func (d *ChunkedDecoder) Done() bool { return d.state == csDone }

// Decode reads from p, up to the end of the body or the end of the first
// run of chunk data in p, whichever comes first. It returns how many bytes
// of p it consumed and data, the chunk data among them (a sub-slice of p,
// possibly empty). Call again with the rest of p until it is consumed or
// Done. Errors are *Error values (400, or 413 past MaxBody).
func (d *ChunkedDecoder) Decode(p []byte) (n int, data []byte, err error) {
	for i := 0; i < len(p); {
		switch d.state {
		case csDone:
			return i, nil, nil
		case csData:
			k := len(p) - i
			if uint64(k) > d.size {
				k = int(d.size)
			}
			d.size -= uint64(k)
			if d.size == 0 {
				d.state = csDataCR
			}
			return i + k, p[i : i+k], nil
		}
		if err := d.step(p[i]); err != nil {
			return i, nil, err
		}
		i++
	}
	return len(p), nil, nil
}

// AppendDecoded decodes p as Decode does, appending all its chunk data to
// dst; it returns the extended dst and how many bytes of p it consumed.
func (d *ChunkedDecoder) AppendDecoded(dst, p []byte) ([]byte, int, error) {
	off := 0
	for off < len(p) && !d.Done() {
		n, data, err := d.Decode(p[off:])
		dst = append(dst, data...)
		off += n
		if err != nil {
			return dst, off, err
		}
	}
	return dst, off, nil
}

// step takes one framing byte.
func (d *ChunkedDecoder) step(c byte) error {
	switch d.state {
	case csSize, csHex, csSizeOWS, csExt:
		return d.sizeByte(c)
	case csSizeLF:
		if c != '\n' {
			return errChunked // CR inside the line
		}
		return d.endSize()
	case csDataCR:
		if c != '\r' {
			return errChunked
		}
		d.state = csDataLF
	case csDataLF:
		if c != '\n' {
			return errChunked
		}
		d.state, d.digits, d.lineLen, d.size = csSize, 0, 0, 0
	default:
		return d.trailerByte(c)
	}
	return nil
}

// sizeByte takes a byte of a chunk-size line before its CR. The line is
// 1-16 hex digits, then OWS or ";" and an extension (what net/http's
// trim-trailing-OWS-then-cut-at-';' accepts).
func (d *ChunkedDecoder) sizeByte(c byte) error {
	if c == '\r' {
		if d.digits == 0 {
			return errChunked
		}
		d.state = csSizeLF
		return nil
	}
	d.lineLen++
	if d.lineLen >= maxChunkLine || c == '\n' { // too long, or a bare LF
		return errChunked
	}
	ows := c == ' ' || c == '\t'
	switch d.state {
	case csSize, csHex:
		if v, ok := unhex(c); ok {
			d.digits++
			if d.digits > 16 {
				return errChunked
			}
			d.size = d.size<<4 | uint64(v)
			d.state = csHex
			return nil
		}
		switch {
		case ows && d.state == csHex:
			d.state = csSizeOWS
		case c == ';' && d.state == csHex:
			d.state = csExt
		default:
			return errChunked
		}
	case csSizeOWS:
		if !ows {
			return errChunked
		}
	}
	return nil // csExt: anything but CR and LF
}

// endSize handles the LF of a chunk-size line.
func (d *ChunkedDecoder) endSize() error {
	n := d.size
	d.excess += int64(d.lineLen) + 2
	d.excess = max(d.excess-16-2*int64(min(n, 1<<40)), 0)
	if d.excess > maxChunkExcess {
		return errChunked
	}
	if n == 0 {
		d.state, d.first = csTrailer, true
		return nil
	}
	if d.MaxBody > 0 && (n > uint64(d.MaxBody) || d.total+int64(n) > d.MaxBody) {
		return errBodyTooLarge
	}
	d.total += int64(n)
	d.state = csData
	return nil
}

// trailerByte takes a byte of the trailer section: header fields, as
// the head parser checks them, then an empty line.
func (d *ChunkedDecoder) trailerByte(c byte) error {
	d.trailer++
	if d.trailer > maxTrailer {
		return errTrailer
	}
	if d.KeepTrailer {
		d.kept = append(d.kept, c)
	}
	switch d.state {
	case csTrailer:
		switch {
		case c == '\n':
			return errTrailer // the section must end in CRLF CRLF
		case c == '\r':
			d.state = csTrailerEnd
		case (c == ' ' || c == '\t') && !d.first:
			return errTrailer // obs-fold
		case isTokenChar(c):
			d.state = csTrailerName
		default:
			return errBadHeader
		}
	case csTrailerName:
		switch {
		case c == ':':
			d.state = csTrailerValue
		case !isTokenChar(c):
			return errBadHeader
		}
	case csTrailerValue:
		switch {
		case c == '\n':
			d.state, d.first, d.crlf = csTrailer, false, false
		case c == '\r':
			d.state = csTrailerVLF
		case !isValueChar(c):
			return errBadHeader
		}
	case csTrailerVLF:
		if c != '\n' {
			return errBadHeader // a CR inside the value
		}
		d.state, d.first, d.crlf = csTrailer, false, true
	case csTrailerEnd:
		switch {
		case c != '\n':
			return errBadHeader
		case !d.first && !d.crlf:
			return errTrailer // the section must end in CRLF CRLF
		}
		d.state = csDone
	}
	return nil
}

// unhex returns the value of a hex digit.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
