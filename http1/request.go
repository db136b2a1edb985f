package http1

import (
	"bytes"
	"net/url"
)

// Request is a parsed request. Method and Target point into the parsed
// buffer.
type Request struct {
	Method []byte // e.g. "GET"
	Target []byte // request-target as sent, e.g. "/fruits?x=1"
	Message
}

// Path returns the path of the target, as sent: TargetPath(r.Target).
func (r *Request) Path() []byte { return TargetPath(r.Target) }

// TargetPath returns the path of a request target as sent (not unescaped):
// the origin form "/p?q" gives "/p"; the absolute form "http://h/p?q" gives
// "/p", which a server must accept (RFC 9112 §3.2.2), and "http://h" gives
// ""; any other form (authority, "*") is returned without its query. It
// serves []byte targets of this package and net/http's RequestURI alike.
func TargetPath[T string | []byte](target T) T {
	for i := 0; i < len(target); i++ {
		if target[i] == '?' {
			target = target[:i]
			break
		}
	}
	if len(target) == 0 || target[0] == '/' {
		return target
	}
	for i := 0; i+2 < len(target); i++ {
		if target[i] == ':' && target[i+1] == '/' && target[i+2] == '/' {
			rest := target[i+3:] // authority, then the path
			for j := 0; j < len(rest); j++ {
				if rest[j] == '/' {
					return rest[j:]
				}
			}
			return rest[:0]
		}
	}
	return target
}

// ParseRequest parses one complete request from the start of buf into r and
// returns the number of bytes it took. It returns ErrIncomplete when buf
// holds only part of a request, and an *Error for a request to refuse.
// Limits come from o (zero fields: defaults). A request for HTTP/1.1 must
// carry exactly one Host field (RFC 9112 §3.2; CONNECT excepted, as in
// net/http); more than one is refused in every version, and so is one with
// bytes net/http's server refuses in a host. Beyond net/http, as RFC 9112
// asks: an HTTP/1.0 request with Transfer-Encoding is refused (§6.1), and
// one with both Transfer-Encoding and Content-Length is read as chunked with
// KeepAlive false, so that the server closes after answering (§6.3).
func ParseRequest(buf []byte, r *Request, o Options) (int, error) {
	o = o.WithDefaults()
	var p HeadParser
	off, err := p.ParseRequest(buf, r, o)
	if err != nil {
		return 0, err
	}
	return wholeBody(buf, off, &r.Message, false, o.MaxBodyBytes)
}

// ParseRequest parses the head of a request (request line and header
// section) arriving in pieces, as Parse does a response's: it sets
// everything but Body and returns the head's length; ParseRequest (the
// function) is this and then the body. r.ContentLength is then the length
// of the body (0 without one), or -1 with Chunked. The bytes given earlier
// must still be where they were; where they moved, Reset and parse again.
// After an error, Reset.
func (p *HeadParser) ParseRequest(buf []byte, r *Request, o Options) (int, error) {
	if p.scan == 0 {
		r.Method, r.Target = nil, nil
		r.reset()
	}
	n, err := p.lines(buf, &r.Message, headLimit(o), errTooLarge, errFolded, r.parseRequestLine)
	if err != nil {
		return 0, err
	}
	return n, r.frame()
}

// parseRequestLine parses "METHOD SP TARGET SP VERSION".
func (r *Request) parseRequestLine(l []byte) error {
	sp1 := bytes.IndexByte(l, ' ')
	if sp1 < 0 {
		return errBadRequestLine
	}
	sp2 := bytes.IndexByte(l[sp1+1:], ' ')
	if sp2 < 0 {
		return errBadRequestLine
	}
	sp2 += sp1 + 1
	r.Method, r.Target = l[:sp1], l[sp1+1:sp2]
	if len(r.Method) == 0 {
		return errBadMethod
	}
	for _, c := range r.Method {
		if !isTokenChar(c) {
			return errBadMethod
		}
	}
	var ok bool
	if r.Major, r.Minor, ok = parseVersion(l[sp2+1:]); !ok {
		return errBadVersion
	}
	if !validTarget(r.Method, r.Target) {
		return errBadTarget
	}
	return nil
}

// frame makes the checks of a whole request head and sets how its body is
// delimited and whether the connection stays open.
func (r *Request) frame() error {
	if r.Major != 1 {
		return errVersion
	}
	f, err := frame(&r.Message)
	if err != nil {
		return err
	}
	if f.hosts > 1 {
		return errManyHosts
	}
	// CONNECT names its host in its target: net/http's server does not
	// require the field for it (the server package refuses CONNECT anyway).
	if f.hosts == 0 && r.Minor >= 1 && string(r.Method) != "CONNECT" {
		return errNoHost
	}
	if f.hosts == 1 && !validHost(f.host) {
		return errBadHost
	}
	// RFC 9112 §6.1: an HTTP/1.0 request with Transfer-Encoding has
	// faulty framing (net/http ignores the field and reads what follows as
	// the next request).
	if r.Minor == 0 && f.te {
		return errCoding10
	}
	if r.Minor == 0 {
		r.KeepAlive = f.keepTok && !f.closeTok
	} else {
		r.KeepAlive = !f.closeTok
	}
	switch {
	case f.chunked:
		r.Chunked, r.ContentLength = true, -1
		// RFC 9112 §6.3: with both fields the chunked coding wins and
		// the server must close the connection after answering (a
		// request smuggling attempt, perhaps, or a broken client).
		if f.length >= 0 {
			r.KeepAlive = false
		}
	case f.length > 0:
		r.ContentLength = f.length
	}
	return nil
}

// expectsContinue reports whether r asks for "100 Continue" before its body.
func (r *Request) expectsContinue() bool {
	return r.Minor >= 1 && hasToken(r.Get("Expect"), "100-continue")
}

// validTarget reports whether url.ParseRequestURI (with net/http's
// treatment of CONNECT) accepts target. The common origin form is checked
// here without allocating; other forms go to net/url.
func validTarget(method, target []byte) bool {
	if len(target) == 0 { // net/http parses CONNECT's as "http://"
		return string(method) == "CONNECT"
	}
	for _, c := range target {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	if target[0] == '/' {
		path := target
		if i := bytes.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		for i := 0; i < len(path); i++ {
			if path[i] == '%' {
				if i+2 >= len(path) || !isHex(path[i+1]) || !isHex(path[i+2]) {
					return false
				}
				i += 2
			}
		}
		return true
	}
	if len(target) == 1 && target[0] == '*' {
		return true
	}
	raw := string(target)
	if string(method) == "CONNECT" {
		raw = "http://" + raw
	}
	_, err := url.ParseRequestURI(raw)
	return err == nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
