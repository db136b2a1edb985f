package http1

import "bytes"

// Header is one header field as received: Name as sent (not canonicalized),
// Value with surrounding spaces and tabs removed.
type Header struct {
	Name, Value []byte
}

// Message holds what requests and responses share. Its slices point into the
// parsed buffer, or for a chunked body into a scratch buffer the Message
// keeps and reuses.
type Message struct {
	Major, Minor int      // protocol version, e.g. 1 and 1
	Headers      []Header // header fields in the order received
	// ContentLength is the body length declared by Content-Length (0 for a
	// response that has none: to HEAD, 1xx, 204, 304), or -1 when the body
	// is chunked or (responses only) delimited by the close.
	ContentLength int64
	Chunked       bool   // Transfer-Encoding: chunked
	Body          []byte // the whole body, decoded
	// KeepAlive reports whether the connection may carry another message
	// after this one (HTTP/1.1 without "Connection: close", HTTP/1.0 with
	// "Connection: keep-alive").
	KeepAlive bool

	chunks []byte // reused buffer for decoded chunked bodies (reset by their decoding)
}

// Get returns the value of the first header field named name (compared
// case-insensitively), or nil.
func (m *Message) Get(name string) []byte {
	for i := range m.Headers {
		if equalFold(m.Headers[i].Name, name) {
			return m.Headers[i].Value
		}
	}
	return nil
}

func (m *Message) reset() {
	m.Major, m.Minor = 0, 0
	m.Headers = m.Headers[:0]
	m.ContentLength = 0
	m.Chunked = false
	m.Body = nil
	m.KeepAlive = false
}

// equalLower reports whether b equals s, ignoring case, where s is
// lowercase letters, digits and '-', and b has no control characters (a
// field name or value as checked): b[i]|0x20 then equals s[i] only for
// s[i] itself and its uppercase form.
func equalLower(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if b[i]|0x20 != s[i] {
			return false
		}
	}
	return true
}

// equalFold reports whether b equals the ASCII string s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// hasToken reports whether a comma-separated header value contains token,
// ignoring case and surrounding spaces (net/http's HeaderValuesContainsToken
// for one value).
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		var elem []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			elem, v = v[:i], v[i+1:]
		} else {
			elem, v = v, nil
		}
		if equalLower(trimOWS(elem), token) {
			return true
		}
	}
	return false
}

// trimOWS removes leading and trailing spaces and tabs.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && isOWS(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isOWS(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// isOWS reports whether c is whitespace around a field value or list
// element: SP or HTAB. A value has no CR or LF: a folded one (obs-fold,
// responses only) had its line breaks replaced with spaces.
func isOWS(c byte) bool { return c == ' ' || c == '\t' }

// isTokenChar reports whether c is an RFC 9110 tchar.
func isTokenChar(c byte) bool { return tokenTable[c] }

// ValidToken reports whether s is an RFC 9110 token (a method, a field
// name): one tchar or more. carrierhttp checks the names it writes with it.
func ValidToken(s string) bool { return s != "" && allIn(s, &tokenTable) }

// allIn reports whether every byte of v is in the table t.
func allIn[T string | []byte](v T, t *[256]bool) bool {
	for i := 0; i < len(v); i++ {
		if !t[v[i]] {
			return false
		}
	}
	return true
}

// The byte tables of this package and carrierhttp.
var (
	tokenTable = alnumAnd("!#$%&'*+-.^_`|~")
	// hostTable is what validHost accepts.
	hostTable = alnumAnd("!$%&'()*+,-.:;=[]_~")
	// plainPathTable is what net/url leaves unescaped in a path: letters,
	// digits, "-_.~" and "$&+,/:;=@".
	plainPathTable = alnumAnd("-_.~$&+,/:;=@")
)

// alnumAnd returns the table of ASCII letters, digits and the bytes of
// extra.
func alnumAnd(extra string) (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range extra {
		t[c] = true
	}
	return t
}

// isValueChar reports whether c may appear in a header value: HTAB, SP,
// VCHAR or obs-text.
func isValueChar(c byte) bool { return c == '\t' || (c >= 0x20 && c != 0x7f) }

// parseVersion parses "HTTP/d.d" as net/http's ParseHTTPVersion does.
func parseVersion(v []byte) (major, minor int, ok bool) {
	if len(v) != len("HTTP/1.1") || string(v[:5]) != "HTTP/" || v[6] != '.' ||
		v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9' {
		return 0, 0, false
	}
	return int(v[5] - '0'), int(v[7] - '0'), true
}

// field checks a header line that is neither empty nor folded and returns
// its name and its value without surrounding whitespace.
func field(l []byte) (name, value []byte, err error) {
	colon := 0
	for colon < len(l) && isTokenChar(l[colon]) {
		colon++
	}
	if colon == 0 || colon == len(l) || l[colon] != ':' {
		return nil, nil, errBadHeader
	}
	value = l[colon+1:]
	if !validValue(value) {
		return nil, nil, errBadHeader
	}
	return l[:colon], trimOWS(value), nil
}

// validValue reports whether every byte of v may appear in a field value.
func validValue(v []byte) bool {
	for _, c := range v {
		if !isValueChar(c) {
			return false
		}
	}
	return true
}

// framing holds what the header fields say about the body and connection.
type framing struct {
	length    int64 // Content-Length, -1 if absent
	chunked   bool
	closeTok  bool   // Connection: close
	keepTok   bool   // Connection: keep-alive
	hosts     int    // number of Host fields
	host      []byte // value of the last Host field
	te        bool   // a Transfer-Encoding field is present
	badTrail  bool   // Trailer names a field that may not be a trailer
	hasTrailr bool
}

// frame inspects m's headers as net/http's readTransfer does.
func frame(m *Message) (framing, error) {
	f := framing{length: -1}
	var cl []byte
	tes := 0
	var te []byte
	for i := range m.Headers {
		h := &m.Headers[i]
		switch len(h.Name) {
		case len("host"):
			if equalLower(h.Name, "host") {
				f.hosts++
				f.host = h.Value
			}
		case len("content-length"):
			if equalLower(h.Name, "content-length") {
				if cl != nil && !bytes.Equal(cl, h.Value) {
					return f, errLengths
				}
				cl = h.Value
			}
		case len("transfer-encoding"):
			if equalLower(h.Name, "transfer-encoding") {
				tes++
				te = h.Value
			}
		case len("connection"):
			if equalLower(h.Name, "connection") {
				f.closeTok = f.closeTok || hasToken(h.Value, "close")
				f.keepTok = f.keepTok || hasToken(h.Value, "keep-alive")
			}
		case len("trailer"):
			if equalLower(h.Name, "trailer") {
				f.hasTrailr = true
				f.badTrail = f.badTrail || hasToken(h.Value, "transfer-encoding") ||
					hasToken(h.Value, "trailer") || hasToken(h.Value, "content-length")
			}
		}
	}
	// HTTP/1.0 messages cannot be chunked: net/http ignores the field (a
	// request's caller refuses it, see Request.frame). Version 0.0 is read
	// as 1.1 here, as net/http's readTransfer reads it ("default to
	// HTTP/1.1"); only a response gets here with it (Request.frame refuses
	// a major version other than 1).
	f.te = tes > 0
	if tes > 0 && (m.Major > 1 || m.Major == 1 && m.Minor >= 1 || m.Major == 0 && m.Minor == 0) {
		if tes > 1 || !equalLower(te, "chunked") {
			return f, errCoding
		}
		f.chunked = true
	}
	if cl != nil {
		n, ok := parseLength(cl)
		if !ok {
			return f, errBadLength
		}
		f.length = n
	}
	if f.chunked && f.hasTrailr && f.badTrail {
		return f, errBadTrailerKey
	}
	return f, nil
}

// validHost reports whether a Host field value has only the bytes
// net/http's server accepts (httpguts.ValidHostHeader): letters, digits
// and "!$%&'()*+,-.:;=[]_~", so a host with a space, '/', '@' or a byte
// over 0x7f is refused.
func validHost[T string | []byte](v T) bool { return allIn(v, &hostTable) }

// ValidHost is validHost for a string: carrierhttp's Transport checks the
// hosts it sends with it, as net/http's does.
func ValidHost(v string) bool { return validHost(v) }

// PlainPath reports whether net/url's URL would store path as it is: no
// escapes to decode and nothing its EscapedPath would escape (RawPath
// stays empty), so that carrierhttp makes the URL of such a request's
// target without net/url.
func PlainPath(path string) bool { return allIn(path, &plainPathTable) }

// parseLength parses a Content-Length: decimal digits (leading zeros
// allowed, as strconv.ParseUint does), below 2^63.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > 1<<63/10 { // n*10 would not fit in 63 bits
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n >= 1<<63 {
			return 0, false
		}
	}
	return int64(n), true
}

// maxChunkLine is net/http's limit on a chunk-size line, in bytes: its
// read buffer.
const maxChunkLine = NetHTTPBuffer

// maxChunkExcess is net/http's bound on chunk framing overhead beyond 16
// bytes plus twice the data per chunk, against senders that trickle data.
const maxChunkExcess = 16 << 10
