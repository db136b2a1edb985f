package carrierhttp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/http1"
)

// This file is the Transport's side of one backend connection: its read
// buffer, the response head read by http1's head-reading loop into an
// *http.Response with the fields net/http's http.ReadResponse gives
// (checked by TestReadResponseDifferential and FuzzReadResponse), and the
// response body streamed from the buffer by http1's BodyReader.

// clientConn is one backend connection. It is used by one task at a time,
// on the carrier that dialled it.
type clientConn struct {
	key poolKey
	cn  *carrier.Conn
	rw  net.Conn // cn, or TLS over it
	tls *tls.ConnectionState

	http1.InBuf      // the read buffer
	got         bool // a byte of the current exchange's answer arrived

	out []byte        // the request head, written at once (appendRequest)
	bw  *bufio.Writer // Request.Write's writer for other requests, made on first use

	hp   http1.HeadParser
	head http1.Response
	body http1.BodyReader // the framing of the body being read (keeping trailers)

	idleAt int64 // wait.Now when it went back to the pool
	reused bool
	// watch ends the exchange when its request's context ends (cancel,
	// bound once as onCancel).
	watch    carrier.ContextWatch
	onCancel func()
	deadline bool // a deadline is set on the conn (the context's, or a cancellation's)
}

func newClientConn(key poolKey, cn *carrier.Conn) *clientConn {
	cc := &clientConn{key: key, cn: cn, rw: cn}
	cc.onCancel = cc.cancel
	cc.body.KeepTrailer = true
	return cc
}

// cancel runs in a task of cc's carrier when the context of the exchange
// in progress ends: it moves the conn's deadline to the past, so that the
// parked task wakes with a timeout. An exchange whose cancellation fired
// does not put cc back in the pool (see Transport.done).
func (cc *clientConn) cancel() {
	cc.deadline = true
	cc.cn.SetDeadline(stopNow)
}

// Refill reads once into the buffer (http1.Source: the loops of http1 that
// read cc's head and body call it).
func (cc *clientConn) Refill(*http1.InBuf) error {
	n, err := cc.Fill(cc.rw)
	if n > 0 {
		cc.got = true
	}
	return err
}

// readResponse reads the answer to req up to the end of its head, skipping
// interim (1xx) answers (not 101 Switching Protocols, which is final), and
// returns its body reader, whose resp is the
// answer with Body unset (ContentLength and TransferEncoding say how it is
// framed; attachBody sets it). maxHead
// bounds the heads together, interim ones included, in bytes, as net/http's
// Transport bounds them (any number of interim answers within it).
func (cc *clientConn) readResponse(req *http.Request, maxHead int) (*clientBody, error) {
	isHead := req.Method == http.MethodHead
	for budget := maxHead; ; {
		n, err := cc.readHead(isHead, budget)
		if err != nil {
			return nil, err
		}
		status := cc.head.Status
		if status < 100 || status > 199 || status == http.StatusSwitchingProtocols {
			// The response and its body are one allocation.
			b := new(clientBody)
			err := buildResponse(&b.resp, cc.Buf[cc.Start:cc.Start+n], &cc.head, req, isHead)
			cc.Consume(n)
			if err != nil {
				return nil, err
			}
			return b, nil
		}
		// An interim answer (100 Continue, 103 Early Hints): the final
		// one follows, within what is left of the budget. As net/http's
		// Transport, it goes to the request's httptrace.ClientTrace
		// Got1xxResponse (httputil.ReverseProxy passes it on so), and
		// the budget starts again once it did: the caller bounds them.
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.Got1xxResponse != nil {
			hdr := make(http.Header, len(cc.head.Headers))
			hs := newHeadStrings(cc.Buf[cc.Start : cc.Start+n])
			hs.header(hdr, make([]string, len(cc.head.Headers)), cc.head.Headers, false)
			cc.Consume(n)
			if err := trace.Got1xxResponse(status, textproto.MIMEHeader(hdr)); err != nil {
				return nil, err
			}
			budget = maxHead
			continue
		}
		cc.Consume(n)
		if budget -= n; budget <= 0 {
			return nil, fmt.Errorf("carrierhttp: response heads (interim ones included) larger than %d bytes: too large", maxHead)
		}
	}
}

// readHead reads input until it holds a whole response head (http1's
// head-reading loop) and returns its length; cc.head is the parsed head.
func (cc *clientConn) readHead(isHead bool, maxHead int) (int, error) {
	n, err := cc.hp.ReadResponse(&cc.InBuf, cc, &cc.head, isHead, http1.Options{MaxHeaderBytes: maxHead})
	if _, ok := err.(*http1.Error); ok { // malformed, or over maxHead
		return 0, fmt.Errorf("carrierhttp: bad response head: %w", err)
	}
	return n, err
}

// buildResponse makes resp the *http.Response that http.ReadResponse makes
// of the head p, parsed into h, of the answer to req: the header map with
// net/http's canonical keys and its edits (Transfer-Encoding removed,
// Content-Length kept once or removed for a chunked body, Trailer moved to
// Response.Trailer, "Connection: close" removed from HTTP/1.1 answers,
// Cache-Control added for "Pragma: no-cache"), ContentLength,
// TransferEncoding and Close. Every string is a piece of one copy of p.
// Body is left nil.
func buildResponse(resp *http.Response, p []byte, h *http1.Response, req *http.Request, isHead bool) error {
	hs := newHeadStrings(p)
	*resp = http.Response{
		StatusCode: h.Status,
		Proto:      protoName(h.Major, h.Minor),
		ProtoMajor: h.Major,
		ProtoMinor: h.Minor,
		Close:      !h.KeepAlive,
		Request:    req,
	}
	// Status is the status line after the protocol: code and reason.
	line, _, _ := strings.Cut(hs.s, "\n")
	line = strings.TrimSuffix(line, "\r")
	_, status, _ := strings.Cut(line, " ")
	resp.Status = strings.TrimLeft(status, " ")

	hdr := make(http.Header, len(h.Headers))
	hs.header(hdr, make([]string, len(h.Headers)), h.Headers, false)
	resp.Header = hdr

	is11 := h.Major > 1 || h.Major == 1 && h.Minor >= 1
	chunked := false // as net/http's transferReader.Chunked
	if _, ok := hdr["Transfer-Encoding"]; ok {
		delete(hdr, "Transfer-Encoding")
		// http1 refused any coding but one "chunked"; net/http reads the
		// transfer of a version 0.0 answer as 1.1's, as http1 does.
		chunked = is11 || h.Major == 0 && h.Minor == 0
	}
	if chunked {
		resp.TransferEncoding = chunkedTE
	}
	cl := hdr["Content-Length"]
	if len(cl) > 1 {
		cl = cl[:1:1] // http1 refused differing values
		hdr["Content-Length"] = cl
	}
	switch {
	case isHead:
		resp.ContentLength = -1
		if len(cl) > 0 {
			resp.ContentLength, _ = strconv.ParseInt(cl[0], 10, 64) // checked by http1
		}
	case !bodyAllowed(h.Status):
		resp.ContentLength = 0
	case chunked:
		delete(hdr, "Content-Length")
		resp.ContentLength = -1
	default:
		resp.ContentLength = h.ContentLength
	}
	if tv, ok := hdr["Trailer"]; ok && chunked {
		delete(hdr, "Trailer")
		for _, v := range tv {
			for k := range strings.SplitSeq(v, ",") {
				if k = textproto.TrimString(k); k == "" {
					continue
				}
				k = http.CanonicalHeaderKey(k)
				switch k {
				case "Transfer-Encoding", "Trailer", "Content-Length":
					return fmt.Errorf("carrierhttp: bad trailer key %q", k)
				}
				if resp.Trailer == nil {
					resp.Trailer = make(http.Header)
				}
				resp.Trailer[k] = nil
			}
		}
	}
	if is11 {
		for _, v := range hdr["Connection"] {
			if hasToken(v, "close") {
				delete(hdr, "Connection")
				break
			}
		}
	}
	fixPragma(hdr)
	return nil
}

// clientBody is a response body streamed from its connection's buffer; at
// its end the connection goes back to the pool. One is made per response,
// so that a Read after Close never reads another response's bytes.
type clientBody struct {
	tr     *Transport
	cc     *clientConn
	ctx    context.Context // the request's
	resp   http.Response   // the response whose body this is (one allocation for both)
	keep   bool            // the connection may carry another exchange after this body
	done   bool            // the body ended (complete, failed or closed): cc is no longer ours
	closed bool
	err    error // the error that ended the body early
}

// errReadOnClosedResBody is a Read after Close, with the words of net/http's
// Transport (http.ErrBodyReadAfterClose is its server's request bodies').
var errReadOnClosedResBody = errors.New("http: read on closed response body")

func (b *clientBody) Read(p []byte) (int, error) {
	switch {
	case b.closed:
		return 0, errReadOnClosedResBody
	case b.err != nil:
		return 0, b.err
	case b.done:
		return 0, io.EOF
	case len(p) == 0:
		return 0, nil
	}
	n, err := b.read(p)
	switch {
	case err == io.EOF:
		b.finish(true)
	case err != nil:
		b.err = contextError(b.ctx, err)
		b.finish(false)
		err = b.err
	}
	return n, err
}

// read reads body bytes into p, from the buffer (cc.body frames them) or,
// for a large read with none buffered, straight from the connection. It
// returns io.EOF with the last bytes.
func (b *clientBody) read(p []byte) (int, error) {
	cc := b.cc
	if cc.body.Bypass(&cc.InBuf, len(p)) {
		return b.readDirect(p)
	}
	data, err := cc.body.Next(&cc.InBuf, cc, len(p))
	n := copy(p, data)
	switch {
	case err == io.EOF:
		if err := b.trailer(cc.body.Trailer()); err != nil {
			return 0, err
		}
	case err != nil:
		if _, ok := err.(*http1.Error); ok {
			return 0, fmt.Errorf("carrierhttp: malformed chunked body: %w", err)
		}
		return 0, err
	}
	return n, err
}

// readDirect reads body bytes from the connection into p, bypassing the
// empty buffer, for a body that is not chunked.
func (b *clientBody) readDirect(p []byte) (int, error) {
	cc := b.cc
	if left := cc.body.Length(); left >= 0 && int64(len(p)) > left {
		p = p[:left]
	}
	n, err := cc.rw.Read(p)
	if errors.Is(err, io.EOF) {
		cc.EOF = true
		err = nil
	}
	if n > 0 {
		// Framed as the buffer's bytes are: not chunked, without a bound,
		// it cannot fail.
		if _, _, ferr := cc.body.Take(p[:n], false); ferr != nil {
			return 0, ferr
		}
		if cc.body.Done() {
			return n, io.EOF
		}
	}
	if n == 0 && err == nil {
		if cc.EOF {
			return b.read(p) // the end of the body or an early close
		}
		err = io.ErrNoProgress
	}
	return n, err
}

// trailer sets the fields of a chunked body's trailer section (checked by
// the decoder: "name: value" lines) in the response's Trailer, as net/http
// does once the body is read.
func (b *clientBody) trailer(sec []byte) error {
	for len(sec) > 0 {
		var l []byte
		l, sec, _ = bytes.Cut(sec, []byte("\n"))
		l = bytes.TrimSuffix(l, []byte("\r"))
		name, value, ok := bytes.Cut(l, []byte(":"))
		if !ok {
			return errors.New("carrierhttp: malformed trailer line") // the decoder checked it: cannot be
		}
		if b.resp.Trailer == nil {
			b.resp.Trailer = make(http.Header)
		}
		k := textproto.CanonicalMIMEHeaderKey(string(name))
		b.resp.Trailer[k] = append(b.resp.Trailer[k], textproto.TrimString(string(value)))
	}
	return nil
}

// Close ends the body; one not read to its end closes the connection (as
// net/http does).
func (b *clientBody) Close() error {
	if !b.done {
		b.finish(false)
	}
	b.closed = true
	return nil
}

func (b *clientBody) finish(complete bool) {
	b.done = true
	if b.tr != nil { // nil in the parsing tests, which have no pool
		b.tr.done(b.cc, b.keep && complete)
	}
}
