package carrierhttp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/http1"
)

const (
	// flushAt is the size of queued output that is written out even while
	// the handler goes on writing or more pipelined requests are buffered.
	flushAt = 64 << 10
	// maxPostHandlerRead is how much of a request body the handler left
	// unread is discarded to keep the connection (net/http's
	// maxPostHandlerReadBytes, 256 KiB); a larger rest closes it.
	maxPostHandlerRead = 256 << 10
	// panicStack bounds the stack trace logged for a handler panic
	// (net/http's 64 KiB).
	panicStack = 64 << 10
	// lingerTimeout bounds how long a connection closed after a refused
	// request keeps reading, so that the client reads the answer before
	// the close (net/http's closeWriteAndWait waits 500 ms).
	lingerTimeout = 500 * time.Millisecond
)

// conn is one client connection, served by its task.
type conn struct {
	s *Server
	t *carrier.Task
	// home is the carrier the task runs on, updated before each idle wait
	// (floating carriers move tasks; a parked one stays): where Shutdown
	// and Close send the tasks that close the connection.
	home atomic.Pointer[carrier.Carrier]
	cn   *carrier.Conn // the TCP connection
	rwc  net.Conn      // cn, or the TLS connection over it

	remote   string
	tlsState *tls.ConnectionState
	rdl      time.Time // the read deadline last set on rwc (setReadDeadline)
	// ctx is the connection's context, cancelled when the client is gone
	// (gone), the connection ends or the server closes; each request's
	// context (request.ctx) derives from it and is cancelled once its handler
	// returned, as net/http's. goneFn is gone, bound once, the hang-up
	// watch's function while a handler runs (watchGone).
	ctx     context.Context
	cancel  context.CancelFunc
	goneFn  func()
	watched bool // the hang-up watch is armed
	// lateWatch is set when a goroutine other than the task read the
	// request's body to its end (httputil.ReverseProxy's Transport's
	// writer): only a task of the conn's carrier arms the hang-up watch,
	// so one submitted to it does (watchLate), unless the handler stopped
	// watching first (lateSeq moved on; unwatchGone).
	lateWatch atomic.Bool
	lateSeq   atomic.Uint64

	// idle is set while the connection waits for its next request; nudged
	// while a close by Shutdown is queued. Written by the connection's
	// task and by Shutdown.
	idle, nudged atomic.Bool
	// hijacked is set by Hijack: the connection is the handler's, and the
	// task no longer touches it.
	hijacked bool
	// base is the connection's context without the task (ConnContext's);
	// h2 is set when the connection is to be served by HTTP/2 (http2.go):
	// how x/net's server starts on it; h2ctx is the context its requests
	// derive from, cancelled by h2cancel when it ends.
	base     context.Context
	h2       *http2.ServeConnOpts
	h2ctx    context.Context
	h2cancel context.CancelFunc

	http1.InBuf        // the read buffer, as the Transport's connections have it
	out         []byte // responses not yet written
	date        http1.Date

	hp      http1.HeadParser
	headSrc headSource // the connection as hp's loop reads it
	preq    http1.Request
	req     *http.Request // the request being served (build)
	reqs    *request      // its parts
	reused  *request      // with Server.ReuseRequests: the connection's, for each request
	hdr     http.Header   // with Server.ReuseRequests: the connection's header, and its values
	vals    []string
	w       response
	body    body
	// interim serializes the interim answers (100 Continue at a body's
	// first read, the handler's WriteHeader 1xx) with the final head's
	// status, which may come from different goroutines of one handler:
	// httputil.ReverseProxy passes a backend's 1xx on from its Transport's
	// reader while its Transport's writer reads the body (net/http's
	// writeContinueMu).
	interim sync.Mutex
	// line is the request being served, for the carrier's report of a
	// hand-off of the handler's run (the task's note, read by the group's
	// monitor): swapped only when a request differs from the one before.
	line atomic.Pointer[requestLine]
}

// requestLine is what a hand-off report says about a connection's request.
type requestLine struct{ method, uri string }

// String is the connection's note (carrier.Task.SetNote): its current
// request and client.
func (c *conn) String() string {
	if l := c.line.Load(); l != nil {
		return l.method + " " + l.uri + " from " + c.remote
	}
	return "a connection from " + c.remote
}

// noteRequest makes c.req the note's request.
func (c *conn) noteRequest() {
	if l := c.line.Load(); l == nil || l.method != c.req.Method || l.uri != c.req.RequestURI {
		c.line.Store(&requestLine{c.req.Method, c.req.RequestURI})
	}
}

func newConn(s *Server, t *carrier.Task, cn *carrier.Conn) *conn {
	c := &conn{s: s, t: t, cn: cn, rwc: cn}
	c.home.Store(t.Carrier())
	c.remote = cn.RemoteAddr().String()
	if s.ReuseRequests {
		c.reused = &request{}
		c.hdr = make(http.Header)
	}
	c.w.c = c
	c.w.header = make(http.Header)
	c.body.c = c
	c.headSrc.c = c
	return c
}

// setState calls Server.ConnState.
func (c *conn) setState(st http.ConnState) {
	if f := c.s.ConnState; f != nil {
		f(c.rwc, st)
	}
}

// serve runs the connection's request loop.
func (c *conn) serve() {
	s := c.s
	if s.tlsConfig != nil {
		tc := tls.Server(c.cn, s.tlsConfig)
		if d := s.readHeaderTimeout(); d > 0 {
			c.cn.SetDeadline(time.Now().Add(d))
		}
		if err := tc.Handshake(); err != nil {
			plainHTTP(err)
			return // net/http logs handshake errors; they are the client's
		}
		c.cn.SetDeadline(time.Time{})
		st := tc.ConnectionState()
		c.tlsState = &st
		c.rwc = tc
	}
	base := context.WithValue(s.baseCtx, http.LocalAddrContextKey, c.cn.LocalAddr())
	if s.ConnContext != nil {
		base = s.ConnContext(base, c.rwc)
	}
	c.base = base
	if s.h2 != nil {
		h2 := c.tlsState != nil && c.tlsState.NegotiatedProtocol == "h2"
		if c.tlsState == nil && s.protos.UnencryptedHTTP2() {
			var err error
			if h2, err = c.sawPreface(); err != nil {
				return
			}
		}
		if h2 {
			c.startHTTP2(http2.ServeConnOpts{SawClientPreface: c.tlsState == nil})
			return
		}
	}
	if !s.protos.HTTP1() {
		return
	}
	c.ctx, c.cancel = context.WithCancel(carrier.ContextWithTask(base, c.t))
	defer c.cancel()
	c.goneFn = c.gone
	c.t.SetNote(c)
	h := s.handler()
	for first := true; ; first = false {
		if err := c.next(first); err != nil {
			c.refuse(err)
			return
		}
		if s.h2 != nil && s.protos.UnencryptedHTTP2() && c.tlsState == nil && c.upgradeH2c() {
			return
		}
		keep := c.handle(h)
		if c.hijacked {
			return
		}
		if !keep || s.shutdown.Load() {
			if c.flush() == nil && !c.body.r.Done() {
				// The client may still be sending a body the handler did
				// not read: closing now would reset the connection and
				// destroy the answer (net/http's closeWriteAndWait).
				c.linger()
			}
			return
		}
		if c.Start == c.End || len(c.out) >= flushAt {
			if c.flush() != nil {
				return
			}
		}
	}
}

// next reads the next request into c.req, with net/http's timeouts: the
// idle timeout for its first byte (after the first request), then the
// head timeout and the whole-request timeout from that byte. The head's
// deadline is armed only when the head is not buffered whole already (no
// read happens under it otherwise), the whole request's only when a body
// follows, and a deadline already armed is not armed again, so that a busy
// keep-alive connection arms no deadline it does not need. Its times are
// the conn's clock (carrier.Conn.Now): the carrier's latest reading, at no
// clock read.
func (c *conn) next(first bool) error {
	s := c.s
	if !first && c.Start == c.End {
		if err := c.flush(); err != nil {
			return err
		}
		if d := s.idleTimeout(); d > 0 {
			c.setReadDeadline(c.cn.Now().Add(d))
		} else {
			c.setReadDeadline(time.Time{}) // as net/http's: no deadline the last request left
		}
		c.setState(http.StateIdle)
		c.home.Store(c.t.Carrier())
		c.idle.Store(true)
		if s.shutdown.Load() {
			return errServerClosing
		}
		err := c.fill()
		c.idle.Store(false)
		if err != nil {
			return err
		}
	}
	var t0 time.Time // the request's start, read when a deadline needs it
	if s.ReadTimeout > 0 || s.WriteTimeout > 0 {
		t0 = c.cn.Now()
	}
	n, read, err := c.readHead(&t0)
	if err != nil {
		return err
	}
	c.setState(http.StateActive)
	if c.preq.Chunked || c.preq.ContentLength != 0 {
		// Only a body is read under this deadline: without one, the next
		// read is the next request's, whose wait arms its own.
		var whole time.Time
		if d := s.ReadTimeout; d > 0 {
			whole = t0.Add(d)
		}
		c.setReadDeadline(whole) // also clears the idle deadline, or one the last handler set
	}
	if d := s.WriteTimeout; d > 0 {
		// From the end of the head: t0 when the head was buffered whole
		// (only its parsing lies between), the clock when it was read.
		end := t0
		if read {
			end = c.cn.Now()
		}
		c.rwc.SetWriteDeadline(end.Add(d))
	}
	return c.build(n)
}

// setReadDeadline sets the connection's read deadline, unless it is the
// one armed already.
func (c *conn) setReadDeadline(t time.Time) error {
	if t.Equal(c.rdl) {
		return nil
	}
	c.rdl = t
	return c.rwc.SetReadDeadline(t)
}

// readHead parses the next request head into c.preq, reading as needed
// (http1's head-reading loop), and returns its length and whether it read.
// Before its first read it arms the head's deadline (none without
// timeouts), from *t0, which it sets to the time then when it is zero.
func (c *conn) readHead(t0 *time.Time) (n int, read bool, err error) {
	c.headSrc.t0, c.headSrc.read = *t0, false
	n, err = c.hp.ReadRequest(&c.InBuf, &c.headSrc, &c.preq, http1.Options{MaxHeaderBytes: c.s.maxHeaderBytes()})
	*t0 = c.headSrc.t0
	return n, c.headSrc.read, err
}

// headSource is the connection as readHead's loop reads it (an
// http1.Source): its first read arms the head's deadline.
type headSource struct {
	c    *conn
	t0   time.Time // the request's start; zero: not read yet
	read bool      // a read was made for the head
}

func (h *headSource) Refill(*http1.InBuf) error {
	if !h.read {
		h.read = true
		var dl time.Time
		if d := h.c.s.readHeaderTimeout(); d > 0 {
			if h.t0.IsZero() {
				h.t0 = h.c.cn.Now()
			}
			dl = h.t0.Add(d)
		}
		h.c.setReadDeadline(dl)
	}
	return h.c.fill()
}

// Refill is the connection as the body's loop reads it (an http1.Source):
// fill, under c.interim (an interim answer from another goroutine writes
// the output too). A goroutine other than the task reading the body (one
// the handler gave it to: httputil.ReverseProxy's Transport writes it from
// its own) reads without writing out the task's output, which the task
// may be adding to meanwhile, as net/http's body reads write nothing.
func (c *conn) Refill(*http1.InBuf) error {
	if !c.inTask() {
		return c.read()
	}
	c.interim.Lock()
	err := c.flush()
	c.interim.Unlock()
	if err != nil {
		return err
	}
	return c.read()
}

// inTask reports whether the caller runs in the connection's task.
func (c *conn) inTask() bool { return carrier.TaskFromContext(c.ctx) == c.t }

// fill reads once into the free space of the buffer (read), after writing
// out queued responses.
func (c *conn) fill() error {
	if err := c.flush(); err != nil {
		return err
	}
	return c.read()
}

// read reads once into the free space of the buffer (making room when
// there is none: one byte more when it is full of pending input). At end
// of file (c.EOF) or on an error the client is gone.
func (c *conn) read() error {
	c.Room(len(c.Buf))
	_, err := c.Fill(c.rwc)
	if err != nil || c.EOF {
		c.gone()
	}
	return err
}

// gone cancels the requests' context once the connection cannot carry
// more: as net/http's, it is cancelled when the client closes, as soon as
// a read or write of the task sees it, or, while a handler runs with its
// request read, as soon as the carrier's poller sees the client's end of
// stream (watchGone; net/http's background read). It runs in the
// connection's task or on its carrier's event loop.
func (c *conn) gone() {
	if c.cancel != nil {
		c.cancel()
	}
}

// flush writes out queued responses.
func (c *conn) flush() error {
	if len(c.out) == 0 {
		return c.w.werr
	}
	if c.w.werr != nil {
		c.out = c.out[:0]
		return c.w.werr
	}
	_, err := c.rwc.Write(c.out)
	c.out = c.out[:0]
	if err != nil {
		c.w.werr = err
		c.gone()
	}
	return err
}

// plainHTTP answers 400 to a client that spoke plain HTTP to the TLS
// server (the handshake's first record header is the start of a request
// line), as net/http does, instead of closing without a word.
func plainHTTP(handshake error) {
	var re tls.RecordHeaderError
	if !errors.As(handshake, &re) || re.Conn == nil {
		return
	}
	start := string(re.RecordHeader[:])
	for _, m := range [...]string{"GET /", "HEAD ", "POST ", "PUT /", "OPTIO"} {
		if start == m {
			io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
			return
		}
	}
}

// requestError is a request refused before its handler: the answer's
// status and body.
type requestError struct {
	status int
	body   string
	http10 bool // answered as HTTP/1.0: a refused HTTP/1.0 request's head net/http parsed (417)
}

func (e *requestError) Error() string { return fmt.Sprintf("carrierhttp: %d %s", e.status, e.body) }

// badRequest is a request refused with 400 and reason.
func badRequest(reason string) error {
	return &requestError{status: 400, body: "400 Bad Request: " + reason}
}

// refuse answers a request that cannot be served, as net/http does, and
// lingers until the client reads it; errors of the connection itself
// (closed, timed out, reset) get no answer.
func (c *conn) refuse(err error) {
	var re *requestError
	var he *http1.Error
	switch {
	case errors.As(err, &re):
	case errors.As(err, &he):
		re = &requestError{status: he.Status, body: fmt.Sprintf("%d %s", he.Status, http.StatusText(he.Status))}
		switch {
		case he.Reason == "missing required Host header": // a badRequestError in net/http
			re.body += ": " + he.Reason
		case he.Status == 501:
			re.body = "Unsupported transfer encoding"
		case he.Status == 505:
			re.body = "505 HTTP Version Not Supported: unsupported protocol version"
		}
	default:
		c.flush()
		return
	}
	proto := "HTTP/1.1 "
	if re.http10 {
		proto = "HTTP/1.0 "
	}
	c.out = append(c.out, proto...)
	c.out = strconv.AppendInt(c.out, int64(re.status), 10)
	c.out = append(c.out, ' ')
	c.out = append(c.out, http.StatusText(re.status)...)
	if re.body == "" {
		c.out = append(c.out, "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"...)
	} else {
		c.out = append(c.out, "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"...)
	}
	c.out = append(c.out, re.body...)
	if c.flush() != nil {
		return
	}
	c.linger()
}

// linger shuts the sending side and reads until the client closes or
// lingerTimeout passes (http1.Linger), so that unread input does not turn
// the close into a reset that destroys the answer.
func (c *conn) linger() {
	if c.tlsState != nil {
		return // a TLS close_notify is not a half-close: close at once
	}
	http1.Linger(c.cn, lingerTimeout, 0)
}

// closeIfIdle closes the connection if it still waits for a request; it
// runs as a task on the connection's carrier, submitted by Shutdown.
func (c *conn) closeIfIdle(*carrier.Task) {
	if c.idle.Load() {
		c.cn.Close()
		return
	}
	c.nudged.Store(false) // busy again: Shutdown tries later
}

// build turns the parsed head of n bytes into c.req, as net/http's
// readRequest does, and consumes the head.
func (c *conn) build(n int) error {
	hs := newHeadStrings(c.Buf[c.Start : c.Start+n]) // every string below is a piece of its one copy
	pr := &c.preq
	req, hdr, vals := c.newRequest(len(pr.Headers))
	c.req = req
	req.Method = hs.sub(pr.Method)
	req.RequestURI = hs.sub(pr.Target)
	req.ProtoMajor, req.ProtoMinor = pr.Major, pr.Minor
	req.Proto = protoName(pr.Major, pr.Minor)
	req.RemoteAddr = c.remote
	req.TLS = c.tlsState
	req.Close = !pr.KeepAlive
	if err := c.parseURL(req); err != nil {
		c.Consume(n)
		return err
	}
	// net/http moves the first Host field's value to req.Host.
	host := hs.header(hdr, vals, pr.Headers, true)
	req.Header = hdr
	c.Consume(n)
	// A malformed Host was refused by http1 (400), as net/http does.
	if req.URL.Host != "" {
		req.Host = req.URL.Host
	} else {
		req.Host = host
	}
	fixPragma(hdr)
	req.Body = http.NoBody
	switch {
	case pr.Chunked:
		delete(hdr, "Transfer-Encoding")
		delete(hdr, "Content-Length")
		req.ContentLength = -1
		req.TransferEncoding = chunkedTE
	default:
		req.ContentLength = pr.ContentLength
	}
	if m := c.s.MaxBodyBytes; m > 0 && req.ContentLength > m {
		return &requestError{status: 413, body: "413 Request Entity Too Large"}
	}
	// As net/http reads Expect: its first field names 100-continue among
	// its words, which HTTP/1.0 requests and empty bodies ignore (RFC 9110
	// §10.1.1), or any other expectation fails.
	expect := false
	if e, ok := hdr["Expect"]; ok {
		if hasWord(e[0], "100-continue") {
			expect = pr.Minor >= 1 && req.ContentLength != 0
		} else if e[0] != "" {
			return &requestError{status: 417, http10: pr.Minor == 0} // net/http's answer has no body
		}
	}
	if req.ContentLength != 0 {
		c.body.reset(req.ContentLength, pr.Chunked, expect)
		req.Body = c.reqs.bodyOf(&c.body)
	} else {
		c.body.reset(0, false, false)
	}
	return nil
}

// hasWord reports whether v names word, ignoring case, among its words
// separated by spaces, tabs or commas.
func hasWord(v, word string) bool {
	for f := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' }) {
		if strings.EqualFold(f, word) {
			return true
		}
	}
	return false
}

// chunkedTE is Request.TransferEncoding of a chunked request.
var chunkedTE = []string{"chunked"}

func protoName(major, minor int) string {
	switch {
	case major == 1 && minor == 1:
		return "HTTP/1.1"
	case major == 1 && minor == 0:
		return "HTTP/1.0"
	}
	return "HTTP/" + strconv.Itoa(major) + "." + strconv.Itoa(minor)
}

// parseURL sets req.URL from req.RequestURI as url.ParseRequestURI does,
// without allocating for an origin-form target whose path needs no
// escaping (the usual request); others go to net/url.
func (c *conn) parseURL(req *http.Request) error {
	raw := req.RequestURI
	u := &c.reqs.url
	req.URL = u
	if len(raw) > 0 && raw[0] == '/' {
		path, query, hasQuery := strings.Cut(raw, "?")
		if http1.PlainPath(path) {
			u.Path = path
			u.RawQuery = query
			u.ForceQuery = hasQuery && query == ""
			return nil
		}
	}
	authority := req.Method == "CONNECT" && !strings.HasPrefix(raw, "/")
	if authority {
		raw = "http://" + raw
	}
	pu, err := url.ParseRequestURI(raw)
	if err != nil {
		return badRequest("invalid request target")
	}
	if authority {
		pu.Scheme = ""
	}
	req.URL = pu
	return nil
}

// handle runs the handler for c.req and finishes its response; it reports
// whether the connection may carry another request.
func (c *conn) handle(h http.Handler) bool {
	req := c.req
	w := &c.w
	w.reset(req)
	defer c.reqs.end() // after the response is finished, as net/http's
	if req.RequestURI == "*" && req.Method == http.MethodOptions && !c.s.DisableGeneralOptionsHandler {
		h = generalOptions
	}
	c.noteRequest()
	if req.ContentLength == 0 {
		c.watchGone() // else once the body is read (body.next)
	}
	pinned, handed := c.t.Pinned(), c.t.Handoffs()
	p, stack := c.call(h, w, req)
	c.reqs.endBody()
	c.unwatchGone()
	w.endCloseNotify()
	c.watchdog(pinned, handed)
	if p != nil && p != http.ErrAbortHandler {
		c.s.logf("http: panic serving %v: %v\n%s", c.remote, p, stack)
	}
	if c.hijacked { // the conn is the handler's, panic or not (net/http leaves it open too)
		w.handlerDone = true
		return false
	}
	if req.MultipartForm != nil {
		// The temporary files of a form the handler parsed go once its
		// answer is done, as net/http's finishRequest removes them.
		defer req.MultipartForm.RemoveAll()
	}
	if p != nil {
		switch {
		case p == http.ErrAbortHandler: // no answer: what the handler sent is all the client gets
			if !w.committed {
				c.out = c.out[:w.mark]
			}
			c.flush()
		case !w.committed && len(c.out) == w.mark:
			w.panicAnswer()
			c.flush()
		}
		return false
	}
	w.finish()
	return w.reusable()
}

// watchGone has the carrier cancel the request's context when the client
// goes away while the handler runs (carrier.Conn.WatchHangup), once the
// request is read and nothing of the client's is buffered, as net/http's
// background read does; a client gone already cancels it at once.
func (c *conn) watchGone() {
	if c.watched || c.hijacked || c.Start != c.End {
		return
	}
	if c.cn.WatchHangup(c.goneFn) {
		c.gone()
		return
	}
	c.watched = true
}

// watchLate is watchGone for a goroutine other than the task that read
// the body to its end, with nothing of the client's buffered after it: a
// task submitted to the conn's carrier arms the watch, unless the handler
// stopped watching meanwhile. The submitted task and the handler's
// unwatchGone take turns on the carrier (a handed-off handler rejoins it
// before its WatchHangup), and lateSeq moves on before the latter: the
// watch is armed before it is stopped, or not at all.
func (c *conn) watchLate() {
	seq := c.lateSeq.Load()
	c.lateWatch.Store(true)
	c.home.Load().SubmitLocal(func(*carrier.Task) {
		if c.lateSeq.Load() == seq && c.cn.WatchHangup(c.goneFn) {
			c.gone()
		}
	})
}

// unwatchGone stops the hang-up watch once the handler has returned.
func (c *conn) unwatchGone() {
	late := c.lateWatch.Load()
	if late {
		c.lateWatch.Store(false)
		c.lateSeq.Add(1)
	}
	if c.watched || late {
		c.watched = false
		c.cn.WatchHangup(nil)
	}
}

// watchdog logs and counts a handler that ran longer than the carrier's
// threshold without parking: in a run that ended while it ran (the task's
// Pinned count grew from pinned), or in the run still going on. Where the
// carrier handed the run off (the task's Handoffs grew from handed) only
// the request waited; elsewhere the handler held its carrier.
func (c *conn) watchdog(pinned, handed uint64) {
	thr := c.t.Carrier().PinnedThreshold()
	if thr <= 0 {
		return
	}
	running := c.t.RunningFor() // first: a handed-off handler rejoins its carrier here, and its run is counted
	if c.t.Pinned() == pinned && running <= thr {
		return
	}
	c.s.pinned.Add(1)
	held, ok := c.s.watchLog.due(time.Now())
	if !ok {
		return
	}
	what := "it held its carrier; wrap it in OffloadHandler"
	if c.t.Handoffs() != handed {
		what = "its carrier handed the run off and went on without it"
	}
	more := ""
	if held > 0 {
		more = fmt.Sprintf(" (and %d more since the last such line)", held)
	}
	c.s.logf("carrierhttp: the handler of %s %s from %s ran over %v without parking (it blocks the Go way or computes): %s%s",
		c.req.Method, c.req.RequestURI, c.remote, thr, what, more)
}

// logEvery bounds a kind of log line to one per period: a server whose
// handlers all sleep would otherwise log every request.
type logEvery struct {
	last atomic.Int64 // Unix ns of the last line; 0: none yet
	held atomic.Int64 // lines held back since
}

// watchLogPeriod is the shortest time between two watchdog lines.
const watchLogPeriod = time.Second

// due reports whether a line may be logged at now and, if so, how many
// were held back since the last one.
func (l *logEvery) due(now time.Time) (held int64, ok bool) {
	last, ns := l.last.Load(), now.UnixNano()
	if last != 0 && ns-last < int64(watchLogPeriod) || !l.last.CompareAndSwap(last, ns) {
		l.held.Add(1)
		return 0, false
	}
	return l.held.Swap(0), true
}

// generalOptions answers "OPTIONS *" as net/http's server does: 200,
// Content-Length: 0, after reading up to 4 KiB of a body.
var generalOptions = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "0")
	if r.ContentLength != 0 {
		const maxOptionsBody = 4 << 10 // net/http's
		io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxOptionsBody))
	}
})

// call runs the handler, returning what it panicked with and, for a panic
// other than http.ErrAbortHandler, the stack where it did (taken before the
// deferred recover returns, so that it holds the handler's frames).
func (c *conn) call(h http.Handler, w *response, req *http.Request) (p any, stack []byte) {
	defer func() {
		if p = recover(); p != nil && carrier.IsStop(p) {
			panic(p) // the carrier unwinds the parked task: let it
		}
		if p != nil && p != http.ErrAbortHandler {
			stack = make([]byte, panicStack)
			stack = stack[:runtime.Stack(stack, false)]
		}
	}()
	h.ServeHTTP(w, req)
	return nil, nil
}
