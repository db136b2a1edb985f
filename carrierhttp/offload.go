package carrierhttp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"

	"github.com/spindle-lab/spindle/carrier"
)

// OffloadHandler runs h on a plain goroutine, where it may block the Go way
// (channels, mutexes, time.Sleep, database/sql, net.Conn) without holding
// its carrier: the design of spindle's handoff mode. The task parks
// meanwhile (carrier.Task.Offload) and the carrier serves others.
//
// The goroutine cannot do the connection's I/O, which belongs to the task,
// so the request body is read in full before h runs (bounded by the
// server's MaxBodyBytes, if set) and h's answer is held for the task to
// send: at h's end, in one write, when h never flushes; at each Flush
// (http.Flusher, or http.ResponseController's) otherwise, which hands the
// head and the body written so far to the task and waits until it sent
// them, so that a streaming handler (server-sent events) streams here too
// and FlushError reports the write's error. As in net/http, header changes
// after the first Flush are ignored but for trailers, and once a Flush
// failed (the client left, the carrier stopped) Write and Flush return its
// error while h runs on to its end. A panic in h is re-raised in the task:
// the server answers 500, or drops the connection when h had flushed.
// Hijack (http.Hijacker, http.ResponseController) is handed to the task
// as a flush is: the task sends the head h set with WriteHeader, if any,
// hijacks, and h gets the connection and its buffered reader, which it
// uses from its goroutine (a carrier.Conn serves any goroutine); the body
// h held and did not flush is dropped, as Hijack drops it in the task. The
// deadlines and full duplex are not supported (http.ErrNotSupported): the
// task owns the connection while h runs. Outside a carrier task it calls h
// directly.
func OffloadHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := carrier.TaskFromContext(r.Context())
		if t == nil {
			h.ServeHTTP(w, r)
			return
		}
		var body []byte
		if r.Body != nil && r.Body != http.NoBody {
			var err error
			if body, err = io.ReadAll(r.Body); err != nil {
				http.Error(w, "cannot read the request body", http.StatusBadRequest)
				return
			}
		}
		r2 := *r // shallow: h sees its own Body
		r2.Body = io.NopCloser(&sliceReader{b: body})
		if body == nil {
			r2.Body = http.NoBody
		}
		ow := &heldResponse{header: http.Header{}, next: make(chan struct{}), ack: make(chan error, 1)}
		// Closing ack tells h the task is gone (it unwinds: the carrier
		// stopped), so that a Flush in h never waits for it forever.
		defer close(ow.ack)
		go ow.run(h, &r2)
		var rc *http.ResponseController // set at the first flush: the head is sent
		for wait := ow.wait; ; {
			t.Offload(wait)
			if ow.done {
				break
			}
			if ow.hijack {
				ow.ack <- ow.takeOver(w, &rc) // h waits in Hijack until this
				continue
			}
			ow.ack <- ow.send(w, &rc) // h waits in FlushError until this
		}
		if p := ow.panicked; p != nil {
			panic(p) // conn.handle answers 500 or, after a flush, drops the connection
		}
		if ow.hijacked {
			return // the connection is h's
		}
		maps.Copy(w.Header(), ow.header) // after a flush, for the trailers only
		if rc == nil && ow.status != 0 {
			w.WriteHeader(ow.status)
		}
		w.Write(ow.body)
	})
}

// sliceReader reads a byte slice (bytes.Reader without its extras).
type sliceReader struct{ b []byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// errTaskGone is what Flush returns once the connection's task stopped
// waiting for the handler (its carrier stopped).
var errTaskGone = errors.New("carrierhttp: the connection's task is gone (its carrier stopped)")

// heldResponse is the ResponseWriter of an offloaded handler: it holds the
// status, header and body for the task to send, at the handler's end or
// when it flushes.
//
// The handler's goroutine owns the fields, except while it waits in
// FlushError for ack and after it closed next: then the task reads them.
// The task waits (in an Offload) for a value on next, a flush, or its
// closing, the handler's end; it answers each flush on ack, with the
// write's error.
type heldResponse struct {
	header http.Header
	status int
	body   []byte
	sent   bool  // the head went to the task
	err    error // the first failed flush's: Write and Flush return it since

	// hijack asks the task to hijack (set by Hijack while it waits);
	// hijacked is set once it did, and the task's Hijack results are here.
	hijack, hijacked bool
	conn             net.Conn
	rw               *bufio.ReadWriter

	next     chan struct{} // unbuffered: a flush is handed to the task's waiter
	ack      chan error    // one buffered: the task never blocks on it
	done     bool          // next was closed (set by the waiter, read by the task)
	panicked any           // what the handler panicked with
}

// run serves r with h on the handler's goroutine.
func (o *heldResponse) run(h http.Handler, r *http.Request) {
	defer func() {
		o.panicked = recover() // before the close: the task reads it after
		close(o.next)
	}()
	h.ServeHTTP(o, r)
}

// wait is the task's Offloaded function: it returns at the handler's next
// flush or its end. A flush that finds the task gone (ack closed: it was
// unwound while parked here) is not returned for: the wait goes on to the
// handler's end, so that Group.Close, which waits for Offloaded functions,
// waits for the handler too. (A task unwound after wait returned, before it
// ran again, leaves the handler to end unwaited for: Flush then returns
// errTaskGone at once.)
func (o *heldResponse) wait() {
	for range o.next {
		select {
		case _, ok := <-o.ack: // empty while the task lives: h took the last answer before flushing
			if !ok {
				continue
			}
		default:
		}
		return
	}
	o.done = true
}

// send writes what the handler flushed to w, in the task: the head the
// first time, the body held since, then w's flush. ErrNotSupported from a
// w that cannot flush is no failure: the bytes go when w sends them.
func (o *heldResponse) send(w http.ResponseWriter, rc **http.ResponseController) error {
	o.head(w, rc)
	if len(o.body) > 0 {
		if _, err := w.Write(o.body); err != nil {
			return err
		}
	}
	if err := (*rc).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// head sets the status and header the handler set on w, the first time
// (*rc is nil until then).
func (o *heldResponse) head(w http.ResponseWriter, rc **http.ResponseController) {
	if *rc == nil {
		maps.Copy(w.Header(), o.header)
		w.WriteHeader(o.status)
		*rc = http.NewResponseController(w)
	}
}

// takeOver hijacks w for the handler, in the task: with the head the
// handler set with WriteHeader (none if it set no status), as Hijack in
// the task would send it.
func (o *heldResponse) takeOver(w http.ResponseWriter, rc **http.ResponseController) error {
	o.hijack = false
	if o.status != 0 {
		o.head(w, rc)
	}
	if *rc == nil {
		*rc = http.NewResponseController(w)
	}
	conn, rw, err := (*rc).Hijack()
	if err == nil {
		o.hijacked, o.conn, o.rw = true, conn, rw
	}
	return err
}

// Hijack hands the connection to the handler (http.Hijacker): the task
// hijacks it (takeOver) while the handler waits.
func (o *heldResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if o.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if o.err != nil {
		return nil, nil, o.err
	}
	o.hijack = true
	o.next <- struct{}{}
	err, ok := <-o.ack
	if !ok {
		err = errTaskGone
	}
	if err != nil {
		o.hijack = false
		return nil, nil, err
	}
	o.body = o.body[:0]
	return o.conn, o.rw, nil
}

func (o *heldResponse) Header() http.Header { return o.header }

// WriteHeader records the first final status; like net/http's it panics
// on a code outside 100-999 (here, where the handler's stack shows it).
// Informational codes other than 101 are not sent.
func (o *heldResponse) WriteHeader(code int) {
	if o.hijacked {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if o.status == 0 && (code > 199 || code == http.StatusSwitchingProtocols) { // 101 is final, as in net/http
		o.status = code
	}
}

func (o *heldResponse) Write(p []byte) (int, error) {
	if o.hijacked {
		return 0, http.ErrHijacked
	}
	if o.err != nil {
		return 0, o.err
	}
	if o.status == 0 {
		o.status = http.StatusOK
	}
	o.body = append(o.body, p...)
	return len(p), nil
}

// WriteString is Write without the string's conversion.
func (o *heldResponse) WriteString(s string) (int, error) {
	if o.hijacked {
		return 0, http.ErrHijacked
	}
	if o.err != nil {
		return 0, o.err
	}
	if o.status == 0 {
		o.status = http.StatusOK
	}
	o.body = append(o.body, s...)
	return len(s), nil
}

// Flush sends the head and what was written so far (http.Flusher).
func (o *heldResponse) Flush() { o.FlushError() }

// FlushError hands the head (the first time) and the body held to the task
// and waits until it wrote them, returning the write's error
// (http.ResponseController). With nothing new to send it returns at once.
func (o *heldResponse) FlushError() error {
	if o.hijacked {
		return http.ErrHijacked
	}
	if o.err != nil {
		return o.err
	}
	if o.sent && len(o.body) == 0 {
		return nil
	}
	if o.status == 0 {
		o.status = http.StatusOK
	}
	o.sent = true
	// A waiter takes this: the task's, or, when the task unwound while
	// parked in wait, that wait still going on. A task unwound elsewhere
	// closed ack while h waited on it, and o.err keeps h from coming here.
	o.next <- struct{}{}
	err, ok := <-o.ack
	if !ok {
		err = errTaskGone
	}
	o.body = o.body[:0] // the task copied it out
	o.err = err
	return err
}
