package carrierhttp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/leakcheck"
)

// offloadWait bounds every wait in these tests: long, so that a loaded
// machine (2 CPUs, other tests beside) cannot fail them; the checks are
// orderings, never speeds.
const offloadWait = 10 * time.Second

// offloadClient is an http.Client of its own transport, closed when the
// test ends (before the leak check startCarrier registered).
func offloadClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: offloadWait}
}

// flushers are the two ways a handler flushes.
var flushers = []struct {
	name  string
	flush func(http.ResponseWriter) error
}{
	{"http.Flusher", func(w http.ResponseWriter) error { w.(http.Flusher).Flush(); return nil }},
	{"http.ResponseController", func(w http.ResponseWriter) error { return http.NewResponseController(w).Flush() }},
}

// readEvent reads one server-sent event (up to its blank line).
func readEvent(br *bufio.Reader) (string, error) {
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return ev.String(), err
		}
		if line == "\n" {
			return ev.String(), nil
		}
		ev.WriteString(line)
	}
}

// TestOffloadStreams: an offloaded SSE handler's events reach the client
// as it flushes them, in order, each while the handler still runs: after
// each flush it waits for the client to have read that event (a handler
// whose answer were held to its end would time out there, and the client
// would see it finished). The head is the one at the first flush (a field
// set later is not sent) and a trailer set at the end is sent.
func TestOffloadStreams(t *testing.T) {
	const events = 5
	for _, f := range flushers {
		t.Run(f.name, func(t *testing.T) {
			read := make(chan int)
			finished := make(chan struct{})
			h := OffloadHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(finished)
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Trailer", "X-Events")
				for i := 1; i <= events; i++ {
					fmt.Fprintf(w, "data: %d\n\n", i)
					if err := f.flush(w); err != nil {
						t.Errorf("flush %d: %v", i, err)
						return
					}
					if i == 1 {
						w.Header().Set("X-Late", "after the first flush")
					}
					select {
					case <-read:
					case <-r.Context().Done(): // the test ended early
						return
					case <-time.After(offloadWait):
						t.Errorf("event %d: the client did not read it while the handler ran", i)
					}
					time.Sleep(50 * time.Millisecond) // blocks the Go way
				}
				w.Header().Set("X-Events", fmt.Sprint(events))
			}))
			_, addr := startCarrier(t, h, nil)
			resp, err := offloadClient(t).Get("http://" + addr + "/events")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" ||
				resp.Header.Get("X-Late") != "" || resp.ContentLength != -1 {
				t.Errorf("head: %s, header %v, Content-Length %d", resp.Status, resp.Header, resp.ContentLength)
			}
			br := bufio.NewReader(resp.Body)
			for i := 1; i <= events; i++ {
				ev, err := readEvent(br)
				if want := fmt.Sprintf("data: %d\n", i); ev != want || err != nil {
					t.Fatalf("event %d: %q, %v; want %q", i, ev, err, want)
				}
				select {
				case <-finished:
					t.Fatalf("event %d arrived only after the handler returned", i)
				default:
				}
				read <- i
			}
			if rest, err := io.ReadAll(br); len(rest) != 0 || err != nil {
				t.Errorf("after the events: %q, %v", rest, err)
			}
			if got := resp.Trailer.Get("X-Events"); got != fmt.Sprint(events) {
				t.Errorf("trailer X-Events = %q, want %d", got, events)
			}
		})
	}
}

// TestOffloadAnswers: whole answers of offloaded handlers, flushing or
// not, and panicking before or after a flush (500 before; after, the
// client sees what was flushed, then the connection drops). After each,
// the server answers a next request.
func TestOffloadAnswers(t *testing.T) {
	tests := []struct {
		name    string
		h       http.HandlerFunc
		status  int
		clen    int64 // -1: chunked
		body    string
		header  string // a field the answer has, as "Key: value"
		readErr bool   // the body ends in an error: the connection dropped
	}{
		{"never flushes", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-A", "1")
			io.WriteString(w, "held ")
			time.Sleep(20 * time.Millisecond)
			io.WriteString(w, "whole")
		}, 200, 10, "held whole", "X-A: 1", false},
		{"never writes", func(w http.ResponseWriter, r *http.Request) {}, 200, 0, "", "", false},
		{"status without a flush", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, "accepted")
		}, 202, 8, "accepted", "", false},
		{"flushes before writing", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-B", "2")
			w.WriteHeader(http.StatusCreated)
			w.(http.Flusher).Flush()
			w.(http.Flusher).Flush() // nothing new: returns at once
			io.WriteString(w, "after")
		}, 201, -1, "after", "X-B: 2", false},
		{"reads the body and flushes", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Write(b)
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Errorf("flush: %v", err)
			}
			io.WriteString(w, " again")
		}, 200, -1, "echo again", "", false},
		{"panics before a flush", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "lost")
			panic("before the flush")
		}, 500, 21, "Internal Server Error", "", false},
		{"invalid status", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(1000)
		}, 500, 21, "Internal Server Error", "", false},
		{"panics after a flush", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "flushed")
			w.(http.Flusher).Flush()
			io.WriteString(w, " lost")
			panic("after the flush")
		}, 200, -1, "flushed", "", true},
		{"aborts after a flush", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "flushed")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}, 200, -1, "flushed", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.Handle("/h", OffloadHandler(tt.h))
			mux.HandleFunc("/next", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "next") })
			_, addr := startCarrier(t, mux, nil)
			client := offloadClient(t)
			resp, err := client.Post("http://"+addr+"/h", "text/plain", strings.NewReader("echo"))
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || resp.ContentLength != tt.clen || string(body) != tt.body || (err != nil) != tt.readErr {
				t.Errorf("got %s, Content-Length %d, body %q, read error %v; want %d, %d, %q, error %v",
					resp.Status, resp.ContentLength, body, err, tt.status, tt.clen, tt.body, tt.readErr)
			}
			if k, v, ok := strings.Cut(tt.header, ": "); ok && resp.Header.Get(k) != v {
				t.Errorf("header %v, want %s", resp.Header, tt.header)
			}
			expectNext(t, client, addr)
		})
	}
}

// expectNext checks that the server at addr answers a next request.
func expectNext(t *testing.T, client *http.Client, addr string) {
	t.Helper()
	resp, err := client.Get("http://" + addr + "/next")
	if err != nil {
		t.Fatalf("next request: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "next" || err != nil {
		t.Errorf("next request: %s %q %v", resp.Status, b, err)
	}
}

// TestOffloadClientGone: a client that leaves mid-stream (closing, or
// resetting the connection) makes the handler's next flushes fail (from
// FlushError, or from the Write after a Flush): the handler goes on to its
// end, r.Context() is cancelled, and the server answers a next request.
func TestOffloadClientGone(t *testing.T) {
	tests := []struct {
		name  string
		reset bool
		// step writes and flushes one event, returning what failed.
		step func(w http.ResponseWriter) error
	}{
		{"FlushError, client closes", false, func(w http.ResponseWriter) error {
			io.WriteString(w, "data: x\n\n")
			return http.NewResponseController(w).Flush()
		}},
		{"Flush then Write, client resets", true, func(w http.ResponseWriter) error {
			if _, err := io.WriteString(w, "data: x\n\n"); err != nil {
				return err
			}
			w.(http.Flusher).Flush()
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed := make(chan error, 1)
			h := OffloadHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				deadline := time.Now().Add(offloadWait)
				var err error
				for err == nil && time.Now().Before(deadline) {
					err = tt.step(w)
					time.Sleep(5 * time.Millisecond)
				}
				if err != nil {
					select {
					case <-r.Context().Done():
					case <-time.After(offloadWait):
						err = fmt.Errorf("%w, but r.Context() was not cancelled", err)
					}
				}
				failed <- err
			}))
			mux := http.NewServeMux()
			mux.Handle("/events", h)
			mux.HandleFunc("/next", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "next") })
			_, addr := startCarrier(t, mux, nil)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(offloadWait))
			io.WriteString(c, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			if ev, err := readEvent(bufio.NewReader(resp.Body)); ev != "data: x\n" || err != nil {
				t.Fatalf("first event: %q, %v", ev, err)
			}
			if tt.reset {
				c.(*net.TCPConn).SetLinger(0)
			}
			c.Close()
			select {
			case err := <-failed:
				if err == nil {
					t.Fatalf("the handler's flushes kept succeeding for %v after the client left", offloadWait)
				}
				if strings.Contains(err.Error(), "not cancelled") {
					t.Error(err)
				}
			case <-time.After(2 * offloadWait):
				t.Fatal("the handler did not end after the client left")
			}
			expectNext(t, offloadClient(t), addr)
		})
	}
}

// TestOffloadCarrierStops: closing the group while an offloaded handler
// streams unwinds the connection's task; the handler's next flush fails
// instead of waiting for the task forever, and Close returns once it
// ended.
func TestOffloadCarrierStops(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	g, err := carrier.New(carrier.Options{Carriers: 1})
	if err != nil {
		t.Fatal(err)
	}
	flushed := make(chan struct{})
	failed := make(chan error, 1)
	h := OffloadHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: 1\n\n")
		err := http.NewResponseController(w).Flush()
		close(flushed)
		deadline := time.Now().Add(offloadWait)
		for err == nil && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
			io.WriteString(w, "data: more\n\n")
			err = http.NewResponseController(w).Flush()
		}
		failed <- err
	}))
	s := &Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	addr := listenOn(t, g, s)
	c := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case <-flushed:
	case <-time.After(offloadWait):
		t.Fatal("the handler did not flush")
	}
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	select {
	case err := <-failed:
		if err == nil {
			t.Fatalf("the handler's flushes kept succeeding for %v after the group closed", offloadWait)
		}
	case <-time.After(2 * offloadWait):
		t.Fatal("the handler's flush did not fail after the group closed")
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(2 * offloadWait):
		t.Fatal("Group.Close did not return after the offloaded handler ended")
	}
}

// TestOffloadNotSupported: what the held writer cannot do says so (Hijack
// it can: TestOffloadHijack).
func TestOffloadNotSupported(t *testing.T) {
	errs := make(chan []error, 1)
	h := OffloadHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		errs <- []error{rc.SetReadDeadline(time.Now()), rc.SetWriteDeadline(time.Now()), rc.EnableFullDuplex()}
	}))
	_, addr := startCarrier(t, h, nil)
	resp, err := offloadClient(t).Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for i, err := range <-errs {
		if !errors.Is(err, http.ErrNotSupported) {
			t.Errorf("call %d: %v, want http.ErrNotSupported", i, err)
		}
	}
}

// BenchmarkOffloadHandler measures an offloaded handler that does not
// flush (the common case: one Offload, the answer sent once) and one that
// flushes once, over a keep-alive connection.
func BenchmarkOffloadHandler(b *testing.B) {
	for _, flush := range []bool{false, true} {
		b.Run(fmt.Sprintf("flush=%v", flush), func(b *testing.B) {
			h := OffloadHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "hello")
				if flush {
					w.(http.Flusher).Flush()
				}
			}))
			_, addr := startCarrier(b, h, nil)
			c := dial(b, addr)
			br := bufio.NewReader(c)
			req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
