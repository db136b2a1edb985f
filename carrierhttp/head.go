package carrierhttp

import (
	"net/http"
	"net/textproto"

	"github.com/spindle-lab/spindle/http1"
)

// headStrings makes the strings of a parsed head (a request's or a
// response's) from one copy of its bytes: each string is a piece of that
// copy, so a head costs one allocation for its strings however many fields
// it has. It serves both sides: the server's requests (conn.build) and
// the Transport's responses (buildResponse).
type headStrings struct {
	p []byte // the head as parsed: its pieces are http1's slices
	s string // the copy of p
}

func newHeadStrings(p []byte) headStrings { return headStrings{p, string(p)} }

// sub returns the string of b, a piece of the head: its capacity says
// where it starts.
func (h *headStrings) sub(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	o := cap(h.p) - cap(b)
	return h.s[o : o+len(b)]
}

// header fills hdr with fields, keys canonical as net/http makes them, and
// values pieces of the head kept in vals (at least len(fields) long), so
// that the values of one key share vals' storage. With hostOut (the
// server's requests: net/http moves Host to Request.Host) the Host fields
// stay out of hdr, and header returns the value of the one there is (http1
// refused a request with more).
func (h *headStrings) header(hdr http.Header, vals []string, fields []http1.Header, hostOut bool) (host string) {
	for i, f := range fields {
		k := textproto.CanonicalMIMEHeaderKey(h.sub(f.Name))
		if hostOut && k == "Host" { // kept out rather than put in and deleted
			host = h.sub(f.Value)
			continue
		}
		vals[i] = h.sub(f.Value)
		if old, ok := hdr[k]; ok {
			hdr[k] = append(old, vals[i])
		} else {
			hdr[k] = vals[i : i+1 : i+1]
		}
	}
	return host
}

// fixPragma adds "Cache-Control: no-cache" to a header with "Pragma:
// no-cache" and no Cache-Control, as net/http does to the requests it reads
// and the responses its Transport reads (HTTP/1.0 caches know only Pragma).
func fixPragma(hdr http.Header) {
	if pc, ok := hdr["Pragma"]; ok && len(pc) > 0 && pc[0] == "no-cache" {
		if _, ok := hdr["Cache-Control"]; !ok {
			hdr["Cache-Control"] = []string{"no-cache"}
		}
	}
}
