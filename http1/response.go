package http1

import (
	"bytes"
	"strconv"
	"time"
)

// Response is a parsed response to a GET request.
type Response struct {
	Status int    // status code, e.g. 200
	Reason []byte // reason phrase, e.g. "OK"
	Message
}

// ParseResponse parses one complete response to a GET (not HEAD) request
// from the start of buf into r and returns the number of bytes it took. A
// response without Content-Length or chunked coding ends when the server
// closes: pass atEOF once the connection has reached end of file; until then
// such a response is ErrIncomplete. Limits come from o: MaxHeaderBytes for
// the head, MaxBodyBytes for the body. Like ParseResponseHead it may write
// to buf (see there).
func ParseResponse(buf []byte, r *Response, atEOF bool, o Options) (int, error) {
	o = o.WithDefaults()
	off, err := ParseResponseHead(buf, r, false, o)
	if err != nil {
		return 0, err
	}
	return wholeBody(buf, off, &r.Message, atEOF, o.MaxBodyBytes)
}

// wholeBody sets the body of m, whose head ends at off in buf, from the
// bytes that follow it and returns the offset after the body.
func wholeBody(buf []byte, off int, m *Message, atEOF bool, maxBody int64) (int, error) {
	b := BodyReader{MaxBody: maxBody}
	b.Reset(m.ContentLength, m.Chunked)
	m.chunks = m.chunks[:0]
	end, done, err := takeBody(&b, m, buf, off, off, atEOF, false)
	switch {
	case err != nil:
		return 0, err
	case !done:
		return 0, ErrIncomplete
	}
	return end, nil
}

// ParseResponseHead parses the status line and header section of a
// response at the start of buf into r (everything but Body) and returns the
// length of the head; the body, if any, follows it. It returns
// ErrIncomplete while buf holds only part of a head, and an *Error for a
// malformed one or one longer than o.MaxHeaderBytes. head marks the answer
// to a HEAD request, which has no body whatever its fields say.
//
// r then says how the body is delimited: ContentLength >= 0 bytes (0 for
// HEAD, 1xx, 204 and 304 answers), Chunked, or, with ContentLength -1 and
// not Chunked, the end of the connection (KeepAlive is then false).
// Transfer codings other than chunked are refused (501).
//
// A header line folded onto the next (obs-fold) is accepted, as RFC 9112
// §5.2 asks of a user agent, which must replace each obs-fold with one or
// more SP before interpreting the value: the parser overwrites the CR and
// LF of each fold in buf with spaces, in place, so the field's Value is one
// line (e.g. "a,\r\n b" becomes "a,   b"). That is the only write to buf,
// and parsing the rewritten bytes again gives the same result.
// It does not allocate once r.Headers has grown to the traffic's size.
func ParseResponseHead(buf []byte, r *Response, head bool, o Options) (int, error) {
	var p HeadParser
	return p.Parse(buf, r, head, o)
}

// HeadParser parses a request or response head that arrives in pieces,
// resuming at the line where it stopped: a head of n bytes costs O(n)
// however it is split. The zero value is ready; Reset before each head.
type HeadParser struct {
	next     int  // start of the first line not yet parsed
	scan     int  // where the search for the next LF resumes
	started  bool // the start line was parsed
	valStart int  // offset in buf of the last field's value, for obs-fold
}

// Reset prepares p for the next head.
func (p *HeadParser) Reset() { *p = HeadParser{} }

// Parse is ParseResponseHead for a head arriving in pieces: buf holds all
// of it received so far, and r is the Response given to the earlier calls
// since Reset. The bytes given earlier must still be where they were (a
// buffer that grew by append qualifies: the old array keeps its bytes);
// where they moved, Reset and parse again. After an error, Reset.
func (p *HeadParser) Parse(buf []byte, r *Response, head bool, o Options) (int, error) {
	if p.scan == 0 {
		r.Status, r.Reason = 0, nil
		r.reset()
	}
	n, err := p.lines(buf, &r.Message, headLimit(o), errResponseTooLong, nil, r.parseStatusLine)
	if err != nil {
		return 0, err
	}
	return n, r.frame(head)
}

// headLimit is o.MaxHeaderBytes or its default.
func headLimit(o Options) int {
	if o.MaxHeaderBytes <= 0 {
		return DefaultMaxHeaderBytes
	}
	return o.MaxHeaderBytes
}

// lines is the line loop of both heads: it resumes at the first line of buf
// not yet parsed and goes on to the empty line that ends the header
// section, whose end it returns. The start line goes to startLine, header
// fields to m.Headers. A head longer than limit bytes is tooLarge. A folded
// line is refused with foldErr, or with foldErr nil joined to the field
// before it.
func (p *HeadParser) lines(buf []byte, m *Message, limit int, tooLarge, foldErr error, startLine func([]byte) error) (int, error) {
	for {
		i := bytes.IndexByte(buf[p.scan:], '\n')
		if i < 0 {
			p.scan = len(buf)
			if len(buf) > limit {
				return 0, tooLarge
			}
			return 0, ErrIncomplete
		}
		start, end := p.next, p.scan+i+1 // the line and the offset after its LF
		p.scan, p.next = end, end
		if end > limit {
			return 0, tooLarge
		}
		l := buf[start : end-1]
		if len(l) > 0 && l[len(l)-1] == '\r' {
			l = l[:len(l)-1]
		}
		switch {
		case !p.started:
			if err := startLine(l); err != nil {
				return 0, err
			}
			p.started = true
		case len(l) == 0:
			return end, nil
		case l[0] == ' ' || l[0] == '\t': // obs-fold: the last value goes on
			if len(m.Headers) == 0 {
				return 0, errBadHeader
			}
			if foldErr != nil {
				return 0, foldErr
			}
			if !validValue(l) {
				return 0, errBadHeader
			}
			// Replace the line break before l with spaces (RFC 9112
			// §5.2): the CR, if any, directly precedes the LF.
			buf[start-1] = ' '
			if buf[start-2] == '\r' {
				buf[start-2] = ' '
			}
			m.Headers[len(m.Headers)-1].Value = trimOWS(buf[p.valStart : start+len(l)])
		default:
			name, value, err := field(l)
			if err != nil {
				return 0, err
			}
			m.Headers = append(m.Headers, Header{Name: name, Value: value})
			// value is a tail of l trimmed at its end: its capacity says
			// where it starts.
			p.valStart = start + cap(l) - cap(value)
		}
	}
}

// parseStatusLine parses "PROTO SP+ CODE [SP REASON]" as net/http does,
// CODE exactly three bytes.
func (r *Response) parseStatusLine(l []byte) error {
	sp := bytes.IndexByte(l, ' ')
	if sp < 0 {
		return errBadStatusLine
	}
	proto, status := l[:sp], l[sp+1:]
	for len(status) > 0 && status[0] == ' ' {
		status = status[1:]
	}
	code := status
	if i := bytes.IndexByte(status, ' '); i >= 0 {
		code, r.Reason = status[:i], status[i+1:]
	}
	var ok bool
	if r.Status, ok = parseStatus(code); !ok {
		return errBadStatusLine
	}
	if r.Major, r.Minor, ok = parseVersion(proto); !ok {
		return errBadVersion
	}
	return nil
}

// frame sets how r's body is delimited and whether the connection stays
// open, from its header fields.
func (r *Response) frame(head bool) error {
	f, err := frame(&r.Message)
	if err != nil {
		return err
	}
	r.KeepAlive = r.Major >= 1 && !f.closeTok && (r.Major > 1 || r.Minor >= 1 || f.keepTok)
	r.ContentLength = f.length
	switch {
	case head || r.Status/100 == 1 || r.Status == 204 || r.Status == 304:
		r.ContentLength = 0
	case f.chunked:
		r.Chunked, r.ContentLength = true, -1
	case f.length < 0: // delimited by the end of the connection
		r.KeepAlive = false
	}
	return nil
}

// parseStatus parses a three-byte status code as strconv.Atoi does in
// net/http (a leading '+' is accepted; negative codes are not, but "-00"
// is zero, which net/http accepts).
func parseStatus(code []byte) (int, bool) {
	if len(code) != 3 {
		return 0, false
	}
	d := code
	neg := d[0] == '-'
	if d[0] == '+' || neg {
		d = d[1:]
	}
	n := 0
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg && n != 0 {
		return 0, false
	}
	return n, true
}

// ResponseHead describes a response to write.
type ResponseHead struct {
	Status      int    // status code; its reason phrase comes from StatusText
	ContentType string // Content-Type value; empty: none
	// Close adds "Connection: close": the server closes after this response.
	Close bool
	// KeepAlive10 adds "Connection: keep-alive", which an HTTP/1.0 client
	// needs to keep the connection open.
	KeepAlive10 bool
	// OmitBody writes Content-Length but no body (the answer to HEAD).
	OmitBody bool
	// Server is the Server header's value; empty: none.
	Server string
	// Allow is the Allow header's value; empty: none.
	Allow string
}

// Writer writes responses. It caches the Date value, so it is owned by one
// goroutine or carrier; the zero value is ready to use.
type Writer struct {
	// Now is the clock responses are dated by; nil: time.Now. ServeConn
	// sets its connection's (Clock).
	Now  func() time.Time
	date Date
}

// Date renders the Date field's value (RFC 9110's IMF-fixdate) once a
// second; the zero value is ready to use. http1's Writer and carrierhttp's
// connections date their responses with one each.
type Date struct {
	sec int64    // Unix second of buf
	buf [29]byte // "Mon, 02 Jan 2006 15:04:05 GMT"
}

// Append appends now's rendering to dst: the last one while now is in its
// second, else a new one.
func (d *Date) Append(dst []byte, now time.Time) []byte {
	if s := now.Unix(); s != d.sec || d.buf[0] == 0 {
		d.sec = s
		now.UTC().AppendFormat(d.buf[:0], dateFormat)
	}
	return append(dst, d.buf[:]...)
}

// dateFormat is http.TimeFormat (RFC 9110 IMF-fixdate).
const dateFormat = "Mon, 02 Jan 2006 15:04:05 GMT"

// AppendResponse appends the response h with body to dst and returns the
// extended slice. It allocates only when dst must grow.
func (w *Writer) AppendResponse(dst []byte, h ResponseHead, body []byte) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(h.Status), 10)
	dst = append(dst, ' ')
	dst = append(dst, StatusText(h.Status)...)
	if h.Server != "" {
		dst = append(dst, "\r\nServer: "...)
		dst = append(dst, h.Server...)
	}
	dst = append(dst, "\r\nDate: "...)
	dst = w.date.Append(dst, w.now())
	if h.ContentType != "" {
		dst = append(dst, "\r\nContent-Type: "...)
		dst = append(dst, h.ContentType...)
	}
	if h.Allow != "" {
		dst = append(dst, "\r\nAllow: "...)
		dst = append(dst, h.Allow...)
	}
	dst = append(dst, "\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	switch {
	case h.Close:
		dst = append(dst, "\r\nConnection: close"...)
	case h.KeepAlive10:
		dst = append(dst, "\r\nConnection: keep-alive"...)
	}
	dst = append(dst, "\r\n\r\n"...)
	if !h.OmitBody {
		dst = append(dst, body...)
	}
	return dst
}

// now is the time by w's clock.
func (w *Writer) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// AppendGet appends a GET request for target on host, keeping the
// connection alive, to dst.
func AppendGet(dst []byte, target, host string) []byte {
	dst = append(dst, "GET "...)
	dst = append(dst, target...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	return append(dst, "\r\n\r\n"...)
}
