package carrierhttp

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/textproto"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/http1"
	"github.com/spindle-lab/spindle/internal/iocopy"
)

// bufferBeforeChunking is how much body the writer holds before it sends
// the head: a handler that writes less and returns gets Content-Length,
// one that writes more gets chunked encoding (net/http's
// bufferBeforeChunkingSize, 2 KiB).
const bufferBeforeChunking = 2048

// response is the http.ResponseWriter of a connection, reused for each of
// its requests.
type response struct {
	c      *conn
	req    *http.Request
	header http.Header

	status      int
	wroteHeader bool // a final status was set
	committed   bool // the head is in c.out
	handlerDone bool
	isHEAD      bool
	chunked     bool
	closeAfter  bool
	wroteCont   bool  // "100 Continue" was sent
	fullDuplex  bool  // EnableFullDuplex: the body is settled after the handler, not at the head
	clen        int64 // declared or computed Content-Length; -1: none
	written     int64 // body bytes the handler wrote
	mark        int   // len(c.out) when the request's handling began
	werr        error // the first write error on the connection

	// The handler's fields as they were when WriteHeader ran (net/http's
	// snapshot): keys sorted, values, and the ones framing depends on.
	vals     [][]string // the value slices of keys
	hasCL    bool       // the handler set Content-Length (valid or not)
	hdrCL    string
	hdrTE    string
	hdrConn  string
	hasType  bool
	hasCE    bool
	hasDate  bool
	trailers []string // declared in Trailer
	prefixed bool     // a TrailerPrefix key was set
	keys     []string // sorted handler keys
	pending  []byte   // body held before the head is sent
	// closeCh is CloseNotify's channel, closeStop the end of its watch of
	// the connection's context.
	closeCh   chan bool
	closeStop func() bool
}

func (w *response) reset(req *http.Request) {
	clear(w.header)
	*w = response{
		c: w.c, req: req, header: w.header, clen: -1, mark: len(w.c.out), werr: w.werr,
		vals: w.vals[:0], trailers: w.trailers[:0], keys: w.keys, pending: w.pending[:0],
		isHEAD: req.Method == "HEAD",
	}
	w.closeAfter = req.Close
}

// Header returns the header map of the response.
func (w *response) Header() http.Header { return w.header }

// WriteHeader sends (for 1xx codes other than 101) or sets the status.
// Like net/http's it panics on a code outside 100-999; a second call is
// logged and ignored.
func (w *response) WriteHeader(code int) {
	if w.c.hijacked {
		w.hijackedCaller("WriteHeader")
		return
	}
	if w.wroteHeader {
		w.c.s.logf("http: superfluous response.WriteHeader call from %s", callerOutside())
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		w.informational(code)
		return
	}
	if w.c.body.expect { // a goroutine reading the body may be sending 100 Continue
		w.c.interim.Lock()
		w.wroteHeader = true
		w.c.interim.Unlock()
	} else {
		w.wroteHeader = true
	}
	w.status = code
	w.snapshot()
	if w.hdrCL != "" {
		if v, err := strconv.ParseInt(w.hdrCL, 10, 64); err == nil && v >= 0 {
			w.clen = v
		} else {
			w.c.s.logf("http: invalid Content-Length of %q", w.hdrCL)
			w.hdrCL = ""
		}
	}
}

// informational writes a 1xx response at once.
func (w *response) informational(code int) {
	c := w.c
	c.interim.Lock() // it may come from another goroutine (conn.interim)
	defer c.interim.Unlock()
	if code == http.StatusContinue {
		w.wroteCont = true // none at the body's first read now, as in net/http
	}
	c.out = appendStatusLine(c.out, w.req.ProtoMinor >= 1, code)
	w.keys = sortedKeys(w.header, w.keys)
	for _, k := range w.keys {
		if k == "Content-Length" || k == "Transfer-Encoding" {
			continue
		}
		c.out = appendField(c.out, k, w.header[k])
	}
	c.out = append(c.out, "\r\n"...)
	c.flush()
	w.mark = len(c.out)
}

// snapshot records the handler's header fields as they are now (their
// keys, sorted, and value slices) and what the framing depends on.
func (w *response) snapshot() {
	h := w.header
	bodyOK := bodyAllowed(w.status)
	w.fields(h)
	for i, k := range w.keys {
		vv := w.vals[i]
		switch {
		case strings.HasPrefix(k, http.TrailerPrefix):
			w.prefixed = true
		case k == "Content-Length":
			w.hasCL = true
			if len(vv) > 0 && bodyOK {
				w.hdrCL = textproto.TrimString(vv[0])
			}
		case k == "Transfer-Encoding":
			if len(vv) > 0 {
				w.hdrTE = vv[0]
			}
		case k == "Connection":
			if len(vv) > 0 {
				w.hdrConn = vv[0]
			}
		case k == "Content-Type":
			w.hasType = true
		case k == "Content-Encoding":
			w.hasCE = len(vv) > 0 && vv[0] != ""
		case k == "Date":
			w.hasDate = true
		case k == "Trailer":
			for _, v := range vv {
				for f := range strings.SplitSeq(v, ",") {
					if f = textproto.TrimString(f); f != "" {
						w.trailers = append(w.trailers, http.CanonicalHeaderKey(f))
					}
				}
			}
		}
	}
	if w.hdrConn == "close" {
		w.closeAfter = true
	}
}

// fields records h's keys, sorted, in w.keys and their values in w.vals.
// When h has the keys w.keys held before (the last response's: a handler
// usually sets the same ones), it finds them by lookups instead of
// iterating over the map and sorting.
func (w *response) fields(h http.Header) {
	w.vals = w.vals[:0]
	if len(h) == len(w.keys) { // the keys are distinct: all found means the same set
		for _, k := range w.keys {
			vv, ok := h[k]
			if !ok {
				break
			}
			w.vals = append(w.vals, vv)
		}
		if len(w.vals) == len(w.keys) {
			return
		}
		w.vals = w.vals[:0]
	}
	w.keys = sortedKeys(h, w.keys)
	for _, k := range w.keys {
		w.vals = append(w.vals, h[k])
	}
}

// appendFields appends the recorded handler fields in net/http's order
// (sorted), leaving out the ones the framing decided against.
func (w *response) appendFields(dst []byte, keepCL, keepConn bool) []byte {
	bodyOK := bodyAllowed(w.status)
	for i, k := range w.keys {
		switch {
		case strings.HasPrefix(k, http.TrailerPrefix), k == "Transfer-Encoding":
			continue
		case k == "Content-Length" && !keepCL, k == "Connection" && !keepConn:
			continue
		case k == "Content-Type" && w.status == http.StatusNotModified:
			continue
		case k == "Content-Length" && !bodyOK:
			continue
		}
		dst = appendField(dst, k, w.vals[i])
	}
	return dst
}

// sortedKeys returns h's keys, sorted, in keys' storage.
func sortedKeys(h http.Header, keys []string) []string {
	keys = keys[:0]
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendField appends "k: v\r\n" for every value, as net/http's
// Header.Write does: keys that are not tokens are skipped, and line breaks
// in values become spaces.
func appendField(dst []byte, k string, vv []string) []byte {
	if !http1.ValidToken(k) {
		return dst
	}
	for _, v := range vv {
		dst = append(dst, k...)
		dst = append(dst, ": "...)
		start := len(dst)
		v = textproto.TrimString(v)
		dst = append(dst, v...)
		if strings.IndexByte(v, '\r') >= 0 || strings.IndexByte(v, '\n') >= 0 { // rare: scan only then
			for i := start; i < len(dst); i++ {
				if dst[i] == '\r' || dst[i] == '\n' {
					dst[i] = ' '
				}
			}
		}
		dst = append(dst, "\r\n"...)
	}
	return dst
}

func bodyAllowed(status int) bool {
	return !(status >= 100 && status <= 199 || status == 204 || status == 304)
}

func appendStatusLine(dst []byte, is11 bool, code int) []byte {
	if is11 && code == http.StatusOK { // the usual answer, without the lookups
		return append(dst, "HTTP/1.1 200 OK\r\n"...)
	}
	if is11 {
		dst = append(dst, "HTTP/1.1 "...)
	} else {
		dst = append(dst, "HTTP/1.0 "...)
	}
	if text := http.StatusText(code); text != "" {
		dst = strconv.AppendInt(dst, int64(code), 10)
		dst = append(dst, ' ')
		dst = append(dst, text...)
		return append(dst, "\r\n"...)
	}
	return fmt.Appendf(dst, "%03d status code %d\r\n", code, code)
}

// Write writes body bytes, sending the head first once more than
// bufferBeforeChunking bytes are held.
func (w *response) Write(p []byte) (int, error) {
	if w.c.hijacked {
		if len(p) > 0 {
			w.hijackedCaller("Write")
		}
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(len(p))
	if w.clen != -1 && w.written > w.clen {
		return 0, http.ErrContentLength
	}
	if !w.committed {
		if len(w.pending)+len(p) <= bufferBeforeChunking {
			w.pending = append(w.pending, p...)
			return len(p), nil
		}
		w.commitWith(p)
	}
	w.body(p)
	if len(w.c.out) >= flushAt {
		if err := w.c.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), w.werr
}

// sniffLen is how much of the body ReadFrom copies through Write before
// it hands the rest to the connection: the bytes net/http sniffs a
// Content-Type from (its sniffLen, http.DetectContentType's 512).
const sniffLen = 512

// ReadFrom copies src to the body (io.ReaderFrom), as net/http's
// response.ReadFrom does, so that http.ServeContent, http.ServeFile and
// http.FileServer (which io.Copy a file, or a section of one under an
// io.LimitedReader) have the kernel send the file with sendfile(2)
// (carrier.Conn.ReadFrom) instead of copying it through user space. The
// first sniffLen bytes go through Write, so that the head is not sent
// before the source has bytes and the Content-Type can be sniffed; then
// the head and what is held are written out, and the rest goes to the
// connection's ReadFrom when the body is sent as it is: not chunked (no
// Content-Length), not for HEAD, not over TLS, whose connection has no
// ReadFrom; those copy through Write. A source shorter than sniffLen is
// all held, as by Write, and the answer may still get its Content-Length.
// Like Write it returns http.ErrHijacked after Hijack, and the
// connection's write deadline (WriteTimeout) bounds it.
func (w *response) ReadFrom(src io.Reader) (n int64, err error) {
	rf, ok := w.c.rwc.(io.ReaderFrom)
	if !ok || w.c.hijacked { // hijacked: Write refuses, as net/http's copy finds it
		return iocopy.ThroughWrite(w, src)
	}
	if !w.committed {
		n, err = iocopy.ThroughWrite(w, io.LimitReader(src, sniffLen))
		if err != nil || n < sniffLen {
			return n, err
		}
	}
	w.commit()
	if err := w.c.flush(); err != nil {
		return n, err
	}
	if !w.chunked && bodyAllowed(w.status) && !w.isHEAD {
		n0, err := rf.ReadFrom(src)
		w.written += n0
		return n + n0, err
	}
	n0, err := iocopy.ThroughWrite(w, src)
	return n + n0, err
}

// WriteString is Write for a string, without the conversion's copy where
// the body is held.
func (w *response) WriteString(s string) (int, error) {
	if w.c.hijacked {
		if len(s) > 0 {
			w.hijackedCaller("Write")
		}
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed && len(w.pending)+len(s) <= bufferBeforeChunking && bodyAllowed(w.status) && (w.clen == -1 || w.written+int64(len(s)) <= w.clen) {
		w.written += int64(len(s))
		w.pending = append(w.pending, s...)
		return len(s), nil
	}
	return w.Write([]byte(s))
}

// body queues p as body bytes (framed when chunked; nothing for HEAD).
func (w *response) body(p []byte) {
	if w.isHEAD || len(p) == 0 {
		return
	}
	c := w.c
	if w.chunked {
		c.out = strconv.AppendInt(c.out, int64(len(p)), 16)
		c.out = append(c.out, "\r\n"...)
		c.out = append(c.out, p...)
		c.out = append(c.out, "\r\n"...)
		return
	}
	c.out = append(c.out, p...)
}

// commit decides the framing and queues the head and the held body, as
// net/http's chunkWriter.writeHeader does.
func (w *response) commit() { w.commitWith(nil) }

// commitWith is commit before writing next: with nothing held, next is
// what the Content-Type is sniffed from (as net/http sniffs the first
// chunk it sends).
func (w *response) commitWith(next []byte) {
	if w.committed {
		return
	}
	w.committed = true
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	c, req, p := w.c, w.req, w.pending
	hasTE := w.hdrTE != ""
	trailers := w.prefixed || len(w.trailers) > 0
	ok := bodyAllowed(w.status)
	setCL := false
	if w.handlerDone && !trailers && !hasTE && ok && !w.hasCL && (!w.isHEAD || len(p) > 0) {
		w.clen = int64(len(p))
		setCL = true
	}
	is11 := req.ProtoAtLeast(1, 1)
	wants10 := !is11 && !req.Close
	keepAlive10 := false
	if wants10 && w.hdrCL != "" && w.hdrConn == "keep-alive" {
		w.closeAfter = false
	}
	hasCL := w.clen != -1
	if wants10 && (w.isHEAD || hasCL || !ok) {
		keepAlive10 = w.hdrConn == ""
	} else if !is11 || req.Close {
		w.closeAfter = true
	}
	if w.c.s.shutdown.Load() {
		w.closeAfter = true
	}
	if !w.closeAfter && req.ContentLength != 0 && !w.fullDuplex {
		w.closeAfter = w.c.body.settle()
	}
	var ctype string
	sniff := p
	if len(sniff) == 0 {
		sniff = next
	}
	if ok && !w.hasCE && !w.hasType && !hasTE && len(sniff) > 0 {
		ctype = http.DetectContentType(sniff)
	}
	if hasCL && hasTE && w.hdrTE != "identity" {
		hasCL, setCL = false, false
		w.hdrCL = ""
		w.clen = -1
	}
	te := ""
	switch {
	case w.isHEAD || !ok:
	case hasCL:
	case is11:
		if w.hdrTE == "identity" {
			w.closeAfter = true
		} else {
			w.chunked = true
			te = "chunked"
		}
	default:
		w.closeAfter = true
	}
	conn := "" // a Connection field the server adds
	keepConn := true
	if w.closeAfter && !hasToken(w.hdrConn, "close") {
		keepConn = false
		if is11 {
			conn = "close"
		}
	} else if keepAlive10 {
		conn = "keep-alive"
	}
	out := appendStatusLine(c.out, is11, w.status)
	out = w.appendFields(out, w.hdrCL != "" && !w.chunked, keepConn)
	if !w.hasDate {
		out = append(out, "Date: "...)
		out = c.date.Append(out, c.cn.Now())
		out = append(out, "\r\n"...)
	}
	switch {
	case setCL:
		out = append(out, "Content-Length: "...)
		out = strconv.AppendInt(out, w.clen, 10)
		out = append(out, "\r\n"...)
	}
	if ctype != "" {
		out = append(out, "Content-Type: "...)
		out = append(out, ctype...)
		out = append(out, "\r\n"...)
	}
	if conn != "" {
		out = append(out, "Connection: "...)
		out = append(out, conn...)
		out = append(out, "\r\n"...)
	}
	if te != "" {
		out = append(out, "Transfer-Encoding: "...)
		out = append(out, te...)
		out = append(out, "\r\n"...)
	}
	c.out = append(out, "\r\n"...)
	w.pending = w.pending[:0]
	w.body(p)
}

// hasToken reports whether the comma-separated list v holds token,
// ignoring case.
func hasToken(v, token string) bool {
	for f := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(textproto.TrimString(f), token) {
			return true
		}
	}
	return false
}

// finish completes the response after the handler returned.
func (w *response) finish() {
	w.handlerDone = true
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.commit()
	if w.chunked {
		w.endChunks()
	}
	if w.fullDuplex && !w.closeAfter && w.req.ContentLength != 0 {
		// Settled now, not at the head: a close comes without the head's
		// Connection field, as in net/http.
		w.closeAfter = w.c.body.settle()
	}
}

// endChunks queues the last chunk and the trailers.
func (w *response) endChunks() {
	c := w.c
	c.out = append(c.out, "0\r\n"...)
	{
		// As net/http: the TrailerPrefix fields (set any time before the
		// handler returns), then the declared ones (which win a name both
		// give), written sorted by name.
		var t http.Header
		for k, vv := range w.header {
			if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
				if t == nil {
					t = make(http.Header)
				}
				t[http.CanonicalHeaderKey(name)] = vv
			}
		}
		for _, k := range w.trailers {
			if vv, ok := w.header[k]; ok {
				if t == nil {
					t = make(http.Header)
				}
				t[k] = vv
			}
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			c.out = appendField(c.out, k, t[k])
		}
	}
	c.out = append(c.out, "\r\n"...)
}

// reusable reports whether the connection may carry another request.
func (w *response) reusable() bool {
	if w.closeAfter || w.werr != nil {
		return false
	}
	if !w.isHEAD && w.clen != -1 && bodyAllowed(w.status) && w.clen != w.written {
		return false // the client would read out of step
	}
	return true
}

// panicAnswer replaces whatever the panicking handler queued (nothing was
// sent yet) with a 500 that closes the connection.
func (w *response) panicAnswer() {
	c := w.c
	c.out = c.out[:w.mark]
	c.out = appendStatusLine(c.out, true, http.StatusInternalServerError)
	c.out = append(c.out, "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: 21\r\n\r\nInternal Server Error"...)
}

// Flush sends the head and what the handler wrote so far (http.Flusher).
func (w *response) Flush() { w.FlushError() }

// FlushError is Flush returning the write error (http.ResponseController).
func (w *response) FlushError() error {
	if w.c.hijacked {
		return http.ErrHijacked
	}
	w.commit()
	return w.c.flush()
}

// SetReadDeadline sets the connection's read deadline, for the request
// body (http.ResponseController).
func (w *response) SetReadDeadline(t time.Time) error { return w.c.setReadDeadline(t) }

// SetWriteDeadline sets the connection's write deadline
// (http.ResponseController).
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.rwc.SetWriteDeadline(t) }

// CloseNotify implements http.CloseNotifier, deprecated in net/http but
// still called by some frameworks (gin's Context.Stream): the channel
// receives true once if the client goes away while the handler runs (the
// connection's context ends: the client closed, as the request's context
// sees it, or the server closed). Prefer Request.Context.
func (w *response) CloseNotify() <-chan bool {
	if w.closeCh == nil {
		ch := make(chan bool, 1)
		w.closeCh, w.closeStop = ch, context.AfterFunc(w.c.ctx, func() { ch <- true })
	}
	return w.closeCh
}

// endCloseNotify stops CloseNotify's watch once the handler has returned.
func (w *response) endCloseNotify() {
	if w.closeStop != nil {
		w.closeStop()
		w.closeStop = nil
	}
}

// callerOutside names the first caller outside this package, as
// "function (file.go:line)": whose WriteHeader was superfluous (net/http's
// log names it too).
func callerOutside() string {
	var pcs [16]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "github.com/spindle-lab/spindle/carrierhttp.") || strings.HasSuffix(f.File, "_test.go") {
			return fmt.Sprintf("%s (%s:%d)", f.Function, filepath.Base(f.File), f.Line)
		}
		if !more {
			return "an unknown caller"
		}
	}
}
