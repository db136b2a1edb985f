package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/http1"
	"github.com/spindle-lab/spindle/internal/leakcheck"
	"github.com/spindle-lab/spindle/mock"
)

// wantFruits is the /fruits body every mode must send.
var wantFruits = func() string {
	b, err := json.Marshal(mock.Fruits)
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// env is one case's mock and server.
type env struct {
	t    *testing.T
	mock *mock.Server
	srv  *Server
	addr string
}

// setup starts a mock with mo (unless down) and a server in mode in front
// of it, and registers a check that closing both leaves no goroutine or file
// descriptor behind.
func setup(t *testing.T, mode Mode, mo mock.Options, down bool, so Options) *env {
	t.Helper()
	leakcheck.Register(t, 3*time.Second)
	e := &env{t: t}
	backend := "127.0.0.1:1" // nothing listens on port 1 (tcpmux): connection refused
	if !down {
		mo.Addr = "127.0.0.1:0"
		m, err := mock.Start(context.Background(), mo)
		if err != nil {
			t.Fatal(err)
		}
		e.mock = m
		backend = m.Addr().String()
	}
	so.Mode, so.Addr = mode, "127.0.0.1:0"
	so.Backend = "http://" + backend + "/fruits"
	if mode != ModeNetHTTP && so.Threads == 0 {
		so.Threads = 1
	}
	s, err := Start(context.Background(), so)
	if err != nil {
		e.close()
		t.Fatal(err)
	}
	e.srv, e.addr = s, s.Addr().String()
	// Both answer before the case begins.
	c := e.dial()
	e.send(c, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	c.read(200)
	c.Close()
	if e.mock != nil {
		mc, err := net.Dial("tcp", e.mock.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		mc.Write([]byte("GET /health HTTP/1.0\r\n\r\n"))
		io.Copy(io.Discard, mc)
		mc.Close()
	}
	t.Cleanup(e.close) // runs before the leak check registered above
	return e
}

// startOn starts a server in mode in front of backend (a /fruits URL),
// with one carrier in the carrier modes unless so names more; closing it
// is the caller's.
func startOn(t *testing.T, mode Mode, so Options, backend string) *env {
	t.Helper()
	so.Mode, so.Addr, so.Backend = mode, "127.0.0.1:0", backend
	if mode != ModeNetHTTP && so.Threads == 0 {
		so.Threads = 1
	}
	s, err := Start(context.Background(), so)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, srv: s, addr: s.Addr().String()}
}

func (e *env) close() {
	if e.srv != nil {
		if err := e.srv.Close(); err != nil {
			e.t.Errorf("server close: %v", err)
		}
	}
	if e.mock != nil {
		if err := e.mock.Close(); err != nil {
			e.t.Errorf("mock close: %v", err)
		}
	}
}

// client is a raw client connection.
type client struct {
	t *testing.T
	net.Conn
	br *bufio.Reader
}

func (e *env) dial() *client {
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		e.t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return &client{t: e.t, Conn: c, br: bufio.NewReader(c)}
}

// dialFor dials a client whose failures are t's (a subtest's), closed when
// t ends.
func (e *env) dialFor(t *testing.T) *client {
	c := e.dial()
	c.t = t
	t.Cleanup(func() { c.Close() })
	return c
}

func (e *env) send(c *client, raw string) {
	if _, err := c.Write([]byte(raw)); err != nil {
		c.t.Fatal(err) // the client's test: a subtest's, from dialFor
	}
}

// read reads one response and checks its status; it returns the body.
func (c *client) read(status int) (*http.Response, string) {
	c.t.Helper()
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.t.Fatalf("reading a response (want %d): %v", status, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != status {
		c.t.Fatalf("status %d (%q), want %d", resp.StatusCode, b, status)
	}
	return resp, string(b)
}

// closed checks that the server closes the connection within d, after
// what it still sends (net/http answers 400 to a read-header timeout that
// cuts a line short of parsing, the carrier modes close silently, as nginx
// does).
func (c *client) closed(d time.Duration) {
	c.t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	n, err := io.Copy(io.Discard, c.br)
	if err != nil && !isReset(err) {
		c.t.Fatalf("connection still open after %v: read %d bytes, %v", d, n, err)
	}
}

func isReset(err error) bool { return err != nil && strings.Contains(err.Error(), "connection reset") }

const get = "GET %s HTTP/1.1\r\nHost: x\r\n\r\n"

// forModes runs fn for each mode. Modes is read here, not in a package
// variable: the modes register from init functions, which run after the
// package's variables are set (a variable held no mode, and every test
// over the modes passed without running one).
func forModes(t *testing.T, fn func(t *testing.T, mode Mode)) {
	if len(Modes()) == 0 {
		t.Fatal("no mode registered")
	}
	for _, m := range Modes() {
		t.Run(m.String(), func(t *testing.T) { fn(t, m) })
	}
}

func TestRoutes(t *testing.T) {
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{})
		c := e.dial()
		defer c.Close()
		e.send(c, fmt.Sprintf(get, "/health"))
		if _, body := c.read(200); body != "OK" {
			t.Fatalf("/health body %q", body)
		}
		e.send(c, fmt.Sprintf(get, "/fruits"))
		resp, body := c.read(200)
		if body != wantFruits || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("/fruits: %q %q, want %q", resp.Header.Get("Content-Type"), body, wantFruits)
		}
		// HEAD: the head of the GET answer, no body.
		e.send(c, "HEAD /fruits HTTP/1.1\r\nHost: x\r\n\r\n")
		head, err := http.ReadResponse(c.br, &http.Request{Method: "HEAD"})
		if err != nil || head.StatusCode != 200 || head.ContentLength != int64(len(wantFruits)) {
			t.Fatalf("HEAD /fruits: %v %+v", err, head)
		}
		e.send(c, fmt.Sprintf(get, "/nope"))
		if resp, _ := c.read(404); !resp.Close {
			t.Fatal("404 without Connection: close")
		}
		c.closed(2 * time.Second)
	})
}

func TestKeepAliveAndPipelining(t *testing.T) {
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{ThinkTime: time.Millisecond}, false, Options{})
		c := e.dial()
		defer c.Close()
		for range 3 { // keep-alive: one at a time on one connection
			e.send(c, fmt.Sprintf(get, "/fruits"))
			c.read(200)
		}
		// Bodies are consumed, not taken for the next request.
		e.send(c, "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 14\r\n\r\nGET /nope HTTP")
		c.read(200)
		e.send(c, "POST /fruits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
		if _, body := c.read(200); body != wantFruits {
			t.Fatalf("POST /fruits with a chunked body: %q", body)
		}
		// Expect: 100-continue: the interim answer, then the body, then the answer.
		e.send(c, "POST /fruits HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
		if line, err := c.br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
			t.Fatalf("waiting for 100 Continue: %q, %v", line, err)
		}
		if line, _ := c.br.ReadString('\n'); line != "\r\n" {
			t.Fatalf("after 100 Continue: %q", line)
		}
		e.send(c, "hello")
		c.read(200)
		// Pipelined: all at once, answered in order.
		e.send(c, fmt.Sprintf(get, "/health")+fmt.Sprintf(get, "/fruits")+fmt.Sprintf(get, "/health")+fmt.Sprintf(get, "/fruits"))
		for i, want := range []string{"OK", wantFruits, "OK", wantFruits} {
			if _, body := c.read(200); body != want {
				t.Fatalf("pipelined response %d: %q, want %q", i, body, want)
			}
		}
	})
}

func TestHTTP10(t *testing.T) {
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{})
		c := e.dial()
		defer c.Close()
		e.send(c, "GET /health HTTP/1.0\r\n\r\n")
		c.read(200)
		c.closed(2 * time.Second)

		k := e.dial()
		defer k.Close()
		for range 2 {
			e.send(k, "GET /fruits HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
			if _, body := k.read(200); body != wantFruits {
				t.Fatalf("body %q", body)
			}
		}
	})
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name, raw string
		status    int
	}{
		{"header too large", "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n", 431},
		{"body too large", "POST /fruits HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n", 413},
		{"malformed", "GARBAGE\r\n\r\n", 400},
		{"bad header", "GET /health HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n", 400},
		{"missing host", "GET /health HTTP/1.1\r\n\r\n", 400},
		{"unknown version", "GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505},
		{"transfer coding", "POST /fruits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
		{"bad chunk", "POST /fruits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n", 400},
	}
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{})
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c := e.dial()
				defer c.Close()
				c.t = t
				e.send(c, tc.raw)
				c.read(tc.status)
				c.closed(2 * time.Second)
			})
		}
	})
}

func TestTimeouts(t *testing.T) {
	forModes(t, func(t *testing.T, mode Mode) {
		const timeout = 200 * time.Millisecond
		e := setup(t, mode, mock.Options{}, false, Options{HTTP: http1.Options{ReadHeaderTimeout: timeout, IdleTimeout: timeout}})
		slow := e.dial() // sends half a head and stalls
		defer slow.Close()
		e.send(slow, "GET /health HTTP/1.1\r\nHo")
		idle := e.dial() // one request, then nothing
		defer idle.Close()
		e.send(idle, fmt.Sprintf(get, "/health"))
		idle.read(200)
		// Meanwhile, everyone else is served at once.
		start := time.Now()
		other := e.dial()
		defer other.Close()
		for range 5 {
			e.send(other, fmt.Sprintf(get, "/fruits"))
			other.read(200)
		}
		if d := time.Since(start); d > timeout {
			t.Fatalf("5 requests beside slow and idle clients took %v", d)
		}
		// Limits: the timeout, plus the idle deadline's 1s of slack.
		slow.closed(2 * time.Second)
		idle.closed(2 * time.Second)
	})
}

func TestBackendFaults(t *testing.T) {
	cases := []struct {
		name   string
		mo     mock.Options
		down   bool
		status int
		so     Options
	}{
		{"down", mock.Options{}, true, 502, Options{}},
		{"failing", mock.Options{FailRate: 1}, false, 502, Options{}},
		{"closing", mock.Options{CloseRate: 1}, false, 502, Options{}},
		{"slow", mock.Options{ThinkTime: time.Second}, false, 504, Options{BackendTimeout: 100 * time.Millisecond}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forModes(t, func(t *testing.T, mode Mode) {
				e := setup(t, mode, tc.mo, tc.down, tc.so)
				c := e.dial()
				defer c.Close()
				for range 2 { // the second request reconnects
					e.send(c, fmt.Sprintf(get, "/fruits"))
					c.read(tc.status)
				}
				e.send(c, fmt.Sprintf(get, "/health"))
				c.read(200)
			})
		})
	}
}

// TestBackendRecovers checks that after failed exchanges the next request
// reconnects and succeeds: with half the backend's connections closed, every
// answer is 200 or 502 and some 200 follows a 502 on one client connection.
func TestBackendRecovers(t *testing.T) {
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{CloseRate: 0.5, Seed: 3}, false, Options{})
		c := e.dial()
		defer c.Close()
		var seen502, recovered bool
		for range 30 {
			e.send(c, fmt.Sprintf(get, "/fruits"))
			resp, err := http.ReadResponse(c.br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			switch resp.StatusCode {
			case 502:
				seen502 = true
			case 200:
				recovered = recovered || seen502
			default:
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
		if !seen502 || !recovered {
			t.Fatalf("502 seen %v, 200 after a 502 %v", seen502, recovered)
		}
	})
}

// TestClientGoesAway closes clients in the middle of backend exchanges; the
// leak check of setup verifies that nothing stays behind.
func TestClientGoesAway(t *testing.T) {
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{ThinkTime: 50 * time.Millisecond}, false, Options{})
		for range 5 {
			c := e.dial()
			e.send(c, fmt.Sprintf(get, "/fruits"))
			c.Close()
		}
		time.Sleep(100 * time.Millisecond) // let the exchanges finish into closed sockets
		c := e.dial()
		defer c.Close()
		e.send(c, fmt.Sprintf(get, "/fruits"))
		c.read(200)
	})
}

func TestAdmin(t *testing.T) {
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{AdminAddr: "127.0.0.1:0"})
		c := e.dial()
		e.send(c, fmt.Sprintf(get, "/fruits"))
		c.read(200)
		c.Close()
		fetch := func(path string) string { return adminGet(t, e, path) }
		metrics := fetch("/metrics")
		for _, want := range []string{`spindle_server_requests_total{code="200"}`, "spindle_server_open_connections"} {
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		if mode != ModeNetHTTP && !strings.Contains(metrics, `spindle_carrier_pinned_total{carrier="0"`) {
			t.Errorf("/metrics lacks the watchdog's counter")
		}
		if mode != ModeNetHTTP && !strings.Contains(metrics, `spindle_carrier_tasks_run_total{carrier="0"`) {
			t.Errorf("/metrics lacks carrier telemetry:\n%s", metrics)
		}
		var snap []carrier.Telemetry
		if err := json.Unmarshal([]byte(fetch("/debug/carrier")), &snap); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 0, false: 1}[mode == ModeNetHTTP]; len(snap) != want {
			t.Fatalf("/debug/carrier: %d carriers, want %d", len(snap), want)
		}
		if !strings.Contains(fetch("/debug/pprof/"), "goroutine") {
			t.Error("/debug/pprof/ index lacks profiles")
		}
	})
}

// TestURingPoller serves /fruits in carrier mode on the io_uring poller and
// finds its ring telemetry in /metrics.
func TestURingPoller(t *testing.T) {
	if err := carrier.CheckPoller(carrier.PollerURing); err != nil {
		t.Skipf("io_uring: %v", err)
	}
	e := setup(t, ModeCarrier, mock.Options{}, false, Options{AdminAddr: "127.0.0.1:0", Carrier: carrier.Options{Poller: carrier.PollerURing}})
	c := e.dial()
	for range 3 {
		e.send(c, fmt.Sprintf(get, "/fruits"))
		c.read(200)
	}
	c.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://" + e.srv.AdminAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"spindle_carrier_ring_enters_total", "spindle_carrier_ring_completions_total"} {
		v := -1.0
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, name+"{") {
				fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			}
		}
		if v <= 0 {
			t.Errorf("%s = %v after three requests, want > 0", name, v)
		}
	}
}

func TestModes(t *testing.T) {
	if len(badModes) > 0 {
		t.Fatalf("registerMode refused %q (empty or duplicate)", badModes)
	}
	want := []Mode{ModeNetHTTP, ModeHandoff, ModeCarrier, ModeNetHTTPCarrier}
	if got := Modes(); !slices.Equal(got[:min(len(got), len(want))], want) {
		t.Errorf("Modes() = %q, want %q first", got, want)
	}
	n := modeNames()
	if got, want := ModeHelp(), strings.Join(n[:len(n)-1], ", ")+" or "+n[len(n)-1]; got != want {
		t.Errorf("ModeHelp() = %q, want %q", got, want)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range Modes() {
		if got, err := ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMode("fork-join"); err == nil {
		t.Error("ParseMode accepted an unknown mode")
	}
}

// TestPinnedCarrier checks that the carrier options reach the carriers:
// with PinCPU on one CPU, the carrier reports that CPU.
func TestPinnedCarrier(t *testing.T) {
	allowed, err := cpu.Allowed()
	if err != nil || len(allowed) == 0 {
		t.Skipf("no CPU list for this process: %v", err)
	}
	last := allowed[len(allowed)-1]
	e := setup(t, ModeCarrier, mock.Options{}, false, Options{
		Carrier: carrier.Options{Pin: carrier.PinCPU, CPUs: cpu.Set{last}, Wait: "adaptive"},
	})
	c := e.dial()
	defer c.Close()
	e.send(c, fmt.Sprintf(get, "/fruits"))
	c.read(200)
	if snap := e.srv.group.Snapshot(); len(snap) != 1 || snap[0].CPU != last {
		t.Fatalf("carriers %+v, want one on CPU %d", snap, last)
	}
}

// TestBackendBodyLimit checks that every mode takes a backend body of
// exactly maxBackendBody bytes and answers 502 to one a byte longer (the
// nethttp client once cut it short and handed the decoder a prefix).
func TestBackendBodyLimit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A JSON empty list padded with spaces to n bytes: valid at any size,
	// and any prefix of it too, so that only the limit can fail it.
	body := func(n int) []byte {
		b := []byte(strings.Repeat(" ", n))
		b[0], b[1] = '[', ']'
		return b
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := maxBackendBody
		if r.URL.Path == "/over" {
			n++
		}
		w.Header().Set("Content-Length", fmt.Sprint(n))
		w.Write(body(n))
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	for _, tc := range []struct {
		path   string
		status int
	}{{"/at", 200}, {"/over", 502}} {
		forModes(t, func(t *testing.T, mode Mode) {
			e := startOn(t, mode, Options{}, "http://"+ln.Addr().String()+tc.path)
			defer e.close()
			c := e.dial()
			defer c.Close()
			e.send(c, fmt.Sprintf(get, "/fruits"))
			if _, got := c.read(tc.status); tc.status == 200 && got != "[]" {
				t.Fatalf("%s: body %q, want []", tc.path, got)
			}
		})
	}
}

// TestFloatingCarriers serves keep-alive clients on two floating, stealing
// carriers in both carrier modes: handler tasks (and the client and backend
// conns they own) may move between carriers mid-connection, and every
// answer must still be right.
func TestFloatingCarriers(t *testing.T) {
	for _, mode := range []Mode{ModeHandoff, ModeCarrier} {
		t.Run(mode.String(), func(t *testing.T) {
			e := setup(t, mode, mock.Options{}, false, Options{
				Threads: 2, Carrier: carrier.Options{Steal: true, Float: true},
			})
			const conns, requests = 16, 40
			tr := &http.Transport{MaxIdleConnsPerHost: conns}
			defer tr.CloseIdleConnections()
			cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			errs := make(chan error, conns)
			var wg sync.WaitGroup
			for i := 0; i < conns; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := 0; r < requests; r++ {
						resp, err := cl.Get("http://" + e.addr + "/fruits")
						if err != nil {
							errs <- err
							return
						}
						b, err := io.ReadAll(resp.Body)
						resp.Body.Close()
						if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), "Apple") {
							errs <- fmt.Errorf("request %d: status %d, body %.40q, %v", r, resp.StatusCode, b, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			var moved uint64
			for _, c := range e.srv.group.Snapshot() {
				moved += c.MigrationsIn
			}
			t.Logf("%d handler tasks moved between carriers", moved)
		})
	}
}

// TestMetricsSeries: every documented series is there from the start (label
// sets pre-created), carrier histograms are Prometheus histograms at the
// telemetry's log2 edges, the request-duration histogram counts handled
// requests by mode and class, the Go and process collectors are on, one
// name for open connections, and no made-up CPU for unpinned carriers.
func TestMetricsSeries(t *testing.T) {
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{AdminAddr: "127.0.0.1:0"})
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		scrape := func() string {
			resp, err := (&http.Client{Transport: tr}).Get("http://" + e.srv.AdminAddr().String() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b)
		}
		value := func(metrics, series string) float64 {
			for _, line := range strings.Split(metrics, "\n") {
				if v, ok := strings.CutPrefix(line, series+" "); ok {
					var f float64
					fmt.Sscan(v, &f)
					return f
				}
			}
			t.Errorf("no series %s", series)
			return -1
		}
		m := scrape()
		want := []string{
			`spindle_server_backend_errors_total{kind="refused"} 0`,
			`spindle_server_backend_errors_total{kind="protocol"} 0`,
			`spindle_server_requests_total{code="502"} 0`,
			`spindle_server_request_duration_seconds_bucket{class="5xx",mode="` + mode.String() + `",le="2.5e-05"} 0`,
			`spindle_server_request_duration_seconds_count{class="4xx",mode="` + mode.String() + `"} 0`,
			"spindle_server_open_connections ",
			"go_goroutines ", "go_gc_duration_seconds", "process_cpu_seconds_total ", "process_open_fds ",
		}
		if mode != ModeNetHTTP {
			want = append(want,
				`spindle_carrier_queue_depth_bucket{carrier="0",le="0"}`,
				`spindle_carrier_queue_depth_bucket{carrier="0",le="131071"}`,
				`spindle_carrier_submit_to_run_seconds_bucket{carrier="0",le="1.27e-07"}`,
				`spindle_carrier_submit_to_run_seconds_bucket{carrier="0",le="+Inf"}`,
				`spindle_carrier_detached_seconds_bucket{carrier="0",le="0.000131071`, /* 2^17-1 ns, as a float64 of seconds */
				`spindle_carrier_handoffs_total{carrier="0"}`,
				`spindle_carrier_park_yields_total{carrier="0"}`,
				`spindle_carrier_detached{carrier="0"}`,
				`spindle_carrier_waits_total{carrier="0",kind="spin"}`,
				`spindle_carrier_open_connections{carrier="0"}`,
			)
		}
		for _, w := range want {
			if !strings.Contains(m, w) {
				t.Errorf("/metrics lacks %s", w)
			}
		}
		if mode == ModeCarrier { // blocking carriers batch the other threads; parking ones do not
			others, batched := value(m, "spindle_carrier_other_threads"), value(m, "spindle_carrier_batched_threads")
			if others < 1 || batched < 0 || batched > others {
				t.Errorf("/metrics: %v of %v other threads batched", batched, others)
			}
		}
		for _, bad := range []string{`cpu="-1"`, "open_conns", "spindle_carrier_cpu{"} { // unpinned: no CPU
			if strings.Contains(m, bad) {
				t.Errorf("/metrics has %s", bad)
			}
		}
		for _, line := range strings.Split(m, "\n") {
			if strings.HasPrefix(line, "spindle_") && strings.Contains(line, "quantile=") {
				t.Errorf("a summary among spindle's series: %s", line)
			}
		}
		series := `spindle_server_request_duration_seconds_count{class="2xx",mode="` + mode.String() + `"}`
		before := value(m, series)
		c := e.dial()
		e.send(c, fmt.Sprintf(get, "/fruits"))
		c.read(200)
		c.Close()
		if after := value(scrape(), series); after != before+1 {
			t.Errorf("%s went from %v to %v after one request", series, before, after)
		}
	})
}

// TestNetHTTPCarrierSameBytes: the nethttp-carrier mode runs the nethttp
// mode's code on carriers, so its answers are the same bytes (but for the
// Date field's time).
func TestNetHTTPCarrierSameBytes(t *testing.T) {
	requests := []string{
		"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET /fruits HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"HEAD /fruits HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET /fruits HTTP/1.0\r\n\r\n",
		"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /fruits HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n",
		"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /fruits HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	}
	answers := func(mode Mode) []string {
		e := setup(t, mode, mock.Options{}, false, Options{})
		var out []string
		for _, raw := range requests {
			c := e.dial()
			e.send(c, raw)
			b, _ := io.ReadAll(c.br)
			c.Close()
			lines := strings.Split(string(b), "\r\n")
			lines = slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Date: ") })
			out = append(out, strings.Join(lines, "\r\n"))
		}
		return out
	}
	want, got := answers(ModeNetHTTP), answers(ModeNetHTTPCarrier)
	for i := range requests {
		if got[i] != want[i] {
			t.Errorf("%q:\nnethttp-carrier %q\nnethttp         %q", requests[i], got[i], want[i])
		}
	}
}
