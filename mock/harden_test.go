package mock

import (
	"bufio"
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
)

// rawConn dials s and returns the conn and a reader of its answers.
func rawConn(t *testing.T, s *Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// TestHostileInput sends, from a raw socket, the inputs the server's
// hardening is about; the mock answers them as the server's carrier modes
// do.
func TestHostileInput(t *testing.T) {
	s := start(t, Options{})
	for _, tc := range []struct {
		name, raw string
		status    int
		closes    bool
		rest      bool // the answer ends in a clean end of stream (no reset)
	}{
		{"absolute form", "GET http://x/health HTTP/1.1\r\nHost: x\r\n\r\n", 200, false, false},
		{"bad host", "GET /health HTTP/1.1\r\nHost: a/b\r\n\r\n", 400, true, true},
		{"length and chunked", "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 200, true, true},
		{"http10 chunked", "POST /health HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, true, true},
		// Refused with 32 KiB of body unread: drained, not reset.
		{"413 while uploading", "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 20000000\r\n\r\n" + strings.Repeat("a", 32<<10), 413, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, br := rawConn(t, s)
			c.Write([]byte(tc.raw))
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != tc.status || resp.Close != tc.closes {
				t.Fatalf("status %d close %v, want %d %v", resp.StatusCode, resp.Close, tc.status, tc.closes)
			}
			if tc.rest {
				if n, err := io.Copy(io.Discard, br); n != 0 || err != nil {
					t.Fatalf("after the answer: %d bytes, %v; want a clean end of stream", n, err)
				}
			}
		})
	}
}

// TestMaxConns: a connection beyond MaxConns is closed at once and
// counted; the others are served.
func TestMaxConns(t *testing.T) {
	s := start(t, Options{MaxConns: 1})
	c, br := rawConn(t, s)
	c.Write([]byte("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("first connection: %v", err)
	}
	over, obr := rawConn(t, s)
	over.Write([]byte("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
	if n, err := io.Copy(io.Discard, obr); n != 0 || (err != nil && !strings.Contains(err.Error(), "reset")) {
		t.Fatalf("second connection: %d bytes, %v; want it closed at once", n, err)
	}
	if s.Rejected() != 1 || s.Open() != 1 {
		t.Fatalf("rejected %d open %d, want 1 and 1", s.Rejected(), s.Open())
	}
}

// TestBodiesBounded: connections holding most of a 1 MiB body each add
// far less than their bodies to the heap.
func TestBodiesBounded(t *testing.T) {
	const (
		conns = 64
		body  = http1.DefaultMaxBodyBytes
		limit = conns * 64 << 10 // 64 KiB a connection: a sixteenth of a body
	)
	s := start(t, Options{})
	base := heapInuse()
	payload := make([]byte, body-1024)
	var wg sync.WaitGroup
	for range conns {
		c, _ := rawConn(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fmt.Fprintf(c, "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", body)
			c.Write(payload)
		}()
	}
	wg.Wait()
	peak := uint64(0)
	for range 10 {
		time.Sleep(50 * time.Millisecond)
		peak = max(peak, heapInuse())
	}
	if peak > base && peak-base > limit {
		t.Fatalf("heap grew by %d KiB for %d connections, want at most %d KiB", (peak-base)>>10, conns, limit>>10)
	}
}

func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
