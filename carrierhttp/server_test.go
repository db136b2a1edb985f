package carrierhttp

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
)

// selfSigned returns a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "carrierhttp test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			http.Error(w, "no TLS state", 500)
			return
		}
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.TLS.NegotiatedProtocol+" "+string(b))
	})
	_, addr := startCarrier(t, h, func(s *Server) { s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}} })
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for i := range 3 { // the second and third reuse the connection
		resp, err := client.Post("https://"+addr+"/", "text/plain", strings.NewReader(strings.Repeat("x", 10000*i)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := "http/1.1 " + strings.Repeat("x", 10000*i); string(b) != want || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "http/1.1" {
			t.Fatalf("request %d: got %d bytes %.40q, ALPN %v", i, len(b), b, resp.TLS)
		}
	}
	// A client that speaks plain HTTP is told so, as by net/http, and
	// closed; one that speaks neither gets nothing.
	got := exchange(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", nil, time.Second)
	if len(got.Responses) != 1 || !strings.Contains(got.Responses[0], " 400 ") ||
		!strings.Contains(got.Responses[0], "Client sent an HTTP request to an HTTPS server.") || !got.Closed {
		t.Fatalf("plain HTTP to a TLS server: %s", got)
	}
	if got := exchange(t, addr, "hello there, server\r\n\r\n", nil, time.Second); len(got.Responses) != 0 || !got.Closed {
		t.Fatalf("garbage to a TLS server: %s", got)
	}
}

// sleepHandler parks its task (not the carrier) for the duration in the
// query, then answers; entered receives a value as it starts.
func sleepHandler(entered chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, _ := time.ParseDuration(r.URL.Query().Get("d"))
		select {
		case entered <- struct{}{}:
		default:
		}
		if t := carrier.TaskFromContext(r.Context()); t != nil {
			t.Sleep(d)
		} else {
			time.Sleep(d)
		}
		io.WriteString(w, "slept "+d.String())
	})
}

func TestShutdownWaitsForInFlight(t *testing.T) {
	entered := make(chan struct{}, 1)
	s, addr := startCarrier(t, sleepHandler(entered), nil)
	// An idle keep-alive connection, closed by Shutdown.
	idle := dial(t, addr)
	idle.Write([]byte("GET /?d=0s HTTP/1.1\r\nHost: x\r\n\r\n"))
	buf := make([]byte, 4096)
	if n, err := idle.Read(buf); err != nil || !strings.Contains(string(buf[:n]), "slept") {
		t.Fatalf("idle connection's first answer: %q %v", buf[:n], err)
	}
	<-entered // the idle connection's request
	type result struct {
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/?d=300ms")
		if err != nil {
			done <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{string(b), err}
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	r := <-done
	if r.err != nil || r.body != "slept 300ms" {
		t.Fatalf("in-flight request: %q %v", r.body, r.err)
	}
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := idle.Read(buf); err == nil || errors.Is(err, errDeadline) {
		t.Fatalf("idle connection after Shutdown: read %q, %v; want it closed", buf[:n], err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("the listener still accepts after Shutdown")
	}
}

func TestShutdownDeadline(t *testing.T) {
	entered := make(chan struct{}, 1)
	s, addr := startCarrier(t, sleepHandler(entered), nil)
	go func() {
		if resp, err := http.Get("http://" + addr + "/?d=2s"); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a request in flight past its deadline: %v", err)
	}
}

func TestTimeouts(t *testing.T) {
	h := testMux()
	cases := []struct {
		name string
		set  func(*Server)
		raw  string // sent, then nothing
	}{
		{"read header timeout", func(s *Server) { s.ReadHeaderTimeout = 100 * time.Millisecond }, "GET /fixed HTTP/1.1\r\nHost"},
		{"read timeout covers the body", func(s *Server) { s.ReadTimeout = 100 * time.Millisecond }, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"},
		{"idle timeout", func(s *Server) { s.IdleTimeout = 100 * time.Millisecond }, "GET /fixed HTTP/1.1\r\nHost: x\r\n\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := startCarrier(t, h, tc.set)
			c := dial(t, addr)
			c.Write([]byte(tc.raw))
			start := time.Now()
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadAll(c); err != nil {
				t.Fatalf("want the server to close the connection, got %v after %v", err, time.Since(start))
			}
		})
	}
}

// TestSlowBodyPastIdleTimeout: the idle timeout bounds only the wait for a
// request: a body that arrives in parts, the last after the idle timeout,
// is read whole (no ReadTimeout), as net/http reads it.
func TestSlowBodyPastIdleTimeout(t *testing.T) {
	const idle = 100 * time.Millisecond
	h := testMux()
	_, ca := startCarrier(t, h, func(s *Server) { s.IdleTimeout = idle })
	na := startNetHTTPWith(t, h, func(s *http.Server) { s.IdleTimeout = idle })
	for _, srv := range []struct{ name, addr string }{{"net/http", na}, {"carrier host", ca}} {
		t.Run(srv.name, func(t *testing.T) {
			c := dial(t, srv.addr)
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, "GET /fixed HTTP/1.1\r\nHost: x\r\n\r\n") // a first request, then the idle wait
			br := bufio.NewReader(c)
			if resp, err := http.ReadResponse(br, nil); err != nil {
				t.Fatal(err)
			} else {
				io.Copy(io.Discard, resp.Body)
			}
			io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nabc")
			time.Sleep(3 * idle)
			io.WriteString(c, "def")
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("body sent past the idle timeout: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || string(b) != "abcdef" {
				t.Fatalf("body sent past the idle timeout: %s %q", resp.Status, b)
			}
		})
	}
}

// TestWriteTimeout: a response to a client that does not read fails once
// WriteTimeout has passed since the request's head, and the handler's
// write returns the error.
func TestWriteTimeout(t *testing.T) {
	done := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 1<<20)
		for range 1 << 10 { // 1 GiB: far beyond what loopback buffers hold
			if _, err := w.Write(chunk); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	})
	_, addr := startCarrier(t, h, func(s *Server) { s.WriteTimeout = 100 * time.Millisecond })
	c := dial(t, addr)
	start := time.Now()
	io.WriteString(c, "GET /flood HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("handler's write: %v after %v, want the deadline exceeded", err, time.Since(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler still writes 5s after the request; WriteTimeout is 100ms")
	}
}

func TestMaxBodyBytes(t *testing.T) {
	_, addr := startCarrier(t, testMux(), func(s *Server) { s.MaxBodyBytes = 8 })
	got := exchange(t, addr, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n123456789", nil, 300*time.Millisecond)
	if len(got.Responses) != 1 || !strings.Contains(got.Responses[0], " 413 ") || !got.Closed {
		t.Fatalf("declared length over the limit: %s", got)
	}
	got = exchange(t, addr, "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n123456789\r\n0\r\n\r\n", nil, 300*time.Millisecond)
	if len(got.Responses) != 1 || !strings.Contains(got.Responses[0], " 400 ") || !got.Closed {
		t.Fatalf("chunked body over the limit: %s", got)
	}
}

// errDeadline is a read deadline that passed.
var errDeadline = errors.New("i/o timeout")

// FuzzServe sends arbitrary bytes as a request to the carrier host: it
// must answer with well-formed responses or close, never crash or hang,
// and keep serving other clients.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		"GET /request HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /request HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc",
		"GET http://h/request?%zz HTTP/1.0\r\n\r\n",
		"HEAD /big?n=3 HTTP/1.1\r\nHost: x\r\n\r\nGET /stream HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT h:1 HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /request/a%2fb?x HTTP/1.1\r\nHost: [::1]:80\r\nX: \x80\r\n\r\n",
	} {
		f.Add(s)
	}
	_, addr := startCarrier(f, testMux(), func(s *Server) {
		s.ReadTimeout = 100 * time.Millisecond // a cut-short request ends soon
		s.MaxHeaderBytes = 4096
	})
	f.Fuzz(func(t *testing.T, raw string) {
		// Only the first answer is checked: reading the next ones needs
		// the methods of the requests (a HEAD's answer has no body), which
		// arbitrary bytes do not say.
		method, _, _ := strings.Cut(raw, " ")
		got := exchange(t, addr, raw, []string{method}, 50*time.Millisecond)
		if len(got.Responses) > 0 {
			if r := got.Responses[0]; strings.HasPrefix(r, "unreadable") && !strings.Contains(r, "EOF") {
				t.Fatalf("malformed answer to %q: %s", raw, r)
			}
		}
		probe := exchange(t, addr, "GET /fixed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", nil, 50*time.Millisecond)
		if len(probe.Responses) != 1 || !strings.Contains(probe.Responses[0], "hello, world") {
			t.Fatalf("after %q the server no longer serves: %s", raw, probe)
		}
	})
}

// TestContextCancelledWhenClientGoes: a client that closes in the middle
// of its request body cancels the request's context.
func TestContextCancelledWhenClientGoes(t *testing.T) {
	result := make(chan error, 1) // buffered: a task must not block on a channel
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		result <- r.Context().Err()
	})
	_, addr := startCarrier(t, h, nil)
	c := dial(t, addr)
	c.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\npart"))
	time.Sleep(20 * time.Millisecond)
	c.Close()
	select {
	case err := <-result:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("context after the client left: %v, want canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not return")
	}
}

// TestServerContextKey: HTTP/1 and h2c handlers find, under
// http.ServerContextKey, one *http.Server that carries the Server's
// settings, as net/http's handlers find theirs.
func TestServerContextKey(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs, ok := r.Context().Value(http.ServerContextKey).(*http.Server)
		if !ok {
			io.WriteString(w, "none")
			return
		}
		fmt.Fprintf(w, "%p %v %v", hs, hs.ReadHeaderTimeout, hs.Handler != nil)
	})
	_, addr := startCarrier(t, h, func(s *Server) {
		s.ReadHeaderTimeout = 7 * time.Second
		s.Protocols = h2cProtocols()
	})
	get := func(c *http.Client) string {
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	h1 := get(&http.Client{Timeout: 5 * time.Second})
	if _, rest, _ := strings.Cut(h1, " "); rest != "7s true" {
		t.Errorf("HTTP/1 handler's server: %q, want its ReadHeaderTimeout 7s and a Handler", h1)
	}
	if h2 := get(h2cClient()); h2 != h1 {
		t.Errorf("h2c handler's server: %q, HTTP/1's %q: want the same one", h2, h1)
	}
}
