package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/http1"
)

// watchAll feeds stream to a fresh watcher in pieces of at most step bytes
// (0: whole) and returns the verdicts, whether it lost the stream, and the
// verdict on a request after those.
func watchAll(stream string, step int) ([]framing, bool, framing) {
	c := newFramingConn(nil, http1.Options{})
	p := []byte(stream)
	for len(p) > 0 && !c.lost {
		k := len(p)
		if step > 0 {
			k = min(k, step)
		}
		c.watch(bytes.Clone(p[:k])) // a fresh buffer each read, as net/http's reuse is
		p = p[k:]
	}
	var vs []framing
	for len(c.verdicts) > 0 {
		vs = append(vs, c.next())
	}
	return vs, c.lost, c.next()
}

const (
	wGet     = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
	wPost    = "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nGET /"
	wChunked = "POST /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nGET /\r\n0\r\n\r\n"
	wBoth    = "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	wTE10    = "POST /health HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nGET /\r\n0\r\n\r\n"
)

// TestFramingWatch: the watcher follows pipelined requests through their
// bodies, however the stream is split into reads, and gives each head its
// verdict.
func TestFramingWatch(t *testing.T) {
	ok, closeAfter, refuse := framingOK, framingCloseAfter, framingRefuse
	tests := []struct {
		name   string
		stream string
		want   []framing
		lost   bool
	}{
		{"one get", wGet, []framing{ok}, false},
		{"bodies skipped, not read as heads", wGet + wPost + wChunked + wGet, []framing{ok, ok, ok, ok}, false},
		{"length and chunked closes after", wGet + wBoth + wGet, []framing{ok, closeAfter}, true},
		{"http/1.0 chunked refused", wGet + wTE10, []framing{ok, refuse}, true},
		{"head net/http answers itself", "GET /health HTTP/1.1\r\nHost: a b\r\n\r\n" + wBoth, nil, true},
		{"obs-fold, then http/1.0 chunked", "GET /health HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n" + wTE10 + wGet, nil, true},
		{"bad chunked body", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + wBoth, []framing{ok}, true},
		{"partial head", "GET /health HTTP/1.1\r\nHo", nil, false},
	}
	for _, tt := range tests {
		for _, step := range []int{0, 1, 7, 64} {
			t.Run(fmt.Sprintf("%s/reads of %d", tt.name, step), func(t *testing.T) {
				got, lost, later := watchAll(tt.stream, step)
				if fmt.Sprint(got) != fmt.Sprint(tt.want) || lost != tt.lost {
					t.Fatalf("verdicts %v lost %v, want %v lost %v", got, lost, tt.want, tt.lost)
				}
				// A request the watcher has no verdict for once it lost the
				// stream (one net/http accepts and http1 refuses, say) is
				// answered, then the connection closed.
				if want := map[bool]framing{false: ok, true: closeAfter}[lost]; later != want {
					t.Fatalf("a later request's verdict %v, want %v", later, want)
				}
			})
		}
	}
}

// TestFramingWatchHeadTooLarge: a head past MaxHeaderBytes is not buffered
// further (net/http answers it 431).
func TestFramingWatchHeadTooLarge(t *testing.T) {
	c := newFramingConn(nil, http1.Options{})
	line := []byte("X-A: " + strings.Repeat("a", 1000) + "\r\n")
	c.watch([]byte("GET / HTTP/1.1\r\n"))
	for i := 0; i < 100 && !c.lost; i++ {
		c.watch(line)
	}
	if !c.lost || len(c.head) > c.o.MaxHeaderBytes+len(line) {
		t.Fatalf("lost %v with %d bytes buffered, want lost within %d", c.lost, len(c.head), c.o.MaxHeaderBytes+len(line))
	}
}

// FuzzFramingWatch: any stream, split anywhere, gives the verdicts it
// gives whole, and never panics.
func FuzzFramingWatch(f *testing.F) {
	for _, s := range []string{wGet, wGet + wPost, wChunked + wGet, wBoth, wTE10, "GET / HTTP/1.1\r\n\r\n"} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, stream string, step uint8) {
		whole, lostWhole, _ := watchAll(stream, 0)
		split, lostSplit, _ := watchAll(stream, int(step%32)+1)
		if fmt.Sprint(whole) != fmt.Sprint(split) || lostWhole != lostSplit {
			t.Fatalf("whole: %v lost %v; in reads of %d: %v lost %v", whole, lostWhole, step%32+1, split, lostSplit)
		}
	})
}

// BenchmarkFramingWatch is what the nethttp mode adds per request: one
// typical request head (curl's, 78 bytes) watched and its verdict taken.
func BenchmarkFramingWatch(b *testing.B) {
	c := newFramingConn(nil, http1.Options{})
	req := []byte("GET /fruits HTTP/1.1\r\nHost: 127.0.0.1:8081\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n")
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		c.watch(req)
		if c.next() != framingOK {
			b.Fatal("verdict")
		}
	}
}

// BenchmarkNetHTTPHealth is the nethttp mode's per-request cost for the
// cheapest route, over one keep-alive loopback connection, with the framing
// watcher (the mode as it is) and without it: the difference is the
// watcher's share.
func BenchmarkNetHTTPHealth(b *testing.B) {
	for _, watch := range []bool{true, false} {
		b.Run(fmt.Sprintf("watch=%v", watch), func(b *testing.B) {
			s := &Server{o: Options{}, m: newMetrics(ModeNetHTTP.String())}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var l net.Listener = ln
			if watch {
				l = framingListener{Listener: ln, o: http1.Options{}.WithDefaults()}
			}
			hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if s.netHTTPRequestOK(w, r) {
					s.write(w, 200, textPlain, healthBody, false)
				}
			}), ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				return context.WithValue(ctx, framingKey{}, c)
			}}
			go hs.Serve(l)
			defer hs.Close()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := []byte("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
			buf := make([]byte, 4096)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, err := c.Read(buf)
				if err != nil && err != io.EOF || !bytes.HasSuffix(buf[:n], healthBody) {
					b.Fatalf("read %q, %v", buf[:n], err)
				}
			}
		})
	}
}
