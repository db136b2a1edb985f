package carrierhttp

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/internal/leakcheck"
	"github.com/spindle-lab/spindle/mock"
)

// startCarrier serves h with a carrierhttp.Server on a fresh group of
// carriers; cleanup closes both and checks for leaks.
func startCarrier(t testing.TB, h http.Handler, configure func(*Server)) (*Server, string) {
	t.Helper()
	if _, fuzz := t.(*testing.F); !fuzz { // the fuzzing engine starts goroutines of its own
		leakcheck.Register(t, 5*time.Second)
	}
	return serveOn(t, carrier.Options{Carriers: 2}, h, configure)
}

// serveOn serves h with a carrierhttp.Server, configure applied to it, on a
// fresh group of options o, until the test ends; it returns the server and
// its address.
func serveOn(t testing.TB, o carrier.Options, h http.Handler, configure func(*Server)) (*Server, string) {
	t.Helper()
	g := newCarriers(t, o)
	s := &Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	if configure != nil {
		configure(s)
	}
	return s, listenOn(t, g, s)
}

// newCarriers starts a group of options o, skipping the test where o
// cannot run here (no io_uring, a wait strategy this CPU lacks).
func newCarriers(t testing.TB, o carrier.Options) *carrier.Group {
	t.Helper()
	g, err := carrier.New(o)
	if errors.Is(err, wait.ErrNotSupported) {
		t.Skipf("%+v: %v", o, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// listenOn serves s on g at a loopback port until the test ends (then s,
// the closers given and g are closed, in that order) and returns the
// address; it closes g and fails the test when s cannot listen.
func listenOn(t testing.TB, g *carrier.Group, s *Server, closers ...func()) string {
	t.Helper()
	l, err := s.Listen(g, "127.0.0.1:0", carrier.ListenOptions{})
	if err != nil {
		g.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		for _, c := range closers {
			c()
		}
		g.Close()
	})
	return l.Addr().String()
}

// dial connects to addr; the connection is closed when the test ends.
func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startMock serves spindle's mock on loopback until the test ends and
// returns the URL of its /fruits answer (mock.Body).
func startMock(t testing.TB) string {
	t.Helper()
	m, err := mock.Start(context.Background(), mock.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return "http://" + m.Addr().String() + "/fruits"
}

// netHTTPReadTimeout is startNetHTTP's server's ReadTimeout (0: none).
var netHTTPReadTimeout time.Duration

// startNetHTTP serves h with net/http's server.
func startNetHTTP(t testing.TB, h http.Handler) string {
	t.Helper()
	return startNetHTTPWith(t, h, nil)
}

// startNetHTTPWith is startNetHTTP with configure run on the server first.
func startNetHTTPWith(t testing.TB, h http.Handler, configure func(*http.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0), ReadTimeout: netHTTPReadTimeout}
	if configure != nil {
		configure(hs)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// firstWait is how long exchange waits for the first answer: long, since
// it may be slow on a busy machine (fuzzers shorten it: an incomplete
// request gets no answer, and waiting for it is most of their time).
var firstWait = 5 * time.Second

// outcome is what a client saw for a raw exchange: each response, then
// whether the server closed the connection.
type outcome struct {
	Responses []string
	Closed    bool
}

func (o outcome) String() string {
	return fmt.Sprintf("%s\nclosed=%v", strings.Join(o.Responses, "\n---\n"), o.Closed)
}

// exchange sends raw to addr and reads responses (to requests with the
// given methods, in order, for HEAD's sake) until the server closes or
// stays quiet for quiet after an answer.
func exchange(t testing.TB, addr, raw string, methods []string, quiet time.Duration) outcome {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err) // not Fatal: exchanges run on goroutines
		return outcome{}
	}
	defer c.Close()
	go c.Write([]byte(raw)) // may block on a server that stops reading
	br := bufio.NewReader(c)
	var o outcome
	interim := false // the last answer was a 1xx: its final answer is due
	for i := 0; ; i++ {
		method := "GET"
		if i < len(methods) {
			method = methods[i]
		}
		wait := quiet
		if i == 0 || interim {
			wait = firstWait
		}
		c.SetReadDeadline(time.Now().Add(wait))
		if _, err := br.Peek(1); err != nil {
			o.Closed = !errors.Is(err, os.ErrDeadlineExceeded)
			return o
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			o.Responses = append(o.Responses, "unreadable: "+err.Error())
			o.Closed = true
			return o
		}
		o.Responses = append(o.Responses, describe(resp))
		interim = resp.StatusCode < 200
		if resp.StatusCode >= 200 && resp.Close {
			// The server said it closes: check that it does.
			c.SetReadDeadline(time.Now().Add(quiet + time.Second))
			_, err := br.Peek(1)
			o.Closed = err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
			return o
		}
	}
}

// describe renders the parts of a response that must agree between
// servers: status, the framing and content headers, body and trailers
// (not Date, not header order).
func describe(resp *http.Response) string {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d close=%v te=%v cl=%d\n", resp.Proto, resp.StatusCode, resp.Close, resp.TransferEncoding, resp.ContentLength)
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		if k != "Date" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %q\n", k, resp.Header[k])
	}
	if len(body) > 200 {
		fmt.Fprintf(&b, "body of %d bytes, sha256 %x", len(body), sha256.Sum256(body))
	} else {
		fmt.Fprintf(&b, "body %q", body)
	}
	if err != nil {
		fmt.Fprintf(&b, " error %v", err)
	}
	if len(resp.Trailer) > 0 {
		fmt.Fprintf(&b, "\ntrailer %v", resp.Trailer)
	}
	return b.String()
}
