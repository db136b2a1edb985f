package mock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/internal/leakcheck"
)

// start runs a mock for one test and checks that closing it leaves no
// goroutine or file descriptor behind.
func start(t *testing.T, o Options) *Server {
	t.Helper()
	leakcheck.Register(t, 2*time.Second)
	o.Addr = "127.0.0.1:0"
	s, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}) // runs before the leak check registered above
	return s
}

func get(t *testing.T, s *Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestRoutes(t *testing.T) {
	s := start(t, Options{ThinkTime: 2 * time.Millisecond})
	if code, body := get(t, s, "/health"); code != 200 || body != "OK" {
		t.Fatalf("/health: %d %q", code, body)
	}
	for _, p := range []string{"/fruits", "/", "/fruits?x=1"} {
		start := time.Now()
		code, body := get(t, s, p)
		if code != 200 || body != string(Body) {
			t.Fatalf("%s: %d %q", p, code, body)
		}
		if d := time.Since(start); d < 2*time.Millisecond {
			t.Fatalf("%s answered in %v, before the think time", p, d)
		}
		var fruits []Fruit
		if err := json.Unmarshal([]byte(body), &fruits); err != nil || len(fruits) != 10 {
			t.Fatalf("%s: %d fruits, %v", p, len(fruits), err)
		}
	}
	if code, _ := get(t, s, "/nope"); code != 404 {
		t.Fatalf("/nope: %d", code)
	}
}

// dialMock connects to s, with a 5 s deadline on the connection, closed
// when the test ends.
func dialMock(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}

// TestConnect: the mock is no proxy: CONNECT is answered 405 with the
// allowed methods and the connection closed, never a 2xx (which would make
// the connection a tunnel) followed by more HTTP on it.
func TestConnect(t *testing.T) {
	s := start(t, Options{})
	c := dialMock(t, s)
	c.Write([]byte("CONNECT /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" || !resp.Close {
		t.Fatalf("CONNECT: %d, Allow %q, close %v; want 405, GET, HEAD, close", resp.StatusCode, resp.Header.Get("Allow"), resp.Close)
	}
	io.Copy(io.Discard, resp.Body)
	if _, err := http.ReadResponse(br, nil); err == nil {
		t.Fatal("the GET after CONNECT was answered on the same connection")
	}
}

// TestConcurrentThink checks that the think time is a timer: 50 requests
// waiting 100ms each on one carrier finish in far less than 50 x 100ms.
func TestConcurrentThink(t *testing.T) {
	s := start(t, Options{ThinkTime: 100 * time.Millisecond})
	begin := time.Now()
	errs := make(chan error, 50)
	for range 50 {
		go func() {
			resp, err := http.Get("http://" + s.Addr().String() + "/fruits")
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	for range 50 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Fatalf("50 concurrent requests with 100ms think took %v", d)
	}
}

func TestPipelining(t *testing.T) {
	s := start(t, Options{})
	c := dialMock(t, s)
	c.Write([]byte(strings.Repeat("GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /fruits HTTP/1.1\r\nHost: x\r\n\r\n", 3)))
	br := bufio.NewReader(c)
	for i := range 6 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if want := [2]string{"OK", string(Body)}[i%2]; string(b) != want {
			t.Fatalf("response %d: %q", i, b)
		}
	}
}

func TestFaults(t *testing.T) {
	t.Run("fail", func(t *testing.T) {
		s := start(t, Options{FailRate: 1})
		if code, _ := get(t, s, "/fruits"); code != 500 {
			t.Fatalf("status %d, want 500", code)
		}
		if code, _ := get(t, s, "/health"); code != 200 {
			t.Fatalf("/health status %d, want 200 (faults only on /fruits)", code)
		}
	})
	t.Run("close", func(t *testing.T) {
		s := start(t, Options{CloseRate: 1})
		c := dialMock(t, s)
		c.Write([]byte("GET /fruits HTTP/1.1\r\nHost: x\r\n\r\n"))
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if n, err := c.Read(make([]byte, 100)); err != io.EOF {
			t.Fatalf("read %d bytes, %v; want EOF", n, err)
		}
	})
	t.Run("rates", func(t *testing.T) {
		s := start(t, Options{FailRate: 0.5, ThinkJitter: time.Millisecond, Seed: 7})
		fails := 0
		for range 200 {
			if code, _ := get(t, s, "/fruits"); code == 500 {
				fails++
			}
		}
		if fails < 60 || fails > 140 { // 200 draws at p=0.5: 100 ± 5 sigma
			t.Fatalf("%d of 200 failed at rate 0.5", fails)
		}
	})
}

// Each fault flag is its own share of the /fruits requests: the two were
// drawn one after the other, so that --fail-rate 0.7 --close-rate 0.3
// failed 0.7 x 0.7 = 49% and answered 21%, where the help promises 70%
// and none.
func TestFaultShares(t *testing.T) {
	for _, tc := range []struct{ fail, close float64 }{
		{0.7, 0.3},
		{0.5, 0.5},
		{0.3, 0.2},
	} {
		s := start(t, Options{FailRate: tc.fail, CloseRate: tc.close, Seed: 11})
		const n = 300
		var ok, failed, closed int
		for range n {
			c, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(2 * time.Second))
			c.Write([]byte("GET /fruits HTTP/1.1\r\nHost: x\r\n\r\n"))
			b := make([]byte, 12)
			_, err = io.ReadFull(c, b)
			c.Close()
			switch {
			case err != nil:
				closed++
			case string(b) == "HTTP/1.1 500":
				failed++
			default:
				ok++
			}
		}
		// 300 draws: each share within 5 sigma (at most 0.15 at p=0.5).
		for _, got := range []struct {
			what string
			n    int
			p    float64
		}{{"answered 500", failed, tc.fail}, {"closed", closed, tc.close}, {"answered 200", ok, 1 - tc.fail - tc.close}} {
			if share := float64(got.n) / n; share < got.p-0.15 || share > got.p+0.15 {
				t.Errorf("fail %v close %v: %.2f %s, want %.2f", tc.fail, tc.close, share, got.what, got.p)
			}
		}
	}
}

func TestOptionsRejected(t *testing.T) {
	for _, o := range []Options{{FailRate: 2}, {CloseRate: -1}, {ThinkTime: -1}, {Threads: -1}, {FailRate: 0.7, CloseRate: 0.7}} {
		s, err := Start(context.Background(), o)
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, ErrBadOptions) {
			t.Errorf("Start(%+v) = %v, want ErrBadOptions", o, err)
		}
	}
}

func TestContextStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	// Serve one request first: the mock is up and then stops.
	resp, err := http.Get("http://" + s.Addr().String() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	cancel()
	deadline := time.Now().Add(2 * time.Second)
	for {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting after the context was cancelled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.Close()
}

func TestThreads(t *testing.T) {
	s := start(t, Options{Threads: 2})
	for range 10 { // new connections spread over both carriers' listeners
		if code, body := get(t, s, "/health"); code != 200 || body != "OK" {
			t.Fatalf("/health: %d %q", code, body)
		}
		http.DefaultClient.CloseIdleConnections()
	}
}
