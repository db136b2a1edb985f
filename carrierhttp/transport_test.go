package carrierhttp

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/leakcheck"
	"github.com/spindle-lab/spindle/mock"
)

// inTask runs fn as a task of a new group and waits for it.
func inTask(t testing.TB, fn func(task *carrier.Task)) {
	t.Helper()
	g, err := carrier.New(carrier.Options{Carriers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	done := make(chan any, 1) // buffered: a task must not block on a channel
	g.Go(func(task *carrier.Task) {
		defer func() { done <- recover() }()
		fn(task)
	})
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("task panicked: %v", p)
		}
	case <-time.After(20 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("task did not finish:\n%s", buf[:runtime.Stack(buf, true)])
	}
}

// backend is an httptest server counting its connections.
func backend(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Method+" "+r.Header.Get("X-Test")+" "+string(b))
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		for range 3 {
			io.WriteString(w, strings.Repeat("c", 3000))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "closing")
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	s := httptest.NewUnstartedServer(mux)
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s, &conns
}

// get makes a request with ctx and returns the body.
func get(client *http.Client, ctx context.Context, method, url string, body io.Reader) (string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Test", "t")
	return getBody(client.Do(req))
}

func TestTransportFromTask(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	srv, conns := backend(t)
	// A server that answers with a body delimited by its close.
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	go func() {
		for {
			c, err := raw.Accept()
			if err != nil {
				return
			}
			http.ReadRequest(bufio.NewReader(c))
			io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\nuntil the close")
			c.Close()
		}
	}()
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	inTask(t, func(task *carrier.Task) {
		ctx := carrier.ContextWithTask(context.Background(), task)
		cases := []struct {
			method, path string
			body         io.Reader
			want         string
		}{
			{"GET", "/echo", nil, "GET t "},
			{"POST", "/echo", strings.NewReader("by length"), "POST t by length"},
			{"PUT", "/echo", io.MultiReader(strings.NewReader("chun"), strings.NewReader("ked")), "PUT t chunked"},
			{"HEAD", "/echo", nil, ""},
			{"GET", "/chunked", nil, strings.Repeat("c", 9000)},
			{"GET", "/echo", nil, "GET t "},
		}
		for _, tc := range cases {
			got, err := get(client, ctx, tc.method, srv.URL+tc.path, tc.body)
			if err != nil || got != tc.want {
				t.Errorf("%s %s: got %.40q, %v; want %.40q", tc.method, tc.path, got, err, tc.want)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("%d backend connections for sequential requests of one task, want 1 (keep-alive)", n)
		}
		tr.mu.Lock()
		pooled := len(tr.idle[poolKey{c: task.Carrier(), addr: srv.Listener.Addr().String()}])
		tr.mu.Unlock()
		if pooled != 1 {
			t.Errorf("%d idle connections in the task's carrier pool, want 1", pooled)
		}
		if got, err := get(client, ctx, "GET", srv.URL+"/close", nil); err != nil || got != "closing" {
			t.Errorf("Connection: close answer: %q %v", got, err)
		}
		if got, err := get(client, ctx, "GET", "http://"+raw.Addr().String()+"/", nil); err != nil || got != "until the close" {
			t.Errorf("close-delimited answer: %q %v", got, err)
		}
		// Deadline and cancellation end a wait on a silent backend.
		dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		start := time.Now()
		_, err := get(client, dctx, "GET", srv.URL+"/slow", nil)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
			t.Errorf("deadline: %v after %v", err, time.Since(start))
		}
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err = get(client, cctx, "GET", srv.URL+"/slow", nil)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancel: %v", err)
		}
		if _, err := get(client, ctx, "GET", "ftp://x/", nil); err == nil {
			t.Error("ftp scheme: no error")
		}
	})
}

func TestTransportFromGoroutine(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	srv, _ := backend(t)
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	if got, err := get(client, context.Background(), "POST", srv.URL+"/echo", strings.NewReader("plain")); err != nil || got != "POST t plain" {
		t.Fatalf("from a goroutine: %q %v", got, err)
	}
	// A context carrying a task, used from a goroutine: the fallback too.
	var ctx context.Context
	inTask(t, func(task *carrier.Task) { ctx = carrier.ContextWithTask(context.Background(), task) })
	if got, err := get(client, ctx, "GET", srv.URL+"/echo", nil); err != nil || got != "GET t " {
		t.Fatalf("task context from a goroutine: %q %v", got, err)
	}
}

func TestTransportAgainstMock(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	url := startMock(t)
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	inTask(t, func(task *carrier.Task) {
		ctx := carrier.ContextWithTask(context.Background(), task)
		for range 3 {
			if got, err := get(client, ctx, "GET", url, nil); err != nil || got != string(mock.Body) {
				t.Errorf("from a task: %.60q %v", got, err)
			}
		}
	})
	if got, err := get(client, context.Background(), "GET", url, nil); err != nil || got != string(mock.Body) {
		t.Errorf("from a goroutine: %.60q %v", got, err)
	}
}

func TestTransportTLS(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure "+r.Proto)
	}))
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tr := &Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	inTask(t, func(task *carrier.Task) {
		ctx := carrier.ContextWithTask(context.Background(), task)
		for range 2 {
			if got, err := get(client, ctx, "GET", srv.URL+"/", nil); err != nil || got != "secure HTTP/1.1" {
				t.Errorf("https from a task: %q %v", got, err)
			}
		}
	})
}

func TestHostPort(t *testing.T) {
	cases := []struct {
		url    string
		secure bool
		want   string
	}{
		{"http://example.com/x", false, "example.com:80"},
		{"https://example.com/x", true, "example.com:443"},
		{"http://example.com:8080/x", false, "example.com:8080"},
		{"http://[::1]/x", false, "[::1]:80"},
		{"http://[::1]:81/x", false, "[::1]:81"},
		{"http://127.0.0.1/", false, "127.0.0.1:80"},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostPort(u, tc.secure); got != tc.want {
			t.Errorf("hostPort(%s) = %q, want %q", tc.url, got, tc.want)
		}
	}
}
