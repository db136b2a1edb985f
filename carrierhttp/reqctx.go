package carrierhttp

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"sync"
	"time"
	"unsafe"
)

// requestContext is a request's context (Request.Context): its
// connection's context, cancelled in addition once the request's handler
// has returned (end). Most handlers never look at their context's Done
// channel, so it makes no cancellable context of its own until someone
// does (live): what the request costs is then one allocation and no lock
// on the connection's context, where context.WithCancel costs three and a
// registration with it that its cancel undoes.
type requestContext struct {
	conn context.Context
	mu   sync.Mutex
	// ended is set once the handler returned; inner, once made, is a
	// context.WithCancel of conn, stop its cancel.
	ended bool
	inner context.Context
	stop  context.CancelFunc
}

func (r *requestContext) Deadline() (time.Time, bool) { return r.conn.Deadline() }

// Done is the Done channel of a context.WithCancel of the connection's
// context, made at the first call (cancelled already if the handler has
// returned).
func (r *requestContext) Done() <-chan struct{} { return r.live().Done() }

func (r *requestContext) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.inner != nil:
		return r.inner.Err()
	case r.ended:
		return context.Canceled
	}
	return r.conn.Err()
}

// Value is the connection's context's value for key. A key of type *int
// makes the cancellable context first: the context package looks up a
// context's own cancellation with a private key of that type, to register
// a child (context.WithCancel of this context, context.AfterFunc) with it
// at no goroutine; it must find this context's, not the connection's,
// whose Done channel differs (TestRequestContext).
func (r *requestContext) Value(key any) any {
	if _, private := key.(*int); private {
		return r.live().Value(key)
	}
	return r.conn.Value(key)
}

// String names the context as the context package's do.
func (r *requestContext) String() string { return "carrierhttp.requestContext" }

// live returns the cancellable context, made now if it was not yet.
func (r *requestContext) live() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inner == nil {
		r.inner, r.stop = context.WithCancel(r.conn)
		if r.ended {
			r.stop()
		}
	}
	return r.inner
}

// ctxField is the offset of http.Request's context field, found once by
// its name and type; 0 where a Go release has none such (Method is the
// first field, so 0 is never the context's).
var ctxField = func() uintptr {
	f, ok := reflect.TypeFor[http.Request]().FieldByName("ctx")
	if !ok || f.Type != reflect.TypeFor[context.Context]() {
		return 0
	}
	return f.Offset
}()

// withContext gives r the context ctx in place, where net/http's
// WithContext would allocate a copy of r for each request (a fifth of
// the allocation of a /health request, and the GC's assists with it);
// where the field is not found it is WithContext.
func withContext(r *http.Request, ctx context.Context) *http.Request {
	if ctxField == 0 {
		return r.WithContext(ctx)
	}
	*(*context.Context)(unsafe.Add(unsafe.Pointer(r), ctxField)) = ctx
	return r
}

// end cancels the context: the handler has returned.
func (r *requestContext) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	if r.stop != nil {
		r.stop()
	}
}

// request is what a request's handler is given and may keep after it
// returns, as under net/http: its Request, URL, context, Body and, for
// up to 2 fields, its header's values, made for each request in one
// allocation (its header is another, and the values of more fields a
// third). A handler that returns while a goroutine of its still reads
// the request (http.TimeoutHandler's handler after the timeout) must not
// see the connection's next request there. With Server.ReuseRequests the
// connection's one is reused instead, but for the context, which is always
// the request's own (ctx points at it).
type request struct {
	req  http.Request
	url  url.URL
	own  requestContext
	ctx  *requestContext
	body requestBody
	vals [2]string // the header's values, for a head of up to 2 fields (Host and one: the struct's size class holds two)
}

// newRequest returns the connection's next request, made for a head of n
// fields, and its header and the header's values (at least n long).
func (c *conn) newRequest(n int) (req *http.Request, hdr http.Header, vals []string) {
	r := c.reused
	if r == nil {
		r = &request{}
		r.ctx = &r.own
		// Host fields stay out of the header (headStrings.header): a
		// request with only Host (or none) makes no room in the map.
		hdr, vals = make(http.Header, max(n-1, 0)), r.vals[:0]
		if n > len(r.vals) {
			vals = make([]string, n)
		}
		vals = vals[:n]
	} else {
		*r = request{ctx: &requestContext{}}
		clear(c.hdr)
		if cap(c.vals) < n {
			c.vals = make([]string, n)
		}
		hdr, vals = c.hdr, c.vals[:n]
	}
	r.ctx.conn = c.ctx
	c.reqs = r
	return withContext(&r.req, r.ctx), hdr, vals
}

// bodyOf returns the Body to give the request for the connection's body b.
func (r *request) bodyOf(b *body) io.ReadCloser {
	if r.ctx != &r.own {
		return b // reused: the connection's body
	}
	r.body.b = b
	return &r.body
}

// endBody ends the request's Body: its handler has returned. A Read by a
// goroutine that kept it is waited for (the body's lock).
func (r *request) endBody() {
	if b := r.body.b; b != nil {
		b.mu.Lock()
		r.body.ended = true
		b.mu.Unlock()
	}
}

// end cancels the request's context: its response is finished.
func (r *request) end() { r.ctx.end() }

// requestBody is a request's own Body: the connection's body while the
// request's handler runs; afterwards a goroutine that kept it gets
// http.ErrBodyReadAfterClose, as from net/http's, rather than the
// connection's next request. ended is guarded by the body's lock.
type requestBody struct {
	b     *body
	ended bool
}

func (rb *requestBody) Read(p []byte) (int, error) {
	rb.b.mu.Lock()
	defer rb.b.mu.Unlock()
	if rb.ended {
		return 0, http.ErrBodyReadAfterClose
	}
	return rb.b.read(p)
}

func (rb *requestBody) Close() error {
	rb.b.mu.Lock()
	defer rb.b.mu.Unlock()
	if !rb.ended {
		rb.b.closed = true
	}
	return nil
}
