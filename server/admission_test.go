package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/http1"
	"github.com/spindle-lab/spindle/mock"
)

// TestFraming sends, from a raw socket, requests whose framing or target
// the modes used to treat differently, and checks the one answer each now
// gets in every mode (docs/server.md, "Framing").
func TestFraming(t *testing.T) {
	cases := []struct {
		name, raw string
		status    int
		closes    bool // the server closes after answering
		body      string
	}{
		{"absolute form", "GET http://x/health HTTP/1.1\r\nHost: x\r\n\r\n", 200, false, "OK"},
		{"absolute form with query", "GET http://x:80/health?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", 200, false, "OK"},
		{"options star", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 200, false, ""},
		{"get star", "GET * HTTP/1.1\r\nHost: x\r\n\r\n", 404, true, "Not Found"},
		{"connect without host", "CONNECT example.com:443 HTTP/1.1\r\n\r\n", 405, true, "Method Not Allowed"},
		{"connect", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 405, true, "Method Not Allowed"},
		{"h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, true, ""},
		{"host with space", "GET /health HTTP/1.1\r\nHost: a b\r\n\r\n", 400, true, ""},
		{"host with slash", "GET /health HTTP/1.1\r\nHost: a/b\r\n\r\n", 400, true, ""},
		{"host with at", "GET /health HTTP/1.1\r\nHost: a@b\r\n\r\n", 400, true, ""},
		{"host with obs-text", "GET /health HTTP/1.1\r\nHost: \xff\r\n\r\n", 400, true, ""},
		// RFC 9112 §6.3: answered, then closed: the pipelined GET is not.
		{"length and chunked", "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
			fmt.Sprintf(get, "/health"), 200, true, "OK"},
		// RFC 9112 §6.1: the body is not read as the next request.
		{"http10 chunked", "POST /health HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"1e\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n\r\n0\r\n\r\n", 400, true, ""},
	}
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{})
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c := e.dialFor(t)
				e.send(c, tc.raw)
				resp, body := c.read(tc.status)
				if tc.body != "" && body != tc.body {
					t.Fatalf("body %q, want %q", body, tc.body)
				}
				if got := resp.Header.Get("Allow"); (tc.status == 405) != (got == allowMethods) {
					t.Fatalf("Allow %q with a %d (RFC 9110 §15.5.6: a 405 lists the allowed methods)", got, tc.status)
				}
				if resp.Close != tc.closes {
					t.Fatalf("Connection: close %v, want %v", resp.Close, tc.closes)
				}
				if tc.closes {
					c.closed(2 * time.Second)
					return
				}
				e.send(c, fmt.Sprintf(get, "/health")) // still serving
				c.read(200)
			})
		}
	})
}

// TestFramingAfterObsFold: a request with an obs-folded field (net/http
// accepts it, http1 refuses it with 400) is answered and its connection
// closed in every mode, so that a request behind it with faulty framing
// (HTTP/1.0 with Transfer-Encoding, whose body smuggles a GET) is never
// served: the nethttp mode's watcher cannot follow the stream past a head
// its parser refuses.
func TestFramingAfterObsFold(t *testing.T) {
	raw := "GET /health HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n" +
		"POST /health HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf(get, "/fruits")
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{})
		c := e.dialFor(t)
		e.send(c, raw)
		status := 400 // http1's answer to obs-fold
		if mode == ModeNetHTTP {
			status = 200 // net/http's: it unfolds the field
		}
		resp, _ := c.read(status)
		if !resp.Close {
			t.Fatal("the connection stays open after a request the server cannot follow")
		}
		c.closed(2 * time.Second)
	})
}

// TestTimeoutRule checks the one timeout rule of every mode from raw
// sockets: a new connection that sends nothing, a body trickled a byte at a
// time, and a client that pipelines requests and never reads are closed.
func TestTimeoutRule(t *testing.T) {
	const short = 300 * time.Millisecond
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{HTTP: http1.Options{
			ReadHeaderTimeout: short, ReadTimeout: 2 * short, WriteTimeout: short,
		}, BackendTimeout: short})
		for _, tc := range []struct {
			name, send string
			netHTTP400 bool // net/http takes the cut line for a whole one, which is malformed
		}{
			{"silent new connection", "", false},
			{"late head cut before a colon", "GET /health HTTP/1.1\r\nHo", true},
			{"late request line", "GET /health HTT", true},
			{"late head cut after a colon", "GET /health HTTP/1.1\r\nHost: x\r\nX-S: ", false},
			{"late head cut at a line's end", "GET /health HTTP/1.1\r\nHost: x\r\n", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := e.dialFor(t)
				e.send(c, tc.send)
				start := time.Now()
				if mode == ModeNetHTTP && tc.netHTTP400 {
					// net/http's own answer to a head cut inside a line
					// that does not parse, which no handler sees
					// (docs/server.md, "Timeouts").
					c.read(400)
				}
				c.silentlyClosed(3 * time.Second)
				if d := time.Since(start); d < short/2 {
					t.Fatalf("closed after %v, before the timeout", d)
				}
			})
		}
		t.Run("trickled body", func(t *testing.T) {
			c := e.dialFor(t)
			e.send(c, "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
			done := make(chan error, 1)
			go func() { // a byte every 50ms: each read is in time, the request is not
				for {
					if _, err := c.Write([]byte("x")); err != nil {
						done <- err
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
			c.silentlyClosed(4 * time.Second)
			c.Close()
			<-done
		})
		t.Run("never reads", func(t *testing.T) {
			waitOpen(t, e, 0)
			c := e.dialFor(t)
			c.Conn.(*net.TCPConn).SetReadBuffer(4 << 10)
			waitOpen(t, e, 1)
			batch := []byte(strings.Repeat(fmt.Sprintf(get, "/health"), 1000))
			wrote := make(chan struct{})
			go func() {
				defer close(wrote)
				for {
					if _, err := c.Write(batch); err != nil {
						return
					}
				}
			}()
			// The server must fill its socket send buffer (up to 4 MiB
			// by default) before a write waits: on a busy machine
			// nethttp takes seconds to answer that many requests. The
			// server's side is what counts: once it closes, the kernel
			// may keep the client's writes waiting on a zero window
			// (the closed socket lingers with unsent answers).
			waitOpenWithin(t, e, 0, 20*time.Second)
			c.SetWriteDeadline(time.Now())
			<-wrote
		})
	})
}

// TestRefusalNotReset: a 413 or 431 refused while the client still sends
// is followed by a clean end of stream, not a reset that could destroy the
// answer before the client reads it.
func TestRefusalNotReset(t *testing.T) {
	cases := []struct {
		name, head string
		status     int
	}{
		{"413", "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 20000000\r\n\r\n", 413},
		{"431", "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 16<<10), 431},
	}
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{})
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c := e.dialFor(t)
				// The head and 32 KiB more in one write, which loopback
				// delivers at once: the server refuses with input still
				// unread, as when curl goes on uploading. (No writer
				// goes on: it could take the reset's error and leave
				// the reader a clean end.)
				e.send(c, tc.head+strings.Repeat("a", 32<<10))
				c.read(tc.status)
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.Copy(io.Discard, c.br); err != nil {
					t.Fatalf("after the %d: %v, want a clean end of stream", tc.status, err)
				}
			})
		}
	})
}

// TestMaxConns: connections beyond MaxConns are accepted and closed at
// once, counted in /metrics, and the ones admitted are served; once one
// closes, a new one is admitted.
func TestMaxConns(t *testing.T) {
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{MaxConns: 2, AdminAddr: "127.0.0.1:0"})
		// setup's own probe connection may still be counted open: wait.
		waitOpen(t, e, 0)
		var kept []*client
		for range 2 {
			c := e.dial()
			defer c.Close()
			e.send(c, fmt.Sprintf(get, "/health"))
			c.read(200)
			kept = append(kept, c)
		}
		over := e.dial()
		defer over.Close()
		over.t = t
		e.send(over, fmt.Sprintf(get, "/health"))
		over.SetReadDeadline(time.Now().Add(2 * time.Second))
		if n, err := io.Copy(io.Discard, over.br); n != 0 || (err != nil && !isReset(err)) {
			t.Fatalf("third connection: read %d bytes, %v; want it closed at once", n, err)
		}
		if m := adminGet(t, e, "/metrics"); !strings.Contains(m, "spindle_server_rejected_connections_total 1") {
			t.Fatalf("/metrics does not count the rejected connection:\n%s", grepLines(m, "connections"))
		}
		for _, c := range kept { // still served
			e.send(c, fmt.Sprintf(get, "/health"))
			c.read(200)
		}
		kept[0].Close()
		waitOpen(t, e, 1)
		c := e.dial()
		defer c.Close()
		e.send(c, fmt.Sprintf(get, "/health"))
		c.read(200)
	})
}

// silentlyClosed checks that the server closes the connection within d
// without sending anything.
func (c *client) silentlyClosed(d time.Duration) {
	c.t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	if n, err := io.Copy(io.Discard, c.br); n != 0 || (err != nil && !isReset(err)) {
		c.t.Fatalf("read %d bytes, %v within %v; want the connection closed without an answer", n, err, d)
	}
}

// waitOpen waits until the server counts n open client connections.
func waitOpen(t *testing.T, e *env, n int64) {
	t.Helper()
	waitOpenWithin(t, e, n, 3*time.Second)
}

// waitOpenWithin waits up to d until the server counts n open client
// connections.
func waitOpenWithin(t *testing.T, e *env, n int64, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); e.srv.m.openConns.Load() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", e.srv.m.openConns.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// adminGet fetches path from the admin server and checks for a 200.
func adminGet(t *testing.T, e *env, path string) string {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://" + e.srv.AdminAddr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %q", path, resp.StatusCode, b)
	}
	return string(b)
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestBodiesBounded: 64 connections that each send most of a 1 MiB body
// and stop add far less than their bodies to the server's heap (before
// bodies were dropped as they arrive, the carrier modes kept each whole).
func TestBodiesBounded(t *testing.T) {
	const (
		conns = 64
		body  = http1.DefaultMaxBodyBytes
		sent  = body - 1024 // stop short of the end: the request stays open
		// limit is what the heap may grow by: 64 KiB a connection, a
		// sixteenth of what keeping the bodies takes.
		limit = conns * 64 << 10
	)
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{})
		base := heapInuse()
		payload := make([]byte, sent)
		var wg sync.WaitGroup
		cs := make([]*client, conns)
		for i := range cs {
			cs[i] = e.dial()
			defer cs[i].Close()
			wg.Add(1)
			go func(c *client) {
				defer wg.Done()
				fmt.Fprintf(c, "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", body)
				c.Write(payload)
			}(cs[i])
		}
		wg.Wait()
		peak := uint64(0)
		for range 10 { // the server reads what the kernel still holds
			time.Sleep(50 * time.Millisecond)
			peak = max(peak, heapInuse())
		}
		if peak > base && peak-base > limit {
			t.Fatalf("heap grew by %d KiB for %d connections holding partial bodies, want at most %d KiB",
				(peak-base)>>10, conns, limit>>10)
		}
	})
}

// heapInuse returns the bytes of in-use heap spans after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestAdminProfileConflict: a second CPU profile asked for while one is
// taken gets 409 and a body that says why, not net/http/pprof's 500; the
// first completes.
func TestAdminProfileConflict(t *testing.T) {
	e := setup(t, ModeCarrier, mock.Options{}, false, Options{AdminAddr: "127.0.0.1:0"})
	url := "http://" + e.srv.AdminAddr().String() + "/debug/pprof/profile?seconds=1"
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	first := make(chan int, 1)
	go func() {
		resp, err := hc.Get(url)
		if err != nil {
			first <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	for !cpuProfiling.Load() {
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "already") {
		t.Fatalf("second profile: %d %q, want 409 saying one is already taken", resp.StatusCode, b)
	}
	if code := <-first; code != 200 {
		t.Fatalf("first profile: status %d", code)
	}
}
