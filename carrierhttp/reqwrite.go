package carrierhttp

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/spindle-lab/spindle/http1"
)

// This file writes a request head for the Transport: the common request
// (no body, no trailer, an origin-form target) directly into the
// connection's buffer, with the bytes net/http's Request.Write would
// write (checked by TestAppendRequestDifferential); any other goes through
// Request.Write.

// defaultUserAgent is net/http's User-Agent for a request without one.
const defaultUserAgent = "Go-http-client/1.1"

// maxFastHeaderKeys bounds the header keys appendRequest sorts on the
// stack; a request with more goes through Request.Write.
const maxFastHeaderKeys = 32

// checkRequest refuses what net/http's Transport refuses before writing:
// an invalid method, header field name or value (a CR or LF in one would
// let a caller's data split the head).
func checkRequest(req *http.Request) error {
	if req.Method != "" && !http1.ValidToken(req.Method) {
		return fmt.Errorf("carrierhttp: invalid method %q", req.Method)
	}
	for k, vv := range req.Header {
		if !http1.ValidToken(k) {
			return fmt.Errorf("carrierhttp: invalid header field name %q", k)
		}
		for _, v := range vv {
			if !validFieldValue(v) {
				// Not the value: it may be a secret.
				return fmt.Errorf("carrierhttp: invalid header field value for %q", k)
			}
		}
	}
	return nil
}

// validFieldValue reports whether v may be sent as a field value: no
// control character but HTAB (httpguts.ValidHeaderFieldValue).
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// errSlowPath says a request is not one appendRequest writes: Request.Write
// does.
var errSlowPath = errors.New("carrierhttp: request needs Request.Write")

// appendRequest appends the head of req, a request checked by
// checkRequest, to dst as Request.Write writes it, or returns errSlowPath
// for a request it does not handle: one with a body, trailers, a
// transfer coding, Close set, an opaque URL, CONNECT, a Host that is not
// plain ASCII or has a zone, a target with control bytes, or more than
// maxFastHeaderKeys header keys.
func appendRequest(dst []byte, req *http.Request) ([]byte, error) {
	if req.Body != nil && req.Body != http.NoBody || req.ContentLength != 0 ||
		req.TransferEncoding != nil || req.Trailer != nil || req.Close ||
		req.URL.Opaque != "" || req.Method == http.MethodConnect || len(req.Header) > maxFastHeaderKeys {
		return dst, errSlowPath
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if host == "" || !http1.ValidHost(host) || strings.IndexByte(host, '%') >= 0 {
		return dst, errSlowPath // Request.Write cleans or refuses it
	}
	path := req.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	if hasCTL(path) || hasCTL(req.URL.RawQuery) {
		return dst, errSlowPath // Request.Write refuses it
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	dst = append(dst, method...)
	dst = append(dst, ' ')
	dst = append(dst, path...)
	if req.URL.ForceQuery || req.URL.RawQuery != "" {
		dst = append(dst, '?')
		dst = append(dst, req.URL.RawQuery...)
	}
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	dst = append(dst, "\r\n"...)
	ua := defaultUserAgent
	if v, ok := req.Header["User-Agent"]; ok {
		ua = ""
		if len(v) > 0 {
			ua = textproto.TrimString(v[0])
		}
	}
	if ua != "" {
		dst = append(dst, "User-Agent: "...)
		dst = append(dst, ua...)
		dst = append(dst, "\r\n"...)
	}
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		// net/http declares the empty body of these ("many servers
		// expect a Content-Length").
		dst = append(dst, "Content-Length: 0\r\n"...)
	}
	// The fields in net/http's order: sorted by key.
	var arr [maxFastHeaderKeys]string
	for _, k := range sortedKeys(req.Header, arr[:0]) {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue // written above, or by the body's framing
		}
		dst = appendField(dst, k, req.Header[k])
	}
	return append(dst, "\r\n"...), nil
}

// hasCTL reports whether s has an ASCII control byte.
func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == 0x7f {
			return true
		}
	}
	return false
}
