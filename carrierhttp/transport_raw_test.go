package carrierhttp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/leakcheck"
)

// rawServer answers every request on 127.0.0.1 with answers[path], raw
// bytes (their head alone to HEAD), keeping the connection open unless the answer's path is in
// closing; it counts its connections.
func rawServer(t *testing.T, answers map[string]string, closing map[string]bool) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					answer := answers[req.URL.Path]
					if req.Method == "HEAD" { // the head alone
						answer, _, _ = strings.Cut(answer, "\r\n\r\n")
						answer += "\r\n\r\n"
					}
					if _, err := io.WriteString(c, answer); err != nil || closing[req.URL.Path] {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return "http://" + ln.Addr().String(), &conns
}

// TestTransportResponsesDifferential sends requests to a server answering
// with raw bytes, through the Transport from a task and through net/http's
// Transport, and compares what the callers see.
func TestTransportResponsesDifferential(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	answers := map[string]string{
		"/length":     "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
		"/chunked":    "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nX-Sum: 5\r\n\r\n",
		"/interim":    "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/204":        "HTTP/1.1 204 No Content\r\nX-A: a\r\n\r\n",
		"/304":        "HTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\nContent-Length: 99\r\n\r\n",
		"/dup-length": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
		"/bad-length": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
		"/bad-head":   "HTTP/1.1 2OO OK\r\n\r\n",
		"/close":      "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 4\r\n\r\nbyeX",
		"/eof":        "HTTP/1.1 200 OK\r\n\r\nto the close",
		"/short":      "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"/huge":       "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 2<<20) + "\r\nContent-Length: 0\r\n\r\n",
	}
	closing := map[string]bool{"/close": true, "/eof": true, "/short": true}
	base, _ := rawServer(t, answers, closing)
	cases := []struct {
		method, path string
		wantErr      bool
	}{
		{"GET", "/length", false}, {"HEAD", "/length", false}, {"GET", "/chunked", false},
		{"GET", "/interim", false}, {"GET", "/204", false}, {"GET", "/304", false},
		{"GET", "/dup-length", false}, {"GET", "/bad-length", true}, {"GET", "/bad-head", true},
		{"GET", "/close", false}, {"GET", "/eof", false}, {"GET", "/short", true},
		{"GET", "/huge", true}, // over 1 MiB here; net/http's limit is 10 MiB
		{"GET", "/length", false},
	}
	type result struct {
		resp *http.Response
		body []byte
		err  error
	}
	do := func(client *http.Client, ctx context.Context, method, path string) result {
		req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
		if err != nil {
			return result{err: err}
		}
		resp, err := client.Do(req)
		if err != nil {
			return result{err: err}
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return result{resp, body, err}
	}
	var got []result
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	inTask(t, func(task *carrier.Task) {
		ctx := carrier.ContextWithTask(context.Background(), task)
		client := &http.Client{Transport: tr}
		for _, tc := range cases {
			got = append(got, do(client, ctx, tc.method, tc.path))
		}
	})
	ntr := &http.Transport{DisableCompression: true}
	defer ntr.CloseIdleConnections()
	nclient := &http.Client{Transport: ntr}
	for i, tc := range cases {
		g := got[i]
		if (g.err != nil) != tc.wantErr {
			t.Errorf("%s %s: error %v, want one: %v", tc.method, tc.path, g.err, tc.wantErr)
			continue
		}
		w := do(nclient, context.Background(), tc.method, tc.path)
		if tc.wantErr {
			if w.err == nil && tc.path != "/huge" {
				t.Errorf("%s %s: error %v, net/http none", tc.method, tc.path, g.err)
			}
			continue
		}
		if w.err != nil {
			t.Errorf("%s %s: net/http: %v", tc.method, tc.path, w.err)
			continue
		}
		w.resp.Header.Del("Date")
		if d := sameResponse(g.resp, w.resp, g.body, w.body); d != "" {
			t.Errorf("%s %s: %s", tc.method, tc.path, d)
		}
	}
}

// TestTransportReuse checks the keep-alive pool: sequential requests share
// one connection, a connection the server closed while idle is replaced
// (the request retried), an unread body and a request with Close set close
// their connection, and a read after Close fails.
func TestTransportReuse(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	answers := map[string]string{
		"/a":    "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na",
		"/big":  "HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n" + strings.Repeat("z", 10000),
		"/then": "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nt",
	}
	base, conns := rawServer(t, answers, map[string]bool{"/then": true})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	inTask(t, func(task *carrier.Task) {
		ctx := carrier.ContextWithTask(context.Background(), task)
		get := func(path string) (*http.Response, error) {
			req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
			return client.Do(req)
		}
		for range 3 {
			if got, err := getBody(get("/a")); err != nil || got != "a" {
				t.Errorf("/a: %q %v", got, err)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("%d connections for 3 sequential requests, want 1", n)
		}
		// The server closes after /then: the next request finds the
		// pooled connection dead and is retried on a new one.
		if got, err := getBody(get("/then")); err != nil || got != "t" {
			t.Errorf("/then: %q %v", got, err)
		}
		task.Sleep(50 * time.Millisecond) // let the close arrive
		if got, err := getBody(get("/a")); err != nil || got != "a" {
			t.Errorf("/a after the server's close: %q %v", got, err)
		}
		// A body closed before its end closes its connection.
		resp, err := get("/big")
		if err != nil {
			t.Fatal(err)
		}
		p := make([]byte, 10)
		resp.Body.Read(p)
		resp.Body.Close()
		_, err = resp.Body.Read(p)
		// net/http's Transport says the same.
		nt := &http.Transport{}
		defer nt.CloseIdleConnections()
		nresp, nerr := (&http.Client{Transport: nt}).Get(base + "/big")
		if nerr != nil {
			t.Fatal(nerr)
		}
		nresp.Body.Read(p)
		nresp.Body.Close()
		if _, nerr = nresp.Body.Read(p); err == nil || nerr == nil || err.Error() != nerr.Error() {
			t.Errorf("read after close: %v, net/http's Transport: %v", err, nerr)
		}
		before := conns.Load()
		if got, err := getBody(get("/a")); err != nil || got != "a" {
			t.Errorf("/a after an unread body: %q %v", got, err)
		}
		if n := conns.Load(); n != before+1 {
			t.Errorf("%d new connections after an unread body, want 1", n-before)
		}
		// A request with Close set (written by Request.Write) closes its
		// connection after the answer.
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/a", nil)
		req.Close = true
		if got, err := getBody(client.Do(req)); err != nil || got != "a" {
			t.Errorf("/a with Close: %q %v", got, err)
		}
		before = conns.Load()
		if got, err := getBody(get("/a")); err != nil || got != "a" || conns.Load() != before+1 {
			t.Errorf("/a after a request with Close: %q %v, %d new connections, want 1", got, err, conns.Load()-before)
		}
		// A large body read whole (the direct read path).
		if got, err := getBody(get("/big")); err != nil || got != strings.Repeat("z", 10000) {
			t.Errorf("/big: %d bytes, %v", len(got), err)
		}
	})
}

func getBody(resp *http.Response, err error) (string, error) {
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestTransportRequestChecks checks that requests net/http's Transport
// refuses are refused before anything is sent, with their bodies closed.
func TestTransportRequestChecks(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	base, conns := rawServer(t, nil, nil)
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	inTask(t, func(task *carrier.Task) {
		ctx := carrier.ContextWithTask(context.Background(), task)
		for _, edit := range []func(*http.Request){
			func(r *http.Request) { r.Header.Set("X-A", "v\r\nInjected: yes") },
			func(r *http.Request) { r.Header["Bad Key"] = []string{"v"} },
			func(r *http.Request) { r.Method = "G(T" },
		} {
			body := &closeRecorder{Reader: strings.NewReader("b")}
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/", body)
			edit(req)
			if _, err := tr.RoundTrip(req); err == nil {
				t.Errorf("%v: no error", req.Header)
			}
			if !body.closed {
				t.Error("request body not closed")
			}
		}
	})
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections for refused requests", n)
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error {
	c.closed = true
	return nil
}

// TestTransportCancelBody checks that cancelling the request's context or
// passing its deadline ends a read of a body the server stalls, with the
// context's error, and that the connection is not pooled after it.
func TestTransportCancelBody(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	base, _ := rawServer(t, map[string]string{
		"/stall": "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", // 7 bytes never come
	}, nil)
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	inTask(t, func(task *carrier.Task) {
		for _, want := range []error{context.Canceled, context.DeadlineExceeded} {
			ctx, cancel := context.WithTimeout(carrier.ContextWithTask(context.Background(), task), 100*time.Millisecond)
			if want == context.Canceled {
				ctx, cancel = context.WithCancel(carrier.ContextWithTask(context.Background(), task))
				time.AfterFunc(100*time.Millisecond, cancel)
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/stall", nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			if string(b) != "abc" || !errors.Is(err, want) || time.Since(start) > 3*time.Second {
				t.Errorf("%v: read %q, %v after %v", want, b, err, time.Since(start))
			}
		}
		tr.mu.Lock()
		pooled := 0
		for _, l := range tr.idle {
			pooled += len(l)
		}
		tr.mu.Unlock()
		if pooled != 0 {
			t.Errorf("%d connections pooled after interrupted bodies", pooled)
		}
	})
}

// TestTransportRetry checks which requests the Transport sends again on a
// new connection when a reused one fails after the request went out (the
// server read it and closed without an answer), as net/http's Transport
// decides: GET, and a POST with an Idempotency-Key, once; a POST without
// one not at all (the server may have acted on it). A pooled connection
// the server closed while it was idle is not used at all.
func TestTransportRetry(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	answers := map[string]string{
		"/a":    "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na",
		"/then": "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nt",
	}
	// "/drop": read, then close without an answer; "/then": answer, then close.
	base, conns := rawServer(t, answers, map[string]bool{"/drop": true, "/then": true})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	cases := []struct {
		name    string
		method  string
		key     bool // an Idempotency-Key field
		retried bool
	}{
		{"GET", "GET", false, true},
		{"POST", "POST", false, false},
		{"POST with Idempotency-Key", "POST", true, true},
	}
	inTask(t, func(task *carrier.Task) {
		ctx := carrier.ContextWithTask(context.Background(), task)
		for _, tc := range cases {
			warm, _ := http.NewRequestWithContext(ctx, "GET", base+"/a", nil)
			if got, err := getBody(client.Do(warm)); err != nil || got != "a" {
				t.Fatalf("%s: warming the pool: %q %v", tc.name, got, err)
			}
			before := conns.Load()
			req, _ := http.NewRequestWithContext(ctx, tc.method, base+"/drop", http.NoBody)
			if tc.key {
				req.Header.Set("Idempotency-Key", "k1")
			}
			if _, err := client.Do(req); err == nil {
				t.Errorf("%s: no error from a server that answers nothing", tc.name)
			}
			// The pooled connection carried the first try; a retry dials one more.
			if retried := conns.Load() > before; retried != tc.retried {
				t.Errorf("%s: retried on a new connection = %v, want %v", tc.name, retried, tc.retried)
			}
		}
		// A connection the server closed while it was idle is not used:
		// a POST then goes out on a new one, as with net/http's Transport.
		then, _ := http.NewRequestWithContext(ctx, "GET", base+"/then", nil)
		if got, err := getBody(client.Do(then)); err != nil || got != "t" {
			t.Fatalf("/then: %q %v", got, err)
		}
		task.Sleep(50 * time.Millisecond) // the close arrives while the conn is pooled
		post, _ := http.NewRequestWithContext(ctx, "POST", base+"/a", http.NoBody)
		if got, err := getBody(client.Do(post)); err != nil || got != "a" {
			t.Errorf("POST after the server closed the pooled connection: %q %v", got, err)
		}
	})
}
