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
// the head, MaxBodyBytes for the body.
func ParseResponse(buf []byte, r *Response, atEOF bool, o Options) (int, error) {
	o = o.WithDefaults()
	r.Status, r.Reason = 0, nil
	r.reset()
	l, off, err := startLine(buf, o.MaxHeaderBytes, errResponseTooLong)
	if err != nil {
		return 0, err
	}
	// As net/http: "PROTO SP+ CODE [SP REASON]", CODE exactly three bytes.
	sp := bytes.IndexByte(l, ' ')
	if sp < 0 {
		return 0, errBadStatusLine
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
		return 0, errBadStatusLine
	}
	if r.Major, r.Minor, ok = parseVersion(proto); !ok {
		return 0, errBadVersion
	}
	off, err = parseHeaders(buf, 0, off, o.MaxHeaderBytes, &r.Headers)
	if err == errTooLarge {
		err = errResponseTooLong
	}
	if err != nil {
		return 0, err
	}
	f, err := frame(&r.Message)
	if err != nil {
		return 0, err
	}
	r.KeepAlive = r.Major >= 1 && !f.closeTok && (r.Major > 1 || r.Minor >= 1 || f.keepTok)
	r.ContentLength = f.length
	switch {
	case r.Status/100 == 1 || r.Status == 204 || r.Status == 304:
		r.ContentLength = 0
	case f.chunked:
		r.Chunked, r.ContentLength = true, -1
		off, err = parseChunked(buf, off, &r.Message, o.MaxBodyBytes, o.MaxHeaderBytes)
		if err != nil {
			return 0, err
		}
		r.Body = r.chunks
	case f.length >= 0:
		if f.length > o.MaxBodyBytes {
			return 0, errBodyTooLarge
		}
		if int64(len(buf)-off) < f.length {
			return 0, ErrIncomplete
		}
		r.Body = buf[off : off+int(f.length)]
		off += int(f.length)
	default: // delimited by the end of the connection
		r.KeepAlive = false
		if int64(len(buf)-off) > o.MaxBodyBytes {
			return 0, errBodyTooLarge
		}
		if !atEOF {
			return 0, ErrIncomplete
		}
		r.Body = buf[off:]
		off = len(buf)
	}
	return off, nil
}

// parseStatus parses a three-byte status code as strconv.Atoi does in
// net/http (a leading '+' is accepted; negative codes are not).
func parseStatus(code []byte) (int, bool) {
	if len(code) != 3 {
		return 0, false
	}
	d := code
	if d[0] == '+' {
		d = d[1:]
	}
	n := 0
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
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
}

// Writer writes responses. It caches the Date value, so it is owned by one
// goroutine or carrier; the zero value is ready to use.
type Writer struct {
	sec  int64    // Unix second of date
	date [29]byte // "Mon, 02 Jan 2006 15:04:05 GMT"
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
	dst = append(dst, "\r\nDate: "...)
	dst = append(dst, w.dateNow()...)
	if h.ContentType != "" {
		dst = append(dst, "\r\nContent-Type: "...)
		dst = append(dst, h.ContentType...)
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

func (w *Writer) dateNow() []byte {
	now := time.Now()
	if s := now.Unix(); s != w.sec || w.date[0] == 0 {
		w.sec = s
		now.UTC().AppendFormat(w.date[:0], dateFormat)
	}
	return w.date[:]
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
