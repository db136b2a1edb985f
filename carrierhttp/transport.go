package carrierhttp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
)

// Defaults of Transport's fields.
const (
	// DefaultDialTimeout bounds a connect: net/http's DefaultTransport
	// dialer's 30 s.
	DefaultDialTimeout = 30 * time.Second
	// DefaultMaxIdleConnsPerHost is how many idle connections one carrier
	// keeps per host: net/http's DefaultMaxIdleConnsPerHost, 2.
	DefaultMaxIdleConnsPerHost = http.DefaultMaxIdleConnsPerHost
	// DefaultIdleConnTimeout is how long an idle connection may wait for
	// reuse: net/http's DefaultTransport's 90 s.
	DefaultIdleConnTimeout = 90 * time.Second
	// DefaultMaxResponseHeaderBytes bounds a response head: 1 MiB,
	// net/http's server's limit on request heads (http.DefaultMaxHeaderBytes);
	// net/http's Transport allows 10 MiB.
	DefaultMaxResponseHeaderBytes = http.DefaultMaxHeaderBytes
)

// Transport is an http.RoundTripper on carrier conns. Called with a
// request whose context carries the calling task (carrier.ContextWithTask;
// Server puts it in every request's context, so r.Context() or a context
// derived from it serves), it dials and polls the backend connection on
// that task's carrier: the task parks while it waits, the carrier runs
// others. Idle connections are kept per carrier and host. The response
// body must be read by the same task. Called from anywhere else (a plain
// goroutine, another task), it uses Fallback, so it always works.
//
// It speaks HTTP/1.1 over TCP or TLS, any method, request bodies (sent
// with Content-Length or chunked), responses by length, chunked or
// delimited by the close, and honours the request context's deadline
// (http.Client.Timeout sets one) and cancellation. It does not ask for
// gzip (as net/http's DisableCompression) and uses no proxy. It refuses
// what net/http's Transport refuses (a method or header field name that is
// not a token, a field value with a control character), reads responses
// with http1's parser into the *http.Response that http.ReadResponse would
// make, and writes a request without a body straight into the connection's
// buffer, as the bytes Request.Write would write (docs/carrierhttp.md).
type Transport struct {
	// DialTimeout bounds connecting; 0: DefaultDialTimeout.
	DialTimeout time.Duration
	// MaxIdleConnsPerHost bounds the idle connections one carrier keeps
	// per host; 0: DefaultMaxIdleConnsPerHost, negative: none kept.
	MaxIdleConnsPerHost int
	// IdleConnTimeout drops an idle connection older than this when it is
	// next looked for; 0: DefaultIdleConnTimeout.
	IdleConnTimeout time.Duration
	// MaxResponseHeaderBytes bounds a response head (status line and
	// header fields), in bytes; a longer one fails the request. 0 or
	// less: DefaultMaxResponseHeaderBytes.
	MaxResponseHeaderBytes int
	// TLSClientConfig configures https connections; nil: the defaults.
	TLSClientConfig *tls.Config
	// Fallback serves requests made outside a carrier task; nil: a
	// net/http Transport cloned from http.DefaultTransport, without
	// compression.
	Fallback http.RoundTripper

	mu       sync.Mutex
	idle     map[poolKey][]*clientConn
	fbOnce   sync.Once
	fallback http.RoundTripper
}

// poolKey names a pool: one carrier's idle connections to one address.
type poolKey struct {
	c      *carrier.Carrier
	addr   string // host:port
	secure bool
}

// RoundTrip makes one exchange (http.RoundTripper).
func (tr *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t := carrier.TaskFromContext(req.Context())
	if t == nil {
		return tr.fallbackRT().RoundTrip(req)
	}
	fail := func(err error) (*http.Response, error) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	if req.URL == nil {
		return fail(errors.New("carrierhttp: nil Request.URL"))
	}
	var secure bool
	switch req.URL.Scheme {
	case "http":
	case "https":
		secure = true
	default:
		return fail(fmt.Errorf("carrierhttp: unsupported protocol scheme %q", req.URL.Scheme))
	}
	if req.URL.Host == "" {
		return fail(errors.New("carrierhttp: no Host in request URL"))
	}
	if err := checkRequest(req); err != nil {
		return fail(err)
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	key := poolKey{c: t.Carrier(), addr: hostPort(req.URL, secure), secure: secure}
	for {
		cc, err := tr.getConn(t, key, req)
		if err != nil {
			return fail(err)
		}
		resp, final, err := tr.exchange(t, cc, req)
		if err == nil {
			return resp, nil
		}
		tr.done(cc, false)
		// A reused connection the server closed while it was idle fails
		// at once: try once more on a new one when nothing is lost.
		if cc.reused && !final && ctx.Err() == nil {
			continue
		}
		return fail(contextError(ctx, err))
	}
}

// replayable reports whether sending req again cannot do what the first
// one did not (net/http's Request.isReplayable, for a request without a
// body): an idempotent method, or an Idempotency-Key field.
func replayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// hostPort is the URL's host and port, the scheme's default port where it
// has none ("[::1]" becomes "[::1]:80").
func hostPort(u *url.URL, secure bool) string {
	port := u.Port()
	switch {
	case port != "":
		return u.Host // host:port already, as JoinHostPort would make it
	case secure:
		port = "443"
	default:
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

func (tr *Transport) fallbackRT() http.RoundTripper {
	tr.fbOnce.Do(func() {
		if tr.Fallback != nil {
			tr.fallback = tr.Fallback
			return
		}
		ht := http.DefaultTransport.(*http.Transport).Clone()
		ht.DisableCompression = true
		tr.fallback = ht
	})
	return tr.fallback
}

// getConn takes an idle connection of the task's carrier, or dials one.
func (tr *Transport) getConn(t *carrier.Task, key poolKey, req *http.Request) (*clientConn, error) {
	idleTimeout := tr.IdleConnTimeout
	if idleTimeout <= 0 {
		idleTimeout = DefaultIdleConnTimeout
	}
	for {
		cc := tr.popIdle(key)
		if cc == nil {
			break
		}
		// A conn the server closed while it was idle is dropped before
		// use, as net/http's Transport drops it when its reader sees the
		// close: a request that is not replayable is not retried later.
		if t.Now()-cc.idleAt < int64(idleTimeout) && !cc.cn.PeerClosed() {
			cc.reused = true
			return cc, nil
		}
		cc.cn.Close() // in the task of its carrier: allowed
	}
	timeout := tr.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	if d, ok := req.Context().Deadline(); ok {
		timeout = min(timeout, time.Until(d))
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
	}
	cn, err := t.Dial(key.addr, timeout)
	if err != nil {
		return nil, err
	}
	cc := newClientConn(key, cn)
	if key.secure {
		cfg := tr.TLSClientConfig.Clone()
		if cfg == nil {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(key.addr)
		}
		if cfg.NextProtos == nil {
			cfg.NextProtos = []string{"http/1.1"}
		}
		tc := tls.Client(cn, cfg)
		cn.SetDeadline(time.Now().Add(timeout))
		if err := tc.HandshakeContext(req.Context()); err != nil {
			cn.Close()
			return nil, err
		}
		cn.SetDeadline(time.Time{})
		st := tc.ConnectionState()
		cc.rw, cc.tls = tc, &st
	}
	return cc, nil
}

func (tr *Transport) popIdle(key poolKey) *clientConn {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	l := tr.idle[key]
	if len(l) == 0 {
		return nil
	}
	cc := l[len(l)-1]
	l[len(l)-1] = nil
	tr.idle[key] = l[:len(l)-1]
	return cc
}

// putIdle keeps cc for reuse, or closes it when the pool is full. It runs
// in a task of cc's carrier.
func (tr *Transport) putIdle(cc *clientConn) {
	limit := tr.MaxIdleConnsPerHost
	if limit == 0 {
		limit = DefaultMaxIdleConnsPerHost
	}
	tr.mu.Lock()
	if tr.idle == nil {
		tr.idle = map[poolKey][]*clientConn{}
	}
	l := tr.idle[cc.key]
	if len(l) >= limit {
		tr.mu.Unlock()
		cc.cn.Close()
		return
	}
	cc.idleAt = wait.Now()
	tr.idle[cc.key] = append(l, cc)
	tr.mu.Unlock()
}

// CloseIdleConnections closes the idle connections of every carrier: each
// is closed by a task on its own carrier, so it may be called from
// anywhere.
func (tr *Transport) CloseIdleConnections() {
	tr.mu.Lock()
	idle := tr.idle
	tr.idle = nil
	tr.mu.Unlock()
	for _, l := range idle {
		for _, cc := range l {
			cc.cn.CloseAsync() // by the carrier the conn is on, from here
		}
	}
	if ci, ok := tr.fallbackRT().(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// stopNow is a deadline that has passed: it wakes a task parked on a conn.
var stopNow = time.Unix(1, 0)

// exchange writes req on cc and reads the response head; the body streams
// from cc. After an error, final reports that req may not be sent again on
// another connection, as net/http's Transport decides: its body was
// consumed, or some of it went out and then either it is not replayable or
// a byte of the answer arrived.
func (tr *Transport) exchange(t *carrier.Task, cc *clientConn, req *http.Request) (resp *http.Response, final bool, err error) {
	ctx := req.Context()
	cc.got = false
	if d, ok := ctx.Deadline(); ok {
		cc.rw.SetDeadline(d)
		cc.deadline = true
	} else if cc.deadline {
		cc.rw.SetDeadline(time.Time{})
		cc.deadline = false
	}
	cc.watch.Start(t, ctx, cc.onCancel)
	hasBody := req.Body != nil && req.Body != http.NoBody
	sent := 0 // bytes of the request written, as far as known
	if cc.out, err = appendRequest(cc.out[:0], req); err == nil {
		sent, err = cc.rw.Write(cc.out)
	} else if err == errSlowPath {
		if cc.bw == nil {
			cc.bw = bufio.NewWriter(cc.rw)
		}
		if err = req.Write(cc.bw); err == nil {
			err = cc.bw.Flush()
		}
		sent = 1 // unknown: as if some went out
	}
	if err != nil {
		return nil, hasBody || sent > 0 && !replayable(req), err
	}
	maxHead := tr.MaxResponseHeaderBytes
	if maxHead <= 0 {
		maxHead = DefaultMaxResponseHeaderBytes
	}
	b, err := cc.readResponse(req, maxHead)
	if err != nil {
		return nil, hasBody || cc.got || !replayable(req), err
	}
	resp = &b.resp
	resp.TLS = cc.tls
	if !tr.attachBody(cc, req, b) {
		tr.done(cc, !resp.Close && !req.Close)
	}
	return resp, true, nil
}

// attachBody sets b.resp.Body to b, the body of the answer to req whose
// head was read from cc, and reports whether it streams from cc (else it is
// empty, and the exchange is over).
func (tr *Transport) attachBody(cc *clientConn, req *http.Request, b *clientBody) bool {
	resp := &b.resp
	if resp.StatusCode == http.StatusSwitchingProtocols {
		resp.Body = cc.switched()
		return true
	}
	// buildResponse set ContentLength 0 for 1xx, 204 and 304; the answer
	// to HEAD has no body whatever its Content-Length says.
	if resp.ContentLength == 0 || req.Method == http.MethodHead {
		resp.Body = http.NoBody
		return false
	}
	b.tr, b.cc, b.ctx = tr, cc, req.Context()
	b.keep = !resp.Close && !req.Close
	cc.body.Reset(resp.ContentLength, resp.TransferEncoding != nil)
	resp.Body = b
	return true
}

// switched returns the body of a 101 Switching Protocols answer on cc, as
// net/http's Transport makes it: the connection itself, for the caller to
// read and write (an io.ReadWriteCloser: httputil.ReverseProxy copies a
// websocket both ways through it, from goroutines, which a carrier.Conn
// serves), the input read past the head first. cc leaves the Transport:
// it goes to no pool, its cancellation watch stops, and the request
// context's deadline no longer bounds it (net/http's neither); the caller
// closes it.
func (cc *clientConn) switched() switchedBody {
	if cc.watch.Stop() && cc.deadline { // a watch that fired leaves its past deadline: the body fails
		cc.rw.SetDeadline(time.Time{})
		cc.deadline = false
	}
	return switchedBody{detach(&cc.InBuf, cc.rw)}
}

// switchedBody is a 101 answer's body: the switched connection, the input
// read past the head first.
type switchedBody struct{ *prefixedConn }

// CloseWrite half-closes the connection, as net/http's switched body does
// where its conn can (httputil.ReverseProxy does once the client's side of
// a websocket ended).
func (sb switchedBody) CloseWrite() error {
	if cw, ok := sb.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return fmt.Errorf("CloseWrite: %w", http.ErrNotSupported)
}

// done ends an exchange: cc goes back to the pool or is closed. It is
// closed when it may not carry another exchange (keep false), when the
// server sent more than the answer, or when the exchange's cancellation
// fired (its callback may still be on its way: see clientConn.cancel).
func (tr *Transport) done(cc *clientConn, keep bool) {
	if !cc.watch.Stop() {
		keep = false
	}
	if !keep || cc.End > cc.Start || cc.EOF {
		cc.cn.Close()
		return
	}
	tr.putIdle(cc)
}

// contextError reports an I/O error caused by the request context as the
// context's error (wrapping both): the conn's deadline is the context's,
// and may pass a moment before the context's own timer fires.
func contextError(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if cerr == nil && errors.Is(err, os.ErrDeadlineExceeded) {
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			cerr = context.DeadlineExceeded
		}
	}
	if cerr == nil {
		return err
	}
	return fmt.Errorf("carrierhttp: %w (%w)", cerr, err)
}
