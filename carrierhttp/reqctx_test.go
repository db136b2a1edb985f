package carrierhttp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestRequestContext: a request's context is its connection's until the
// handler returns, then cancelled, whichever of Done, Err, Value, a child
// context, context.AfterFunc or context.Cause looks at it, and before or
// after the end; a cancelled connection cancels it too.
func TestRequestContext(t *testing.T) {
	type key struct{}
	isDone := func(ctx context.Context) bool {
		select {
		case <-ctx.Done():
			return true
		default:
			return false
		}
	}
	for _, tc := range []struct {
		name      string
		doneFirst bool // Done is asked before the end (the context is made live)
		connEnds  bool // the connection's context is cancelled instead of the handler ending
	}{
		{"ended, Done asked after", false, false},
		{"ended, Done asked before", true, false},
		{"connection cancelled, Done asked after", false, true},
		{"connection cancelled, Done asked before", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, cancelConn := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
			defer cancelConn()
			r := &requestContext{conn: conn}
			if tc.doneFirst && isDone(r) {
				t.Fatal("done before the end")
			}
			if err := r.Err(); err != nil {
				t.Fatalf("Err before the end: %v", err)
			}
			child, cancelChild := context.WithCancel(r)
			defer cancelChild()
			ran := make(chan struct{})
			context.AfterFunc(r, func() { close(ran) })
			if tc.connEnds {
				cancelConn()
			} else {
				r.end()
			}
			if !errors.Is(r.Err(), context.Canceled) || !isDone(r) {
				t.Fatalf("after the end: Err %v, done %v; want canceled and done", r.Err(), isDone(r))
			}
			if !isDone(child) || !errors.Is(context.Cause(r), context.Canceled) {
				t.Fatalf("after the end: child done %v, Cause %v", isDone(child), context.Cause(r))
			}
			select {
			case <-ran:
			case <-time.After(5 * time.Second):
				t.Fatal("context.AfterFunc did not run")
			}
			if r.Value(key{}) != "v" {
				t.Fatalf("Value = %v, want the connection's", r.Value(key{}))
			}
		})
	}
}

// TestRequestContextUnobserved: a context nobody looked at before the
// handler ended is cancelled for whoever looks after: Cause included (the
// context package finds a context's cancellation by a private key).
func TestRequestContextUnobserved(t *testing.T) {
	conn, cancel := context.WithCancel(context.Background()) // a live connection, as in serve
	defer cancel()
	r := &requestContext{conn: conn}
	r.end()
	if !errors.Is(context.Cause(r), context.Canceled) {
		t.Fatalf("Cause after the end: %v, want canceled", context.Cause(r))
	}
	r = &requestContext{conn: conn}
	r.end()
	if !errors.Is(r.Err(), context.Canceled) {
		t.Fatalf("Err after the end: %v", r.Err())
	}
	select {
	case <-r.Done():
	default:
		t.Fatal("Done asked after the end is not closed")
	}
}

// TestRequestContextConcurrent: Done, Err and Value from other goroutines
// while the handler ends (run with -race).
func TestRequestContextConcurrent(t *testing.T) {
	for range 100 {
		r := &requestContext{conn: context.Background()}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				<-r.Done()
				if r.Err() == nil {
					t.Error("done with a nil Err")
				}
			})
		}
		r.end()
		wg.Wait()
	}
}

// TestWithContextInPlace: the request's context is set in place on this Go
// release (http.Request's context field was found), so a request costs no
// copy of the Request; where it was not, withContext still gives the
// request its context, by WithContext.
func TestWithContextInPlace(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	r := &http.Request{Method: "GET"}
	got := withContext(r, ctx)
	if got.Context() != ctx || got.Method != "GET" {
		t.Fatalf("withContext: context %v, method %q", got.Context(), got.Method)
	}
	if got != r {
		t.Fatalf("http.Request's context field was not found (ctxField %d): every request copies its Request", ctxField)
	}
}
