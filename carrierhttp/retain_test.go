package carrierhttp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestRequestKeptAfterReturn: a handler's *http.Request stays its own
// after the handler returns, as net/http's does: http.TimeoutHandler
// answers 503 and returns while the handler it wraps goes on, on its
// goroutine, reading the request, and the connection's next requests must
// not change what it reads (with a reused Request it read the next
// request's fields, racing with their parse: under -race a data race, and
// without it Go's "concurrent map read and map write", which ends the
// process).
func TestRequestKeptAfterReturn(t *testing.T) {
	seen := make(chan string, 1)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Id") != "1" {
			return
		}
		time.Sleep(100 * time.Millisecond) // past the timeout: the next requests are parsed meanwhile
		seen <- fmt.Sprintf("%s %s %s", r.Header.Get("X-Id"), r.URL.Path, r.Method)
	})
	h := http.TimeoutHandler(inner, 20*time.Millisecond, "timed out")
	c, br := keepAlive(t, h)
	for i, req := range []string{
		"GET /first HTTP/1.1\r\nHost: x\r\nX-Id: 1\r\n\r\n",
		"POST /second HTTP/1.1\r\nHost: x\r\nX-Id: 2\r\nContent-Length: 0\r\n\r\n",
		"PUT /third HTTP/1.1\r\nHost: x\r\nX-Id: 3\r\nContent-Length: 0\r\n\r\n",
	} {
		io.WriteString(c, req)
		discardAnswer(t, br, i)
	}
	if got := receive(t, seen, "the first request's handler"); got != "1 /first GET" {
		t.Errorf("after its timeout the first request's handler read %q, want \"1 /first GET\"", got)
	}
}

// keepAlive serves h on carriers and returns a keep-alive connection to
// it, with a reader of its answers.
func keepAlive(t *testing.T, h http.Handler) (net.Conn, *bufio.Reader) {
	t.Helper()
	_, addr := startCarrier(t, h, nil)
	c := dial(t, addr)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c, bufio.NewReader(c)
}

// discardAnswer reads the answer to request i (from 0) from br and
// discards its body.
func discardAnswer(t *testing.T, br *bufio.Reader, i int) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("request %d: %v", i+1, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// receive returns what ch gives within 3 s, failing the test if it gives
// nothing: what says who was to send it.
func receive(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(3 * time.Second):
		t.Fatalf("%s did not finish", what)
		return ""
	}
}

// TestBodyKeptAfterReturn: a goroutine that reads a request's body after
// its handler returned gets http.ErrBodyReadAfterClose, as from
// net/http's, not the connection's next request (with ReuseRequests it
// reads the next request's, as the Server's doc warns).
func TestBodyKeptAfterReturn(t *testing.T) {
	got := make(chan string, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/keep" {
			io.Copy(io.Discard, r.Body)
			return
		}
		body := r.Body
		go func() {
			time.Sleep(100 * time.Millisecond) // the next request is read meanwhile
			b, err := io.ReadAll(body)
			got <- fmt.Sprintf("%q %v", b, err)
		}()
	})
	c, br := keepAlive(t, h)
	for i, req := range []string{
		"POST /keep HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nfirst",
		"POST /next HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
	} {
		io.WriteString(c, req)
		if i == 1 {
			time.Sleep(150 * time.Millisecond) // the kept body is read while this one waits
			io.WriteString(c, "6\r\nsecond\r\n0\r\n\r\n")
		}
		discardAnswer(t, br, i)
	}
	s := receive(t, got, "the goroutine's read")
	if want := fmt.Sprintf("%q %v", "", http.ErrBodyReadAfterClose); s != want {
		t.Errorf("the kept body read %s, want %s", s, want)
	}
}
