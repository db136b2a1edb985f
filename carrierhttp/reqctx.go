package carrierhttp

import (
	"context"
	"net/http"
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
