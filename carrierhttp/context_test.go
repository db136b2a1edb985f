package carrierhttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/leakcheck"
	"github.com/spindle-lab/spindle/internal/syncbuf"
)

// TestRequestContextEndsWithHandler: each request of a keep-alive
// connection has its own context, live while its handler runs and
// cancelled once the handler has returned, as net/http's Request.Context
// promises (a goroutine or context.AfterFunc waiting on it ends then).
func TestRequestContextEndsWithHandler(t *testing.T) {
	ctxs := make(chan context.Context, 2)
	during := make(chan error, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		during <- r.Context().Err()
		ctxs <- r.Context()
		io.WriteString(w, "ok")
	})
	_, addr := startCarrier(t, h, nil)
	c := dial(t, addr)
	br := bufio.NewReader(c)
	var seen []context.Context
	for i := range 2 {
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err := <-during; err != nil {
			t.Fatalf("request %d: context during the handler: %v, want live", i, err)
		}
		ctx := <-ctxs
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("request %d: context once answered: %v, want canceled", i, err)
		}
		seen = append(seen, ctx)
	}
	if seen[0] == seen[1] {
		t.Fatal("two requests shared one context")
	}
}

// TestContextCancelledWhenClientGoesWhileWaiting: a client that closes or
// half-closes while its handler waits (on a channel, the Go way: the
// carrier hands the run off) cancels the request's context at once, as
// net/http's background read does, request body read or none; a client
// that half-closes after a pipelined request does not (its answers are
// still due). On both carriers' ways of idling, with every poller (the
// io_uring poller's conns watch with a poll of their own).
func TestContextCancelledWhenClientGoesWhileWaiting(t *testing.T) {
	tests := []struct {
		name       string
		raw        string
		halfClose  bool
		wantCancel bool
	}{
		{"GET, close", "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n", false, true},
		{"GET, half-close", "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n", true, true},
		{"POST with a body, close", "POST /wait HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", false, true},
		{"pipelined, half-close", "GET /wait HTTP/1.1\r\nHost: x\r\n\r\nGET /other HTTP/1.1\r\nHost: x\r\n\r\n", true, false},
	}
	for _, poller := range carrier.Pollers {
		for _, park := range []bool{false, true} {
			for _, tc := range tests {
				t.Run(poller+"/"+tc.name+map[bool]string{false: "", true: ", parking"}[park], func(t *testing.T) {
					skipWithoutHandoff(t, poller)
					clientGoesWhileWaiting(t, carrier.Options{Carriers: 1, ParkIdle: park, Poller: poller}, tc.raw, tc.halfClose, tc.wantCancel)
				})
			}
		}
	}
}

// clientGoesWhileWaiting is a case of
// TestContextCancelledWhenClientGoesWhileWaiting on carriers of options o:
// the client sends raw, then closes (or half-closes) while the handler
// waits.
func clientGoesWhileWaiting(t *testing.T, o carrier.Options, raw string, halfClose, wantCancel bool) {
	const wait = 700 * time.Millisecond
	result := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/wait" {
			return
		}
		io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			result <- r.Context().Err()
		case <-time.After(wait):
			result <- nil
		}
	})
	_, addr := serveOn(t, o, h, nil)
	c := dial(t, addr)
	io.WriteString(c, raw)
	time.Sleep(50 * time.Millisecond) // the handler waits
	start := time.Now()
	if halfClose {
		c.(*net.TCPConn).CloseWrite()
	} else {
		c.Close()
	}
	select {
	case err := <-result:
		took := time.Since(start)
		switch {
		case wantCancel && !errors.Is(err, context.Canceled):
			t.Fatalf("the handler's wait ended after %v with %v, want the context canceled", took, err)
		case wantCancel && took >= wait/2:
			t.Fatalf("the context was canceled %v after the client went, not at once", took)
		case !wantCancel && err != nil:
			t.Fatalf("context ended (%v) after %v although the client's next request waits", err, took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not return")
	}
}

// TestAbortHandler: a handler that panics with http.ErrAbortHandler gets
// no answer sent for it and no log line, as in net/http: the client sees
// the connection end (after the answers to its earlier pipelined
// requests); any other panic is answered 500 and logged with the stack of
// the handler that panicked.
func TestAbortHandler(t *testing.T) {
	var logs syncbuf.Buffer
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fine") })
	mux.HandleFunc("/abort", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Partial", "1")
		io.WriteString(w, "half an answer")
		panic(http.ErrAbortHandler)
	})
	mux.HandleFunc("/panic", panickyHandler)
	_, _, addr := startOne(t, mux, &logs)

	for _, tc := range []struct{ path, want string }{
		{"/abort", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nfine"},
		{"/panic", "HTTP/1.1 500 Internal Server Error"},
	} {
		c := dial(t, addr)
		io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\nGET "+tc.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		got := string(b)
		if i := strings.Index(got, "Date: "); i >= 0 { // drop the Date line
			got = got[:i] + got[i+strings.Index(got[i:], "\r\n")+2:]
		}
		if tc.path == "/abort" && got != tc.want || !strings.Contains(got, tc.want) {
			t.Errorf("%s: the client read %q, want %q", tc.path, got, tc.want)
		}
	}
	log := logs.String()
	if strings.Contains(log, "abort") {
		t.Errorf("the abort was logged: %s", log)
	}
	if !strings.Contains(log, "panickyHandler") {
		t.Errorf("the panic's log has no frame of the handler that panicked:\n%s", log)
	}
}

func panickyHandler(http.ResponseWriter, *http.Request) { panic("boom") }

// TestCloseNotify: the ResponseWriter is an http.CloseNotifier (gin's
// Context.Stream asserts it): its channel, the same at every call, receives
// when the client closes while the handler waits, with every poller.
func TestCloseNotify(t *testing.T) {
	for _, poller := range carrier.Pollers {
		t.Run(poller, func(t *testing.T) {
			skipWithoutHandoff(t, poller)
			closeNotify(t, poller)
		})
	}
}

// skipWithoutHandoff skips a test whose handler waits the Go way for its
// context on a poller whose carriers do not hand off (io_uring_poll,
// docs/carrier.md): the handler holds its carrier, which cannot see the
// client go until the handler returns.
func skipWithoutHandoff(t *testing.T, poller string) {
	if poller == carrier.PollerURingPoll {
		t.Skip("io_uring_poll carriers do not hand off: a handler waiting the Go way holds its carrier")
	}
}

// closeNotify is TestCloseNotify on carriers with poller.
func closeNotify(t *testing.T, poller string) {
	result := make(chan string, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn, ok := w.(http.CloseNotifier)
		if !ok {
			result <- "the ResponseWriter is no http.CloseNotifier"
			return
		}
		ch := cn.CloseNotify()
		if cn.CloseNotify() != ch {
			result <- "a second CloseNotify gave another channel"
			return
		}
		select {
		case <-ch:
			result <- "notified"
		case <-time.After(2 * time.Second):
			result <- "not notified within 2s of the client's close"
		}
	})
	leakcheck.Register(t, 5*time.Second)
	_, addr := serveOn(t, carrier.Options{Carriers: 2, Poller: poller}, h, nil)
	c := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(50 * time.Millisecond)
	c.Close()
	if got := <-result; got != "notified" {
		t.Fatal(got)
	}
}

// TestHandedOffHandlerAfterGroupClose: a handler that blocks the Go way (its
// carrier handed it off) and writes after its group was closed gets a
// closed connection's error from the write, as under net/http, and no
// panic that a framework's recover middleware would catch and log.
func TestHandedOffHandlerAfterGroupClose(t *testing.T) {
	entered := make(chan struct{}, 1)
	result := make(chan string, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				result <- fmt.Sprint("the handler's write panicked: ", p, string(debug.Stack()))
			}
		}()
		entered <- struct{}{}
		time.Sleep(300 * time.Millisecond) // blocks the Go way: handed off
		io.WriteString(w, strings.Repeat("x", 128<<10))
		if err := http.NewResponseController(w).Flush(); !errors.Is(err, net.ErrClosed) {
			result <- fmt.Sprintf("flush after the group closed: %v, want net.ErrClosed", err)
			return
		}
		result <- ""
	})
	g := newCarriers(t, carrier.Options{Carriers: 1})
	s := &Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	addr := listenOn(t, g, s)
	c := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	time.Sleep(50 * time.Millisecond) // past the hand-off threshold
	g.Close()
	select {
	case msg := <-result:
		if msg != "" {
			t.Fatal(msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not end")
	}
}

// TestSuperfluousWriteHeaderNamesCaller: the log line of a second
// WriteHeader names the handler that made it, as net/http's does.
func TestSuperfluousWriteHeaderNamesCaller(t *testing.T) {
	var logs syncbuf.Buffer
	_, _, addr := startOne(t, http.HandlerFunc(twiceWriteHeader), &logs)
	got := exchange(t, addr, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", nil, 100*time.Millisecond)
	if len(got.Responses) != 1 || !strings.Contains(got.Responses[0], " 201 ") {
		t.Fatalf("answer: %s", got)
	}
	if l := logs.String(); !strings.Contains(l, "superfluous response.WriteHeader call from github.com/spindle-lab/spindle/carrierhttp.twiceWriteHeader (context_test.go:") {
		t.Fatalf("log %q does not name the caller", l)
	}
}

func twiceWriteHeader(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusCreated)
	w.WriteHeader(http.StatusAccepted)
}

// TestHijackedClientGone: once a handler has hijacked the connection, the
// client's close is the hijacker's to see (its read ends), not the request
// context's, as under net/http: the context stays live until the handler
// returns.
func TestHijackedClientGone(t *testing.T) {
	result := make(chan string, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			result <- "Hijack: " + err.Error()
			return
		}
		defer conn.Close()
		io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n")
		select {
		case <-r.Context().Done():
			result <- "the request's context ended when the hijacked connection's client closed"
		case <-time.After(300 * time.Millisecond):
			result <- ""
		}
	})
	_, addr := startCarrier(t, h, nil)
	c := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if msg := <-result; msg != "" {
		t.Fatal(msg)
	}
}
