package carrierhttp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/spindle-lab/spindle/carrier"
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
// gzip (as net/http's DisableCompression) and uses no proxy.
type Transport struct {
	// DialTimeout bounds connecting; 0: DefaultDialTimeout.
	DialTimeout time.Duration
	// MaxIdleConnsPerHost bounds the idle connections one carrier keeps
	// per host; 0: DefaultMaxIdleConnsPerHost, negative: none kept.
	MaxIdleConnsPerHost int
	// IdleConnTimeout drops an idle connection older than this when it is
	// next looked for; 0: DefaultIdleConnTimeout.
	IdleConnTimeout time.Duration
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

// clientConn is one backend connection.
type clientConn struct {
	key    poolKey
	cn     *carrier.Conn
	rw     net.Conn // cn, or TLS over it
	br     *bufio.Reader
	bw     *bufio.Writer
	idleAt time.Time
	reused bool
	gen    uint64 // exchanges so far: a cancellation checks it is still current
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
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	key := poolKey{c: t.Carrier(), addr: hostPort(req.URL, secure), secure: secure}
	replayable := req.Body == nil || req.Body == http.NoBody
	for {
		cc, err := tr.getConn(t, key, req)
		if err != nil {
			return fail(err)
		}
		resp, wrote, err := tr.exchange(cc, req)
		if err == nil {
			return resp, nil
		}
		cc.cn.Close()
		// A reused connection the server closed while it was idle fails
		// at once: try once more on a new one when nothing is lost.
		if cc.reused && replayable && !wrote && ctx.Err() == nil {
			continue
		}
		return fail(contextError(ctx, err))
	}
}

// hostPort is the URL's host and port, the scheme's default port where it
// has none ("[::1]" becomes "[::1]:80").
func hostPort(u *url.URL, secure bool) string {
	port := u.Port()
	switch {
	case port != "":
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
		if time.Since(cc.idleAt) < idleTimeout {
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
	cc := &clientConn{key: key, cn: cn, rw: cn}
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
		cc.rw = tc
	}
	cc.br = bufio.NewReader(cc.rw)
	cc.bw = bufio.NewWriter(cc.rw)
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
	cc.idleAt = time.Now()
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
	for key, l := range idle {
		key.c.Submit(func(*carrier.Task) {
			for _, cc := range l {
				cc.cn.Close()
			}
		})
	}
	if ci, ok := tr.fallbackRT().(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// stopNow is a deadline that has passed: it wakes a task parked on a conn.
var stopNow = time.Unix(1, 0)

// exchange writes req on cc and reads the response head; the body streams
// from cc. wrote reports whether any byte of the response arrived or the
// request body was consumed (then the request cannot be retried).
func (tr *Transport) exchange(cc *clientConn, req *http.Request) (resp *http.Response, wrote bool, err error) {
	ctx := req.Context()
	cc.gen++
	if d, ok := ctx.Deadline(); ok {
		cc.rw.SetDeadline(d)
	} else {
		cc.rw.SetDeadline(time.Time{})
	}
	stop := func() bool { return false }
	if ctx.Done() != nil {
		home, gen := cc.key.c, cc.gen
		stop = context.AfterFunc(ctx, func() {
			home.Submit(func(*carrier.Task) {
				if cc.gen == gen {
					cc.cn.SetDeadline(stopNow) // the parked task wakes with a timeout
				}
			})
		})
	}
	if err := req.Write(cc.bw); err != nil {
		stop()
		return nil, req.Body != nil && req.Body != http.NoBody, err
	}
	if err := cc.bw.Flush(); err != nil {
		stop()
		return nil, true, err
	}
	for {
		resp, err = http.ReadResponse(cc.br, req)
		if err != nil {
			stop()
			return nil, cc.br.Buffered() > 0, err
		}
		if resp.StatusCode < 100 || resp.StatusCode > 199 {
			break
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			stop()
			return nil, true, errors.New("carrierhttp: protocol switch (101) is not supported")
		}
		// An interim answer (100 Continue, 103 Early Hints): the final
		// one follows.
	}
	keep := !resp.Close && !req.Close
	if resp.Body == http.NoBody || resp.ContentLength == 0 && resp.Body != nil && !isChunked(resp) {
		if resp.Body != nil {
			resp.Body.Close()
		}
		resp.Body = http.NoBody
		tr.done(cc, keep, stop)
		return resp, true, nil
	}
	resp.Body = &clientBody{tr: tr, cc: cc, rc: resp.Body, keep: keep, stop: stop, ctx: ctx}
	return resp, true, nil
}

func isChunked(resp *http.Response) bool {
	return len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
}

// done ends an exchange: cc goes back to the pool or is closed. A
// cancellation that already fired moved cc's deadline (its queued closure
// sees the generation change and does nothing): the deadline is cleared
// before reuse.
func (tr *Transport) done(cc *clientConn, keep bool, stop func() bool) {
	stop()
	cc.gen++
	if !keep {
		cc.cn.Close()
		return
	}
	cc.rw.SetDeadline(time.Time{})
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

// clientBody is a response body streamed from its connection; at its end
// the connection goes back to the pool.
type clientBody struct {
	tr   *Transport
	cc   *clientConn
	rc   io.ReadCloser
	keep bool
	stop func() bool
	ctx  context.Context
	done bool
}

func (b *clientBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.finish(true)
	case err != nil:
		b.finish(false)
		err = contextError(b.ctx, err)
	}
	return n, err
}

// Close ends the body; one not read to its end closes the connection (as
// net/http does).
func (b *clientBody) Close() error {
	if !b.done {
		b.finish(false)
	}
	return nil
}

func (b *clientBody) finish(complete bool) {
	b.done = true
	b.rc.Close()
	b.tr.done(b.cc, b.keep && complete, b.stop)
}
