package carrierhttp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/leakcheck"
)

// protoHandler answers the request's protocol, whether its handler runs in
// a carrier task, and its body.
var protoHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%s task=%v %s", r.Proto, carrier.TaskFromContext(r.Context()) != nil, b)
})

// h2cProtocols speaks HTTP/1 and h2c.
func h2cProtocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// h2cClient is Go's HTTP/2 client speaking h2c with prior knowledge.
func h2cClient() *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http2.Transport{
		AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}}
}

// post sends body to url with c and returns the answer's protocol and body.
func post(c *http.Client, url, body string) (string, error) {
	resp, err := c.Post(url, "text/plain", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.Proto + " " + string(b), err
}

// TestH2CPriorKnowledge: Go's HTTP/2 client with prior knowledge gets
// HTTP/2 answers from handlers on goroutines, 32 streams at once over one
// connection, on 1 and 2 carriers, floating ones and io_uring; an HTTP/1.1
// client of the same server is still served in a carrier task; no
// goroutine or fd is left.
func TestH2CPriorKnowledge(t *testing.T) {
	for _, su := range []struct {
		name string
		opts carrier.Options
	}{
		{"1 carrier", carrier.Options{Carriers: 1}},
		{"2 carriers", carrier.Options{Carriers: 2}},
		{"2 carriers floating", carrier.Options{Carriers: 2, Float: true}},
		{"1 carrier io_uring", carrier.Options{Carriers: 1, Poller: carrier.PollerURing}},
	} {
		t.Run(su.name, func(t *testing.T) {
			leakcheck.Register(t, 5*time.Second)
			_, addr := serveOn(t, su.opts, protoHandler, func(s *Server) { s.Protocols = h2cProtocols() })
			c := h2cClient()
			defer c.CloseIdleConnections()
			const streams = 32
			var wg sync.WaitGroup
			errs := make(chan error, streams)
			for i := range streams {
				wg.Go(func() {
					body := strings.Repeat(fmt.Sprint(i), 1+i*1000)
					got, err := post(c, "http://"+addr+"/", body)
					if want := "HTTP/2.0 HTTP/2.0 task=false " + body; err != nil || got != want {
						errs <- fmt.Errorf("stream %d: %.60q, %v; want %.60q", i, got, err, want)
					}
				})
			}
			if !waitFor(&wg, 60*time.Second) {
				t.Fatal("HTTP/2 requests still running after 60 s")
			}
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			h1 := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{}}
			defer h1.CloseIdleConnections()
			if got, err := post(h1, "http://"+addr+"/", "one"); got != "HTTP/1.1 HTTP/1.1 task=true one" || err != nil {
				t.Errorf("HTTP/1.1 beside h2c: %q, %v", got, err)
			}
		})
	}
}

// TestH2CProtocols: without UnencryptedHTTP2 (the default) the preface is
// an HTTP/1 request of version 2.0, refused as net/http's default server
// refuses it; a server of h2c alone closes an HTTP/1 client's connection
// unanswered, as net/http's does.
func TestH2CProtocols(t *testing.T) {
	h2only := new(http.Protocols)
	h2only.SetUnencryptedHTTP2(true)
	for _, tc := range []struct {
		name   string
		protos *http.Protocols
		raw    string
		want   string
	}{
		{"default, the preface", nil, h2Preface, "HTTP/1.1 505 HTTP Version Not Supported\r\n"},
		{"h2c only, HTTP/1.1", h2only, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := startCarrier(t, protoHandler, func(s *Server) { s.Protocols = tc.protos })
			if got := rawOutcome(t, addr, tc.raw); !strings.HasPrefix(got, tc.want) || tc.want == "" && got != "" {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestH2TLS: over TLS, HTTP/2 is on by default (ALPN "h2", as net/http),
// a client that offers only http/1.1 gets HTTP/1.1 in a carrier task, and
// Protocols without HTTP2 keeps every client on HTTP/1.1.
func TestH2TLS(t *testing.T) {
	cert, pool := selfSigned(t)
	client := func(protos ...string) *http.Client {
		return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, NextProtos: protos},
			ForceAttemptHTTP2: len(protos) == 0, // else Go's Transport adds "h2" to the list
		}}
	}
	h1only := new(http.Protocols)
	h1only.SetHTTP1(true)
	cases := []struct {
		name   string
		protos *http.Protocols
		client []string // the client's ALPN list; nil: Go's (h2, http/1.1)
		want   string
	}{
		{"default", nil, nil, "HTTP/2.0 HTTP/2.0 task=false body"},
		{"client without h2", nil, []string{"http/1.1"}, "HTTP/1.1 HTTP/1.1 task=true body"},
		{"server without h2", h1only, nil, "HTTP/1.1 HTTP/1.1 task=true body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Register(t, 5*time.Second)
			_, addr := serveOn(t, carrier.Options{Carriers: 2}, protoHandler, func(s *Server) {
				s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
				s.Protocols = tc.protos
			})
			c := client(tc.client...)
			defer c.CloseIdleConnections()
			for i := range 3 { // one connection, three requests
				if got, err := post(c, "https://"+addr+"/", "body"); got != tc.want || err != nil {
					t.Fatalf("request %d: %q, %v; want %q", i, got, err, tc.want)
				}
			}
		})
	}
}

// h2Slow is an h2c server with a stream in flight: its handler for /slow
// waits until finish is called, which then checks the stream's answer.
type h2Slow struct {
	s       *Server
	addr    string
	handler http.Handler
	client  *http.Client
	release chan struct{}
	answer  chan string
	// accepted counts the connections the server took (StateNew).
	accepted atomic.Int64
}

// startH2Slow starts an h2c server on carriers o whose handler answers
// "done", /slow once released, and a stream to /slow, and returns once
// that stream's handler runs.
func startH2Slow(t *testing.T, o carrier.Options) *h2Slow {
	t.Helper()
	entered := make(chan struct{}, 1)
	sl := &h2Slow{release: make(chan struct{}), answer: make(chan string, 1), client: h2cClient()}
	t.Cleanup(sl.client.CloseIdleConnections)
	sl.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-sl.release
		}
		io.WriteString(w, "done")
	})
	sl.s, sl.addr = serveOn(t, o, sl.handler, func(s *Server) {
		s.Protocols = h2cProtocols()
		s.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				sl.accepted.Add(1)
			}
		}
	})
	go func() {
		got, err := post(sl.client, "http://"+sl.addr+"/slow", "")
		sl.answer <- fmt.Sprint(got, err)
	}()
	<-entered
	return sl
}

// shutdown starts the server's Shutdown (bounded by 30 s) and returns
// its result's channel.
func (sl *h2Slow) shutdown() <-chan error {
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shut <- sl.s.Shutdown(ctx)
	}()
	return shut
}

// finish checks that Shutdown (shut) still waits, releases the stream in
// flight, checks its answer, and that Shutdown then returns nil.
func (sl *h2Slow) finish(t *testing.T, shut <-chan error) {
	t.Helper()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a stream in flight", err)
	default:
	}
	close(sl.release)
	if got := <-sl.answer; got != "HTTP/2.0 done<nil>" {
		t.Fatalf("the stream in flight got %q", got)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown did not return after the stream ended")
	}
}

// TestH2ShutdownLateConns: connections accepted before Shutdown whose
// HTTP/2 starts while Shutdown waits (their client prefaces sent just
// before, at and after its start, on both sides of its GOAWAY to the
// connections x/net served then) each get a GOAWAY with no error and end,
// and Shutdown returns once the stream that held it open is done: x/net
// registers a connection for its graceful shutdown before its first
// state, and one that registers after Shutdown's GOAWAY sends itself one
// there. No goroutine is left.
func TestH2ShutdownLateConns(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	sl := startH2Slow(t, carrier.Options{Carriers: 2})
	// Accepted now, served by HTTP/2 from their prefaces on: each waits in
	// its task for the preface.
	delays := []time.Duration{-20 * time.Millisecond, 0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}
	late := make([]net.Conn, len(delays))
	for i := range late {
		late[i] = dial(t, sl.addr)
		late[i].SetDeadline(time.Now().Add(30 * time.Second))
	}
	// Taken by the server before Shutdown closes its listeners (which
	// resets connections still in the backlog).
	for deadline := time.Now().Add(10 * time.Second); sl.accepted.Load() < int64(1+len(late)); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server took %d of %d connections in 10 s", sl.accepted.Load(), 1+len(late))
		}
	}
	start := time.Now().Add(50 * time.Millisecond) // Shutdown's start, give or take the scheduler
	var wg sync.WaitGroup
	errs := make(chan error, len(late))
	for i, nc := range late {
		wg.Go(func() {
			time.Sleep(time.Until(start.Add(delays[i])))
			if err := awaitGoAway(nc); err != nil {
				errs <- fmt.Errorf("the connection starting HTTP/2 %v after Shutdown: %w", delays[i], err)
			}
		})
	}
	time.Sleep(time.Until(start))
	shut := sl.shutdown()
	if !waitFor(&wg, 30*time.Second) {
		t.Fatal("connections that started HTTP/2 during Shutdown still wait for their GOAWAY after 30 s")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	sl.finish(t, shut)
}

// awaitGoAway starts HTTP/2 on nc (the client preface and SETTINGS), and
// reads frames until a GOAWAY, which must carry no error and come with no
// stream opened, then until the server closes the connection.
func awaitGoAway(nc net.Conn) error {
	defer nc.Close()
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		return err
	}
	fr := http2.NewFramer(nc, nc)
	if err := fr.WriteSettings(); err != nil {
		return err
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return fmt.Errorf("no GOAWAY before %w", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.GoAwayFrame:
			if f.ErrCode != http2.ErrCodeNo || f.LastStreamID != 0 {
				return fmt.Errorf("GOAWAY %v, last stream %d; want no error, no stream", f.ErrCode, f.LastStreamID)
			}
			for {
				if _, err := fr.ReadFrame(); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return fmt.Errorf("after the GOAWAY: %w, want the server's close", err)
				}
			}
		}
	}
}

// TestH2Shutdown: Shutdown sends GOAWAY to HTTP/2 connections and waits
// for their streams in flight, which finish; Close ends an idle HTTP/2
// connection at once. Neither leaves a goroutine.
func TestH2Shutdown(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	sl := startH2Slow(t, carrier.Options{Carriers: 1})
	shut := sl.shutdown()
	time.Sleep(100 * time.Millisecond) // Shutdown must still wait then
	sl.finish(t, shut)

	c, h := sl.client, sl.handler
	s2, addr2 := serveOn(t, carrier.Options{Carriers: 1}, h, func(s *Server) { s.Protocols = h2cProtocols() })
	if got, err := post(c, "http://"+addr2+"/", ""); got != "HTTP/2.0 done" || err != nil {
		t.Fatalf("before Close: %q, %v", got, err)
	}
	s2.Close()
	if got, err := post(c, "http://"+addr2+"/", ""); err == nil {
		t.Fatalf("after Close the server still answered %q", got)
	}
}

// TestH2Curl checks the server against curl (with nghttp2): h2c with prior
// knowledge, h2c by Upgrade, and h2 over TLS.
func TestH2Curl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed (Debian package curl)")
	}
	if out, _ := exec.Command(curl, "--version").Output(); !strings.Contains(string(out), "HTTP2") {
		t.Skipf("this curl has no HTTP/2 (%s)", strings.SplitN(string(out), "\n", 2)[0])
	}
	cert, _ := selfSigned(t)
	_, plain := serveOn(t, carrier.Options{Carriers: 1}, protoHandler, func(s *Server) { s.Protocols = h2cProtocols() })
	_, secure := serveOn(t, carrier.Options{Carriers: 1}, protoHandler, func(s *Server) {
		s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	})
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"prior knowledge", []string{"--http2-prior-knowledge", "http://" + plain + "/"}, "HTTP/2.0 task=false \n2"},
		{"upgrade", []string{"--http2", "http://" + plain + "/"}, "HTTP/2.0 task=false \n2"},
		{"upgrade with a body: HTTP/1.1", []string{"--http2", "-d", "x", "http://" + plain + "/"}, "HTTP/1.1 task=true x\n1.1"},
		{"TLS", []string{"--http2", "-k", "https://" + secure + "/"}, "HTTP/2.0 task=false \n2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-sS", "--max-time", "20", "-w", "\n%{http_version}"}, tc.args...)
			out, err := exec.Command(curl, args...).CombinedOutput()
			if err != nil || string(out) != tc.want {
				t.Fatalf("curl %s: %q, %v; want %q", strings.Join(args, " "), out, err, tc.want)
			}
		})
	}
}

// TestH2CUpgrade speaks h2c by Upgrade with x/net's framer: the request
// that asks is answered 101 and then as stream 1 of the HTTP/2
// connection, by a handler on a goroutine that sees it as HTTP/2.0
// without the hop-by-hop fields; a second stream follows on the same
// connection. Requests the server must not upgrade are answered over
// HTTP/1.1 (TestH2Curl has curl's view).
func TestH2CUpgrade(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s task=%v upgrade=%q connection=%q", r.Proto, r.URL.Path, carrier.TaskFromContext(r.Context()) != nil, r.Header.Get("Upgrade"), r.Header.Get("Connection"))
	})
	_, addr := startCarrier(t, h, func(s *Server) { s.Protocols = h2cProtocols() })
	const ask = "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n"
	for _, tc := range []struct{ name, raw string }{
		{"a body", "POST /a HTTP/1.1\r\nHost: x\r\n" + ask + "Content-Length: 1\r\nConnection: close\r\n\r\nx"},
		{"HTTP/1.0", "GET /a HTTP/1.0\r\n" + ask + "\r\n"},
		{"no HTTP2-Settings", "GET /a HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: h2c\r\n\r\n"},
		{"bad HTTP2-Settings", "GET /a HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings, close\r\nUpgrade: h2c\r\nHTTP2-Settings: !!\r\n\r\n"},
	} {
		if got := rawOutcome(t, addr, tc.raw); !strings.Contains(got, " 200 OK\r\n") || !strings.Contains(got, "/a task=true") {
			t.Errorf("%s: %q, want an HTTP/1 answer from the task", tc.name, got)
		}
	}

	c := dial(t, addr)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /first HTTP/1.1\r\nHost: x\r\n"+ask+"\r\n")
	br := bufio.NewReader(c)
	if line, err := br.ReadString('\n'); line != "HTTP/1.1 101 Switching Protocols\r\n" {
		t.Fatalf("the upgrade's answer: %q, %v", line, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "\r\n" {
			break
		}
	}
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, br)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"}, {Name: ":authority", Value: "x"}, {Name: ":path", Value: "/second"}} {
		enc.WriteField(f)
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	bodies := map[uint32]string{}
	for ended := 0; ended < 2; {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("after %v: %v", bodies, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if st := f.PseudoValue("status"); st != "200" {
				t.Fatalf("stream %d: status %s", f.StreamID, st)
			}
		case *http2.DataFrame:
			bodies[f.StreamID] += string(f.Data())
			if f.StreamEnded() {
				ended++
			}
		}
	}
	want := map[uint32]string{
		1: `HTTP/2.0 /first task=false upgrade="" connection=""`,
		3: `HTTP/2.0 /second task=false upgrade="" connection=""`,
	}
	if !maps.Equal(bodies, want) {
		t.Fatalf("streams answered %v, want %v", bodies, want)
	}
}

// TestH2ConnState: an HTTP/2 connection's hook sees net/http's states
// (StateNew in the task, StateActive and StateIdle from x/net's server,
// StateClosed at its end), always with the conn StateNew had, although
// x/net reads the preface's rest through a wrapper.
func TestH2ConnState(t *testing.T) {
	var mu sync.Mutex
	var states []http.ConnState
	conns := map[net.Conn]bool{}
	closed := make(chan struct{})
	_, addr := startCarrier(t, protoHandler, func(s *Server) {
		s.Protocols = h2cProtocols()
		s.ConnState = func(c net.Conn, st http.ConnState) {
			mu.Lock()
			defer mu.Unlock()
			states = append(states, st)
			conns[c] = true
			if st == http.StateClosed {
				close(closed)
			}
		}
	})
	c := h2cClient()
	if got, err := post(c, "http://"+addr+"/", "x"); got != "HTTP/2.0 HTTP/2.0 task=false x" || err != nil {
		t.Fatalf("%q, %v", got, err)
	}
	c.CloseIdleConnections()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("no StateClosed 10 s after the client closed")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(states) < 4 || states[0] != http.StateNew || states[1] != http.StateActive || states[len(states)-2] != http.StateIdle || states[len(states)-1] != http.StateClosed {
		t.Errorf("states %v, want new, active, ..., idle, closed", states)
	}
	if len(conns) != 1 {
		t.Errorf("the hook saw %d conns, want 1", len(conns))
	}
}

// BenchmarkH2C compares a small handler's requests per second over h2c
// (one connection, its streams multiplexed; handlers on goroutines) and
// over HTTP/1.1 (a keep-alive connection per client goroutine; handlers in
// the carrier's tasks), on one carrier, with 16 client goroutines of Go's
// clients; and h2c under net/http's own server (nethttp-h2c), to tell what
// the carrier conn under x/net's server costs from what HTTP/2 in Go costs.
// Run one at a time, alternated (-test.bench 'BenchmarkH2C/h2c$' ...).
func BenchmarkH2C(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	for _, proto := range []string{"http1.1", "h2c", "nethttp-h2c"} {
		b.Run(proto, func(b *testing.B) {
			var addr string
			if proto == "nethttp-h2c" {
				addr = startNetHTTPWith(b, h, func(s *http.Server) { s.Protocols = h2cProtocols() })
			} else {
				_, addr = serveOn(b, carrier.Options{Carriers: 1}, h, func(s *Server) { s.Protocols = h2cProtocols() })
			}
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			if proto != "http1.1" {
				c = h2cClient()
			}
			defer c.CloseIdleConnections()
			url := "http://" + addr + "/"
			b.ReportAllocs()
			b.SetParallelism(8) // 16 goroutines on 2 CPUs
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := c.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}

// FuzzH2C sends arbitrary bytes to a server of HTTP/1 and h2c (seeds: the
// preface with frames or garbage after it, parts of it, upgrade requests),
// and checks that it serves an HTTP/1.1 and an h2c client after each:
// `go test ./carrierhttp -run X -fuzz FuzzH2C -fuzztime 1m`.
func FuzzH2C(f *testing.F) {
	var frames bytes.Buffer
	fr := http2.NewFramer(&frames, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	fr.WritePing(false, [8]byte{1})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x82, 0x86, 0x84}, EndStream: true, EndHeaders: true}) // GET http /
	const upgrade = "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n"
	for _, s := range []string{
		h2Preface + frames.String(),
		h2Preface + "garbage that is no frame",
		h2Preface[:10],
		"PRI * HTTP/2.0\r\n\r\nXY\r\n\r\n",
		upgrade,
		upgrade + h2Preface + frames.String(),
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + h2Preface,
	} {
		f.Add(s)
	}
	_, addr := startCarrier(f, protoHandler, func(s *Server) {
		s.Protocols = h2cProtocols()
		s.ReadTimeout = 100 * time.Millisecond // a cut-short request ends soon
		s.IdleTimeout = time.Second
	})
	f.Fuzz(func(t *testing.T, raw string) {
		h2 := h2cClient() // a connection of its own: the probe is of a new one
		defer h2.CloseIdleConnections()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		go c.Write([]byte(raw)) // may block on a server that stops reading
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		io.Copy(io.Discard, c)
		c.Close()
		probe := exchange(t, addr, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", nil, 50*time.Millisecond)
		if len(probe.Responses) != 1 || !strings.Contains(probe.Responses[0], "HTTP/1.1 task=true") {
			t.Fatalf("after %q the server no longer serves HTTP/1.1: %s", raw, probe)
		}
		if got, err := post(h2, "http://"+addr+"/", "p"); got != "HTTP/2.0 HTTP/2.0 task=false p" || err != nil {
			t.Fatalf("after %q the server no longer serves h2c: %q, %v", raw, got, err)
		}
	})
}

// TestH2CPrefaceTimeout: on an h2c server, a client silent from the start
// or silent after part of the preface is closed, unanswered, once
// ReadHeaderTimeout has passed, not twice that (the preface's wait and
// then HTTP/1's).
func TestH2CPrefaceTimeout(t *testing.T) {
	const timeout = 2 * time.Second
	_, addr := startCarrier(t, protoHandler, func(s *Server) {
		s.Protocols = h2cProtocols()
		s.ReadHeaderTimeout = timeout
	})
	for _, send := range []string{"", h2Preface[:5]} {
		t.Run(fmt.Sprintf("%q", send), func(t *testing.T) {
			t.Parallel()
			c := dial(t, addr)
			io.WriteString(c, send)
			start := time.Now()
			c.SetReadDeadline(start.Add(10 * time.Second))
			b, err := io.ReadAll(c)
			if d := time.Since(start); err != nil || len(b) != 0 || d < timeout/2 || d > timeout*7/4 {
				t.Fatalf("after %v: read %q, %v; want a close without an answer after about %v", d, b, err, timeout)
			}
		})
	}
}
