package load

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"iter"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/internal/leakcheck"
)

// testCert is a self-signed ECDSA certificate for 127.0.0.1 and
// spindle.test, made once per test binary.
var testCert = sync.OnceValues(func() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "spindle.test"},
		DNSNames:     []string{"spindle.test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
})

// tlsServer is a testServer behind TLS that records the server names the
// clients sent.
type tlsServer struct {
	*testServer
	mu    sync.Mutex
	names map[string]int
}

func startTLSServer(t testing.TB, version uint16, answer func(n int64, w io.Writer) bool) *tlsServer {
	t.Helper()
	cert, err := testCert()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &tlsServer{names: map[string]int{}}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: version, MaxVersion: version,
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			ts.mu.Lock()
			ts.names[h.ServerName]++
			ts.mu.Unlock()
			return nil, nil
		}}
	ts.testServer = serveOn(t, tls.NewListener(ln, cfg), answer)
	return ts
}

func (s *tlsServer) url() string { return "https://" + s.ln.Addr().String() + "/" }

func TestHTTPS(t *testing.T) {
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		for _, rate := range []float64{0, 300} {
			name := "TLS" + TLSVersionName(v) + "/closed"
			if rate > 0 {
				name = "TLS" + TLSVersionName(v) + "/fixed"
			}
			t.Run(name, func(t *testing.T) {
				leakcheck.Register(t, 2*time.Second) // no session coroutine left behind
				srv := startTLSServer(t, v, answerOK)
				const conns = 3
				r, err := Run(context.Background(), Options{
					URL: srv.url(), Threads: 2, Connections: conns, Duration: 300 * time.Millisecond,
					Rate: rate, Timeout: time.Second, Insecure: true,
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				checkAccounting(t, r)
				if r.Completed == 0 || r.ByStatus.C2xx != r.Completed || r.Failed != 0 {
					t.Errorf("completed %d (2xx %d), failed %d %+v", r.Completed, r.ByStatus.C2xx, r.Failed, r.Errors)
				}
				if got := srv.requests.Load(); got < r.Completed {
					t.Errorf("server answered %d requests, load completed %d", got, r.Completed)
				}
				tr := r.TLS
				if tr == nil {
					t.Fatal("no TLS result for an https run")
				}
				// Keep-alive: one handshake per connection, none per request.
				if tr.Handshakes != conns || tr.HandshakeErrors != 0 || srv.accepted.Load() != conns+1 { // +1: the probe
					t.Errorf("handshakes %d (errors %d), server accepted %d, want %d connections and a probe",
						tr.Handshakes, tr.HandshakeErrors, srv.accepted.Load(), conns)
				}
				want12, want13 := int64(conns), int64(0)
				if v == tls.VersionTLS13 {
					want12, want13 = 0, conns
				}
				if tr.TLS12 != want12 || tr.TLS13 != want13 {
					t.Errorf("negotiated 1.2: %d, 1.3: %d; want %d, %d", tr.TLS12, tr.TLS13, want12, want13)
				}
				if tr.Handshake.Count != conns || tr.Handshake.MaxUs <= 0 {
					t.Errorf("handshake times: %+v", tr.Handshake)
				}
				var out bytes.Buffer
				if err := r.WriteText(&out, false, false); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(out.String(), "  TLS handshakes: 3 (") {
					t.Errorf("report lacks the handshake line:\n%s", out.String())
				}
			})
		}
	}
}

// TestHTTPSReconnects: a server that closes after every response makes
// every request shake hands again; every request is still accounted for.
// With TLSResume the reconnections resume the sessions.
func TestHTTPSReconnects(t *testing.T) {
	leakcheck.Register(t, 2*time.Second)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		srv := startTLSServer(t, v, func(_ int64, w io.Writer) bool {
			io.WriteString(w, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
			return false
		})
		for _, resume := range []bool{false, true} {
			r, err := Run(context.Background(), Options{
				URL: srv.url(), Threads: 1, Connections: 2, Duration: 300 * time.Millisecond,
				Rate: 100, Timeout: time.Second, Insecure: true, TLSResume: resume,
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkAccounting(t, r)
			if r.Completed < 10 || r.TLS.Handshakes < r.Completed {
				t.Errorf("TLS %s: completed %d with %d handshakes: want a handshake per request", TLSVersionName(v), r.Completed, r.TLS.Handshakes)
			}
			// Every reconnection after a connection's first can resume.
			if resume && r.TLS.Resumed < r.TLS.Handshakes-int64(r.Config.Connections) || !resume && r.TLS.Resumed != 0 {
				t.Errorf("TLS %s, resume %v: %d of %d handshakes resumed", TLSVersionName(v), resume, r.TLS.Resumed, r.TLS.Handshakes)
			}
		}
	}
}

func TestHTTPSVerification(t *testing.T) {
	srv := startTLSServer(t, tls.VersionTLS13, answerOK)
	base := Options{URL: srv.url(), Threads: 1, Connections: 1, Duration: 100 * time.Millisecond, Timeout: time.Second}

	// The self-signed certificate is refused without Insecure, before any load.
	err := Preflight(context.Background(), base)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "--insecure") {
		t.Errorf("self-signed certificate: error %v, want ErrUnreachable suggesting --insecure", err)
	}

	// A version the server does not speak.
	o := base
	o.Insecure, o.TLSMax = true, tls.VersionTLS12
	if err := Preflight(context.Background(), o); !errors.Is(err, ErrUnreachable) {
		t.Errorf("TLS 1.2 against a 1.3-only server: %v", err)
	}

	// SNI: the URL's host name by default (none for an IP), --sni when given.
	o = base
	o.Insecure, o.SNI = true, "spindle.test"
	r, err := Run(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, r)
	srv.mu.Lock()
	names := srv.names["spindle.test"]
	srv.mu.Unlock()
	if names != 2 || r.TLS.SNI != "spindle.test" { // the probe and the connection
		t.Errorf("server saw SNI spindle.test %d times (%v), want 2", names, srv.names)
	}
}

func TestTLSBadOptions(t *testing.T) {
	tests := []struct {
		o    Options
		want string
	}{
		{Options{URL: "https://127.0.0.1/", TLSMin: tls.VersionTLS13, TLSMax: tls.VersionTLS12}, "above"},
		{Options{URL: "https://127.0.0.1/", TLSMin: tls.VersionTLS10}, "not supported"},
		{Options{URL: "https://127.0.0.1/", SNI: "a b"}, "not a host name"},
		{Options{URL: "http://127.0.0.1/", Insecure: true}, "https URLs only"},
		{Options{URL: "ftp://127.0.0.1/"}, "want http or https"},
	}
	for _, tt := range tests {
		o := tt.o
		o.Threads, o.Connections, o.Duration, o.Timeout = 1, 1, time.Second, time.Second
		err := o.Validate()
		if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want ErrBadOptions mentioning %q", tt.o, err, tt.want)
		}
	}
	for _, s := range []string{"1.0", "1.1", "", "tls1.3", "1.4"} {
		if _, err := ParseTLSVersion(s); !errors.Is(err, ErrBadOptions) {
			t.Errorf("ParseTLSVersion(%q): %v", s, err)
		}
	}
	if v, err := ParseTLSVersion("1.3"); err != nil || v != tls.VersionTLS13 {
		t.Errorf("ParseTLSVersion(1.3) = %#x, %v", v, err)
	}
}

// pipeServer runs a TLS server over an in-memory pipe for the session
// tests: toServer carries the client's bytes, fromServer the server's in the
// pieces the server wrote them.
type pipeServer struct {
	client     net.Conn
	fromServer chan []byte
	done       chan error
}

func startPipeServer(t testing.TB, version uint16, response string) *pipeServer {
	cert, err := testCert()
	if err != nil {
		t.Fatal(err)
	}
	clientSide, serverSide := net.Pipe()
	p := &pipeServer{client: clientSide, fromServer: make(chan []byte, 64), done: make(chan error, 1)}
	srv := tls.Server(serverSide, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: version, MaxVersion: version})
	go func() { // the server: one request, one response
		buf := make([]byte, 4096)
		_, err := srv.Read(buf)
		if err == nil {
			_, err = io.WriteString(srv, response)
		}
		p.done <- err
	}()
	go func() { // the wire from the server
		for {
			buf := make([]byte, 4096)
			n, err := clientSide.Read(buf)
			if n > 0 {
				p.fromServer <- buf[:n]
			}
			if err != nil {
				close(p.fromServer)
				return
			}
		}
	}()
	t.Cleanup(func() { clientSide.Close(); serverSide.Close() })
	return p
}

// exchange drives a session against p: what the session writes goes to
// the server, what the server writes is fed to the session in pieces whose
// sizes come from splits (cycled; 0 means the rest of the server's write).
// It returns the plaintext received once want bytes arrived.
func exchange(t testing.TB, p *pipeServer, s *tlsSession, request string, want int, splits []byte) (string, error) {
	var plain []byte
	sent := false
	si := 0
	for {
		if len(s.out) > 0 {
			if _, err := p.client.Write(s.out); err != nil {
				return string(plain), err
			}
			s.out = s.out[:0]
		}
		if s.done && !sent {
			if err := s.write([]byte(request)); err != nil {
				return "", err
			}
			sent = true
			continue
		}
		if len(plain) >= want {
			return string(plain), nil
		}
		if s.err != nil {
			return string(plain), s.err
		}
		var chunk []byte
		select {
		case c, ok := <-p.fromServer:
			if !ok {
				return string(plain), io.ErrUnexpectedEOF
			}
			chunk = c
		case <-time.After(5 * time.Second):
			t.Fatalf("no bytes from the server in 5 s (plaintext so far %q)", plain)
		}
		for len(chunk) > 0 {
			n := len(chunk)
			if len(splits) > 0 {
				if k := int(splits[si%len(splits)]); k > 0 && k < n {
					n = k
				}
				si++
			}
			s.feed(chunk[:n])
			chunk = chunk[n:]
			plain = append(plain, s.take()...)
		}
	}
}

// TestSessionSplits: the session completes a handshake and an exchange
// whatever the boundaries of the ciphertext it is fed, byte by byte included.
func TestSessionSplits(t *testing.T) {
	const resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		for _, splits := range [][]byte{nil, {1}, {5, 1, 200}, {3, 0}} {
			p := startPipeServer(t, v, resp)
			s := newTLSSession(&tls.Config{InsecureSkipVerify: true}, make([]byte, tlsReadSize))
			got, err := exchange(t, p, s, "GET / HTTP/1.1\r\n\r\n", len(resp), splits)
			if err != nil || got != resp {
				t.Errorf("TLS %s, splits %v: got %q, %v", TLSVersionName(v), splits, got, err)
			}
			if s.version() != v {
				t.Errorf("negotiated %#x, want %#x", s.version(), v)
			}
			s.close()
			if !errors.Is(s.err, errSessionClosed) {
				t.Errorf("after close, the session's error is %v, want errSessionClosed", s.err)
			}
		}
	}
}

// FuzzTLSRecordBoundary feeds a session a real server's ciphertext at
// arbitrary split points, or arbitrary bytes after a real handshake, or
// arbitrary bytes as the server's first flight (ver%4 >= 2): it must end
// with the exact plaintext or an error, never panic or hang.
func FuzzTLSRecordBoundary(f *testing.F) {
	f.Add(byte(13), []byte{1}, []byte(nil))
	f.Add(byte(12), []byte{7, 0, 200}, []byte(nil))
	f.Add(byte(13), []byte(nil), []byte("\x17\x03\x03\x00\x05hello"))
	f.Add(byte(12), []byte{2}, []byte("\x15\x03\x03\x00\x02\x02\x28"))
	f.Add(byte(2), []byte{3}, []byte("\x16\x03\x03\x00\x04\x02\x00\x00\x00"))
	f.Add(byte(3), []byte{1}, []byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
	f.Fuzz(func(t *testing.T, ver byte, splits, garbage []byte) {
		v := uint16(tls.VersionTLS12)
		if ver%2 == 1 {
			v = tls.VersionTLS13
		}
		if ver%4 >= 2 { // garbage instead of the server's handshake
			s := newTLSSession(&tls.Config{InsecureSkipVerify: true}, make([]byte, tlsReadSize))
			defer s.close()
			for si := 0; len(garbage) > 0; si++ {
				n := len(garbage)
				if len(splits) > 0 {
					n = min(n, 1+int(splits[si%len(splits)]))
				}
				s.feed(garbage[:n])
				garbage = garbage[n:]
				if len(s.take()) != 0 {
					t.Fatal("plaintext before a handshake")
				}
			}
			if s.done {
				t.Fatal("a handshake completed with bytes that no server sent")
			}
			return
		}
		const resp = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
		p := startPipeServer(t, v, resp)
		s := newTLSSession(&tls.Config{InsecureSkipVerify: true}, make([]byte, tlsReadSize))
		defer s.close()
		got, err := exchange(t, p, s, "GET / HTTP/1.1\r\n\r\n", len(resp), splits)
		if err != nil || got != resp {
			t.Fatalf("TLS %s, splits %v: got %q, %v", TLSVersionName(v), splits, got, err)
		}
		// Arbitrary bytes after the exchange: plaintext or an error, and
		// once the session has an error it stays ended.
		for len(garbage) > 0 {
			n := min(len(garbage), 1+int(garbage[0])%64)
			s.feed(garbage[:n])
			s.take()
			garbage = garbage[n:]
		}
		if s.err != nil {
			s.feed([]byte("\x17\x03\x03\x00\x01x"))
			if len(s.take()) != 0 {
				t.Fatal("an ended session decrypted more")
			}
		}
	})
}

// sessionPair is a client and a server session shaking hands in memory, on
// one goroutine: each one's output is the other's input.
func sessionPair(tb testing.TB, version uint16) (client, server *tlsSession) {
	cert, err := testCert()
	if err != nil {
		tb.Fatal(err)
	}
	scfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: version, MaxVersion: version}
	client = newTLSSession(&tls.Config{InsecureSkipVerify: true}, make([]byte, tlsReadSize))
	server = newSession(func(c net.Conn) *tls.Conn { return tls.Server(c, scfg) }, make([]byte, tlsReadSize))
	for i := 0; !(client.done && server.done); i++ {
		if i > 10 || client.err != nil || server.err != nil {
			tb.Fatalf("handshake: client %v, server %v after %d flights", client.err, server.err, i)
		}
		pump(client, server)
		pump(server, client)
	}
	return client, server
}

// pump moves what from has written to to.
func pump(from, to *tlsSession) {
	if len(from.out) > 0 {
		to.feed(from.out)
		from.out = from.out[:0]
	}
}

// BenchmarkTLSExchange is one request and one response through a client
// and a server session (both sides' record encryption and decryption, one
// coroutine resume on each side), next to BenchmarkCoroutineResume, the
// cost of one resume: what running crypto/tls as a coroutine adds per record
// read. The
// figures are for the lead's quiet machine (see docs/load.md).
func BenchmarkTLSExchange(b *testing.B) {
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		b.Run("TLS"+TLSVersionName(v), func(b *testing.B) {
			client, server := sessionPair(b, v)
			req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 480\r\n\r\n" + strings.Repeat("x", 480))
			b.ReportAllocs()
			for b.Loop() {
				client.write(req)
				pump(client, server)
				if len(server.take()) != len(req) {
					b.Fatal("request lost")
				}
				server.write(resp)
				pump(server, client)
				if len(client.take()) != len(resp) {
					b.Fatal("response lost")
				}
			}
		})
	}
}

func BenchmarkCoroutineResume(b *testing.B) {
	s := &tlsSession{}
	next, stop := iter.Pull(func(yield func(struct{}) bool) {
		for yield(struct{}{}) {
			s.in = s.in[:0]
		}
	})
	defer stop()
	b.ReportAllocs()
	for b.Loop() {
		next()
	}
}

func TestSessionPair(t *testing.T) {
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		client, server := sessionPair(t, v)
		client.write([]byte("ping"))
		pump(client, server)
		if got := string(server.take()); got != "ping" {
			t.Errorf("TLS %s: server got %q", TLSVersionName(v), got)
		}
		client.close()
		server.close()
	}
}

// TestHTTPSServerNotTLS: an https URL whose server answers in plain text.
// The run (past the probe, which would refuse it) fails every request as a
// connect error, counts the failed handshakes, and accounts for everything.
func TestHTTPSServerNotTLS(t *testing.T) {
	leakcheck.Register(t, 2*time.Second)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			c.Close()
		}
	}()
	o := Options{URL: "https://" + ln.Addr().String() + "/", Threads: 1, Connections: 2,
		Duration: 200 * time.Millisecond, Rate: 100, Timeout: time.Second, Insecure: true}.withDefaults()
	tg, err := o.validate()
	if err != nil {
		t.Fatal(err)
	}
	if err := probe(context.Background(), o, tg); !errors.Is(err, ErrUnreachable) {
		t.Errorf("probe: %v, want ErrUnreachable", err)
	}
	r, err := run(context.Background(), o, tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, r)
	if r.Completed != 0 || r.Errors.Connect == 0 || r.Errors.Connect != r.Failed || r.TLS.HandshakeErrors == 0 || r.TLS.Handshakes != 0 {
		t.Errorf("completed %d, errors %+v, tls %+v: want connect errors only", r.Completed, r.Errors, r.TLS)
	}
}

// TestHTTPSLargeMessages: requests larger than the socket buffers (loopback
// sends at most about 4 MiB to a peer that is not reading: the encrypted
// request is written across EPOLLOUT wake-ups) and responses of many
// records, more than one read buffer each.
func TestHTTPSLargeMessages(t *testing.T) {
	const reqBody, respBody = 8 << 20, 300 << 10
	var bodies atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond) // let the client fill the socket
		n, _ := io.Copy(io.Discard, r.Body)
		if n != reqBody {
			http.Error(w, "short body", http.StatusBadRequest)
			return
		}
		bodies.Add(1)
		w.Write(bytes.Repeat([]byte("x"), respBody))
	}))
	srv.StartTLS()
	defer srv.Close()
	d := 500 * time.Millisecond
	if raceEnabled {
		d = 4 * time.Second // 8 MiB through an instrumented net/http server takes a while
	}
	r, err := Run(context.Background(), Options{
		URL: srv.URL + "/", Threads: 1, Connections: 2, Duration: d,
		Timeout: 2 * time.Second, Insecure: true, Method: "POST", Body: strings.Repeat("b", reqBody),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, r)
	if r.Completed == 0 || r.ByStatus.C2xx != r.Completed || r.Failed != 0 || r.TLS.Handshakes != 2 {
		t.Errorf("completed %d (2xx %d), failed %d %+v, handshakes %d", r.Completed, r.ByStatus.C2xx, r.Failed, r.Errors, r.TLS.Handshakes)
	}
	if bodies.Load() < r.Completed {
		t.Errorf("the server read %d whole request bodies for %d responses", bodies.Load(), r.Completed)
	}
	if r.BytesRead < r.Completed*respBody {
		t.Errorf("read %d plaintext bytes for %d responses of %d", r.BytesRead, r.Completed, respBody)
	}
}
