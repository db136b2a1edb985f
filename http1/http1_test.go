package http1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseRequestStatuses(t *testing.T) {
	long := "GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + strings.Repeat("a", DefaultMaxHeaderBytes) + "\r\n\r\n"
	tests := []struct {
		name, in   string
		wantStatus int // 0: accepted
		wantKeep   bool
		wantBody   string
	}{
		{"get", "GET /fruits HTTP/1.1\r\nHost: x\r\n\r\n", 0, true, ""},
		{"http10", "GET / HTTP/1.0\r\n\r\n", 0, false, ""},
		{"http10 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0, true, ""},
		{"close", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n", 0, false, ""},
		{"length body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", 0, true, "abc"},
		{"chunked body", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n1;e\r\nd\r\n0\r\n\r\n", 0, true, "abcd"},
		{"header too large", long, 431, false, ""},
		{"line too large", "GET /" + strings.Repeat("a", DefaultMaxHeaderBytes) + " HTTP/1.1\r\n", 431, false, ""},
		{"body too large", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\n", 413, false, ""},
		{"malformed line", "GET/ HTTP/1.1\r\n\r\n", 400, false, ""},
		{"bad method", "G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, false, ""},
		{"bad header", "GET / HTTP/1.1\r\nHost x\r\n\r\n", 400, false, ""},
		{"folded header", "GET / HTTP/1.1\r\nHost: x\r\nA: b\r\n c\r\n\r\n", 400, false, ""},
		{"no host", "GET / HTTP/1.1\r\n\r\n", 400, false, ""},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, false, ""},
		{"bad length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n", 400, false, ""},
		{"differing lengths", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, false, ""},
		{"http2", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, false, ""},
		{"http3", "GET / HTTP/3.0\r\nHost: x\r\n\r\n", 505, false, ""},
		{"gzip", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, false, ""},
		{"gzip chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, false, ""},
		{"bad chunk", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, false, ""},
		{"chunked too large", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n100001\r\n", 413, false, ""},
		// RFC 9112 §6.3: chunked wins over Content-Length, then close.
		{"length and chunked", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", 0, false, "a"},
		// RFC 9112 §6.1: faulty framing in HTTP/1.0.
		{"http10 chunked", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", 400, false, ""},
		{"http10 gzip", "POST / HTTP/1.0\r\nTransfer-Encoding: gzip\r\nContent-Length: 1\r\n\r\na", 400, false, ""},
		{"host with space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, false, ""},
		{"host with slash", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400, false, ""},
		{"host with at", "GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", 400, false, ""},
		{"host with obs-text", "GET / HTTP/1.1\r\nHost: \xff\r\n\r\n", 400, false, ""},
		{"http10 bad host", "GET / HTTP/1.0\r\nHost: a b\r\n\r\n", 400, false, ""},
		{"ipv6 host", "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 0, true, ""},
		{"empty host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", 0, true, ""},
		{"connect without host", "CONNECT example.com:443 HTTP/1.1\r\n\r\n", 0, true, ""},
		{"absolute form", "GET http://x/fruits HTTP/1.1\r\nHost: x\r\n\r\n", 0, true, ""},
		{"options star", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 0, true, ""},
		{"h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Request
			n, err := ParseRequest([]byte(tt.in), &r, Options{})
			if tt.wantStatus != 0 {
				if err == nil || err == ErrIncomplete || StatusOf(err) != tt.wantStatus {
					t.Fatalf("err = %v (status %d), want status %d", err, StatusOf(err), tt.wantStatus)
				}
				return
			}
			if err != nil || n != len(tt.in) {
				t.Fatalf("n, err = %d, %v; want %d, nil", n, err, len(tt.in))
			}
			if r.KeepAlive != tt.wantKeep || string(r.Body) != tt.wantBody {
				t.Fatalf("keep-alive %v body %q, want %v %q", r.KeepAlive, r.Body, tt.wantKeep, tt.wantBody)
			}
		})
	}
}

// TestParseRequestPrefixes checks that every proper prefix of a request is
// ErrIncomplete and that pipelined requests are taken one at a time.
func TestParseRequestPrefixes(t *testing.T) {
	reqs := []string{
		"GET /a HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /b?q=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody",
		"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nT: v\r\n\r\n",
	}
	all := strings.Join(reqs, "")
	var r Request
	for _, want := range reqs {
		for i := 0; i < len(want); i++ {
			if _, err := ParseRequest([]byte(want[:i]), &r, Options{}); err != ErrIncomplete {
				t.Fatalf("prefix %q: err = %v, want ErrIncomplete", want[:i], err)
			}
		}
		n, err := ParseRequest([]byte(all), &r, Options{})
		if err != nil || n != len(want) {
			t.Fatalf("pipelined %q: n, err = %d, %v; want %d", all, n, err, len(want))
		}
		all = all[n:]
	}
	if string(r.Path()) != "/c" || string(r.Body) != "hi" {
		t.Fatalf("last request path %q body %q", r.Path(), r.Body)
	}
}

func TestParseResponse(t *testing.T) {
	tests := []struct {
		name, in string
		atEOF    bool
		wantErr  error // nil, ErrIncomplete, or any *Error (checked by errors.As)
		status   int
		body     string
		keep     bool
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", false, nil, 200, "{}", true},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", false, nil, 200, "{}", true},
		{"until close, open", "HTTP/1.1 200 OK\r\n\r\nabc", false, ErrIncomplete, 0, "", false},
		{"until close, closed", "HTTP/1.1 200 OK\r\n\r\nabc", true, nil, 200, "abc", false},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", false, nil, 204, "", true},
		{"close", "HTTP/1.1 500 Oops\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false, nil, 500, "", false},
		{"http10", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false, nil, 200, "", false},
		{"bad status", "HTTP/1.1 2000 OK\r\n\r\n", false, &Error{}, 0, "", false},
		{"short", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", false, ErrIncomplete, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Response
			_, err := ParseResponse([]byte(tt.in), &r, tt.atEOF, Options{})
			var e *Error
			switch {
			case tt.wantErr == nil && err != nil, tt.wantErr == ErrIncomplete && err != ErrIncomplete:
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			case tt.wantErr != nil && tt.wantErr != ErrIncomplete && !errors.As(err, &e):
				t.Fatalf("err = %v, want an *Error", err)
			case tt.wantErr == nil && (r.Status != tt.status || string(r.Body) != tt.body || r.KeepAlive != tt.keep):
				t.Fatalf("got %d %q keep=%v, want %d %q keep=%v", r.Status, r.Body, r.KeepAlive, tt.status, tt.body, tt.keep)
			}
		})
	}
}

func TestAppendResponse(t *testing.T) {
	var w Writer
	out := w.AppendResponse(nil, ResponseHead{Status: 404, ContentType: "text/plain", Close: true}, []byte("nope"))
	var r Response
	n, err := ParseResponse(out, &r, false, Options{})
	if err != nil || n != len(out) {
		t.Fatalf("parse own output %q: %d, %v", out, n, err)
	}
	if r.Status != 404 || string(r.Reason) != "Not Found" || string(r.Body) != "nope" || r.KeepAlive ||
		string(r.Get("content-type")) != "text/plain" || len(r.Get("Date")) != len(dateFormat) || r.Get("Server") != nil || r.Get("Allow") != nil {
		t.Fatalf("unexpected response %q", out)
	}
	named := w.AppendResponse(nil, ResponseHead{Status: 200, Server: "spindle"}, []byte("ok"))
	if n, err := ParseResponse(named, &r, false, Options{}); err != nil || n != len(named) || string(r.Get("Server")) != "spindle" {
		t.Fatalf("response with a Server %q: %d, %v, Server %q", named, n, err, r.Get("Server"))
	}
	refused := w.AppendResponse(nil, ResponseHead{Status: 405, Allow: "GET, HEAD"}, nil)
	if n, err := ParseResponse(refused, &r, false, Options{}); err != nil || n != len(refused) || string(r.Get("Allow")) != "GET, HEAD" {
		t.Fatalf("405 with an Allow %q: %d, %v, Allow %q", refused, n, err, r.Get("Allow"))
	}
	head := w.AppendResponse(nil, ResponseHead{Status: 200, KeepAlive10: true, OmitBody: true}, []byte("body"))
	if !bytes.HasSuffix(head, []byte("Content-Length: 4\r\nConnection: keep-alive\r\n\r\n")) {
		t.Fatalf("HEAD answer %q", head)
	}
}

// pipeConn is one end of a loopback TCP connection, for the readers.
func pipeConn(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func TestServerReader(t *testing.T) {
	client, server := pipeConn(t)
	go func() {
		// Pipelined, split at awkward places, then a clean close.
		for _, part := range []string{"GET /a HTTP/1.1\r\nHo", "st: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nPOST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n", "ok"} {
			client.Write([]byte(part))
			time.Sleep(5 * time.Millisecond)
		}
		client.Close()
	}()
	rd := NewServerReader(server, Options{})
	var r Request
	for _, want := range []string{"/a", "/b", "/c"} {
		if err := rd.Next(&r); err != nil || string(r.Target) != want {
			t.Fatalf("Next: %q, %v; want %q", r.Target, err, want)
		}
	}
	if string(r.Body) != "ok" {
		t.Fatalf("body %q", r.Body)
	}
	if err := rd.Next(&r); err != io.EOF {
		t.Fatalf("after close: %v, want io.EOF", err)
	}
}

func TestServerReaderTimeouts(t *testing.T) {
	const short = 50 * time.Millisecond
	for _, tt := range []struct {
		name string
		send string
		o    Options
		skip int // requests read before the one that times out
	}{
		{"new connection silent", "", Options{ReadHeaderTimeout: short}, 0},
		{"idle after a request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", Options{IdleTimeout: short}, 1},
		{"read header", "GET / HTTP/1.1\r\n", Options{ReadHeaderTimeout: short}, 0},
		{"slow body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab", Options{ReadTimeout: short}, 0},
		{"slow discarded body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab", Options{ReadTimeout: short, DiscardBody: true}, 0},
		{"slow second body", "GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na", Options{ReadTimeout: short}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client, server := pipeConn(t)
			client.Write([]byte(tt.send))
			start := time.Now()
			var r Request
			rd := NewServerReader(server, tt.o)
			for range tt.skip {
				if err := rd.Next(&r); err != nil {
					t.Fatal(err)
				}
			}
			err := rd.Next(&r)
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("err = %v, want deadline exceeded", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

func TestClientReader(t *testing.T) {
	client, server := pipeConn(t)
	go func() {
		server.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n\r\nrest"))
		server.Close()
	}()
	rd := NewClientReader(client, Options{})
	var r Response
	deadline := time.Now().Add(2 * time.Second)
	if err := rd.Next(&r, deadline); err != nil || string(r.Body) != "{}" || !r.KeepAlive {
		t.Fatalf("first: %q keep=%v %v", r.Body, r.KeepAlive, err)
	}
	if err := rd.Next(&r, deadline); err != nil || string(r.Body) != "rest" || r.KeepAlive {
		t.Fatalf("second: %q keep=%v %v", r.Body, r.KeepAlive, err)
	}
	if err := rd.Next(&r, deadline); err != io.ErrUnexpectedEOF {
		t.Fatalf("third: %v, want io.ErrUnexpectedEOF", err)
	}
}

var benchRequest = []byte("GET /fruits HTTP/1.1\r\nHost: 127.0.0.1:8081\r\nUser-Agent: spindle-load\r\nAccept: */*\r\n\r\n")

func BenchmarkParseRequest(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchRequest)))
	var r Request
	for b.Loop() {
		if _, err := ParseRequest(benchRequest, &r, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendResponse(b *testing.B) {
	b.ReportAllocs()
	body := bytes.Repeat([]byte("x"), 480)
	var w Writer
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		buf = w.AppendResponse(buf[:0], ResponseHead{Status: 200, ContentType: "application/json"}, body)
	}
}

func BenchmarkParseResponse(b *testing.B) {
	b.ReportAllocs()
	var w Writer
	in := w.AppendResponse(nil, ResponseHead{Status: 200, ContentType: "application/json"}, bytes.Repeat([]byte("x"), 600))
	b.SetBytes(int64(len(in)))
	var r Response
	for b.Loop() {
		if _, err := ParseResponse(in, &r, false, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServerReader reads pipelined requests through ServerReader, as a
// server loop does: the allocation figure must be 0.
func BenchmarkServerReader(b *testing.B) {
	b.ReportAllocs()
	src := &repeatConn{data: benchRequest}
	rd := NewServerReader(src, Options{})
	var r Request
	for b.Loop() {
		if err := rd.Next(&r); err != nil {
			b.Fatal(err)
		}
	}
}

// repeatConn returns one copy of data per Read, forever.
type repeatConn struct{ data []byte }

func (c *repeatConn) Read(p []byte) (int, error)      { return copy(p, c.data), nil }
func (c *repeatConn) SetReadDeadline(time.Time) error { return nil }

// BenchmarkServeConn runs the whole server loop (read, parse, handler,
// write) over a fake connection, one request per read: the allocation
// figure per request must be 0.
func BenchmarkServeConn(b *testing.B) {
	b.ReportAllocs()
	body := bytes.Repeat([]byte("x"), 480)
	c := &countConn{repeatConn: repeatConn{data: benchRequest}, left: b.N}
	b.ResetTimer()
	err := ServeConn(c, Options{}, func(req *Request, rep *Reply) {
		rep.ContentType, rep.Body = "application/json", body
	}, nil)
	if err != nil || c.writes != b.N {
		b.Fatalf("%d responses for %d requests, %v", c.writes, b.N, err)
	}
}

// countConn serves left requests, then end of file, and counts writes.
type countConn struct {
	repeatConn
	left, writes int
}

func (c *countConn) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	c.left--
	return c.repeatConn.Read(p)
}

func (c *countConn) Write(p []byte) (int, error)      { c.writes++; return len(p), nil }
func (c *countConn) SetWriteDeadline(time.Time) error { return nil }

// chunkConn returns data in reads of the sizes listed in sizes (each plus
// one, cycled), or without sizes of piece bytes (0: 1), then io.EOF; i
// counts the reads.
type chunkConn struct {
	data  []byte
	sizes []byte
	piece int
	i     int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := max(c.piece, 1)
	if len(c.sizes) > 0 {
		n = int(c.sizes[c.i%len(c.sizes)]) + 1
	}
	c.i++
	n = copy(p, c.data[:min(n, len(c.data))])
	c.data = c.data[n:]
	return n, nil
}

func (c *chunkConn) SetReadDeadline(time.Time) error { return nil }

// FuzzServerReaderChunking checks that however the input is split into
// reads, ServerReader yields the requests (and the final error) that
// parsing the whole input in one buffer yields.
func FuzzServerReaderChunking(f *testing.F) {
	f.Add([]byte("GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"), []byte{0, 5, 200})
	f.Add([]byte("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.0\r\n\r\n"), []byte{1})
	f.Fuzz(func(t *testing.T, data, sizes []byte) {
		type got struct{ method, target, headers, body string }
		var want []got
		var wantErr error
		var r Request
		for rest := data; ; {
			n, err := ParseRequest(rest, &r, Options{})
			if err != nil {
				wantErr = err
				if err == ErrIncomplete {
					wantErr = io.ErrUnexpectedEOF
					if len(rest) == 0 {
						wantErr = io.EOF
					}
				}
				break
			}
			want = append(want, got{string(r.Method), string(r.Target), fmt.Sprintf("%q", r.Headers), string(r.Body)})
			rest = rest[n:]
		}
		// The same with bodies dropped as they arrive: the same requests
		// with no bodies, the same final error.
		for _, discard := range []bool{false, true} {
			rd := NewServerReader(&chunkConn{data: data, sizes: sizes}, Options{DiscardBody: discard})
			for i := 0; ; i++ {
				err := rd.Next(&r)
				if err != nil {
					if i != len(want) || err != wantErr {
						t.Fatalf("discard %v: after %d requests: %v; want %d requests, then %v", discard, i, err, len(want), wantErr)
					}
					break
				}
				w := got{}
				if i < len(want) {
					w = want[i]
				}
				if discard {
					w.body = ""
				}
				if i >= len(want) || (got{string(r.Method), string(r.Target), fmt.Sprintf("%q", r.Headers), string(r.Body)}) != w {
					t.Fatalf("discard %v: request %d: %q %q %q; want %v", discard, i, r.Method, r.Target, r.Body, want)
				}
			}
		}
	})
}

// TestServerReaderDiscardBounded reads 1 MiB bodies, by length and
// chunked, arriving in 64 KiB pieces, with DiscardBody: the read buffer
// never grows past twice the head limit (without it, it grows to the body).
func TestServerReaderDiscardBounded(t *testing.T) {
	const size = DefaultMaxBodyBytes
	byLength := append([]byte(fmt.Sprintf("POST /l HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size)), bytes.Repeat([]byte("b"), size)...)
	chunked, _ := chunkedRequest("", size, 10000)
	data := append(append(byLength, chunked...), "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"...)
	for _, discard := range []bool{false, true} {
		rd := NewServerReader(&chunkConn{data: data, piece: 64 << 10}, Options{DiscardBody: discard})
		var r Request
		largest := 0
		for _, want := range []string{"/l", "/upload", "/next"} {
			if err := rd.Next(&r); err != nil || string(r.Target) != want {
				t.Fatalf("discard %v: %q, %v; want %q", discard, r.Target, err, want)
			}
			if want != "/next" && discard != (r.Body == nil) {
				t.Fatalf("discard %v: body of %d bytes", discard, len(r.Body))
			}
			largest = max(largest, cap(rd.b.Buf), cap(r.chunks))
		}
		if bounded := largest <= 2*DefaultMaxHeaderBytes; bounded != discard {
			t.Fatalf("discard %v: largest buffer %d bytes", discard, largest)
		}
	}
}

// chunkedRequest returns a POST with a chunked body of size bytes in chunks
// of chunk bytes (extra header lines added), and the body.
func chunkedRequest(extra string, size, chunk int) (msg, body []byte) {
	return chunkedMessage("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"+extra+
		"Transfer-Encoding: chunked\r\n\r\n", size, chunk)
}

// TestServerReaderResumes reads a 512 KiB chunked body arriving in 4 KiB
// pieces, then a pipelined request. The decoded part of the input is
// dropped as it is decoded, so the read buffer stays at its initial size:
// nothing is parsed twice.
func TestServerReaderResumes(t *testing.T) {
	msg, body := chunkedRequest("", 512<<10, 3000)
	second := "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"
	c := &chunkConn{data: append(msg, second...), piece: 4 << 10}
	rd := NewServerReader(c, Options{})
	var r Request
	if err := rd.Next(&r); err != nil || !bytes.Equal(r.Body, body) || !r.Chunked {
		t.Fatalf("chunked: %d bytes, chunked %v, %v; want %d bytes", len(r.Body), r.Chunked, err, len(body))
	}
	if got := string(r.Get("content-type")); got != "application/octet-stream" || string(r.Target) != "/upload" {
		t.Fatalf("head after the body: target %q, content-type %q", r.Target, got)
	}
	if cap(rd.b.Buf) > initialBuffer {
		t.Fatalf("read buffer grew to %d bytes for a chunked body, want %d", cap(rd.b.Buf), initialBuffer)
	}
	if c.i < len(msg)/(4<<10) {
		t.Fatalf("%d reads for %d bytes in 4 KiB pieces", c.i, len(msg))
	}
	if err := rd.Next(&r); err != nil || string(r.Target) != "/next" || len(r.Body) != 0 {
		t.Fatalf("second: %q, %d body bytes, %v", r.Target, len(r.Body), err)
	}
	if err := rd.Next(&r); err != io.EOF {
		t.Fatalf("after the input: %v, want io.EOF", err)
	}
}

// TestServerReaderContinue checks that "100 Continue" is sent once per
// request that asks for it, when its head is complete and its body is not,
// whether the body is chunked or has a length, however the input is split.
func TestServerReaderContinue(t *testing.T) {
	const expect = "Expect: 100-continue\r\n"
	chunked, body := chunkedRequest(expect, 10000, 700)
	headLen := bytes.Index(chunked, []byte("\r\n\r\n")) + 4
	length := fmt.Appendf(nil, "POST /upload HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s", expect, len(body), body)
	plain := "GET /plain HTTP/1.1\r\nHost: x\r\n" + expect + "\r\n" // no body: nothing to continue
	for _, tt := range []struct {
		name string
		msg  []byte
		head int
	}{
		{"chunked", chunked, headLen},
		{"length", length, bytes.Index(length, []byte("\r\n\r\n")) + 4},
	} {
		for _, piece := range []int{1, 37, 1000} {
			c := &chunkConn{data: append(append([]byte(plain), tt.msg...), plain...), piece: piece}
			rd := NewServerReader(c, Options{})
			var sent []int // input bytes read when each 100 Continue was sent
			total := len(c.data)
			rd.sendContinue = func() error { sent = append(sent, total-len(c.data)); return nil }
			var r Request
			for i, want := range []string{"/plain", "/upload", "/plain"} {
				if err := rd.Next(&r); err != nil || string(r.Target) != want {
					t.Fatalf("%s, %d-byte reads: request %d: %q, %v; want %q", tt.name, piece, i, r.Target, err, want)
				}
			}
			if len(sent) != 1 {
				t.Fatalf("%s, %d-byte reads: 100 Continue sent %d times, want once", tt.name, piece, len(sent))
			}
			// Sent once the head was in, before the whole body was.
			if at := sent[0] - len(plain); at < tt.head || at >= len(tt.msg) {
				t.Fatalf("%s, %d-byte reads: 100 Continue after %d bytes of a %d-byte request with a %d-byte head",
					tt.name, piece, at, len(tt.msg), tt.head)
			}
		}
	}
}

// BenchmarkServerReaderChunked reads one request with a chunked body in
// 4 KiB reads: time per byte (MB/s) must not fall as the body grows.
func BenchmarkServerReaderChunked(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			msg, _ := chunkedRequest("", size, 1000)
			b.SetBytes(int64(len(msg)))
			c := &chunkConn{piece: 4 << 10}
			rd := NewServerReader(c, Options{})
			var r Request
			for b.Loop() {
				c.data = msg
				if err := rd.Next(&r); err != nil || len(r.Body) != size {
					b.Fatalf("%d bytes, %v", len(r.Body), err)
				}
			}
		})
	}
}

// TestReadersMovedHead checks the slices of a request or response whose
// head was parsed before the read buffer moved (it grew for the body, or
// the pending input was moved to its front).
func TestReadersMovedHead(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 3*initialBuffer)
	request, _ := chunkedRequest("", len(body), 5000)
	response, _ := chunkedResponse(len(body), 5000)
	get := "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"
	noContent := "HTTP/1.1 204 No Content\r\n\r\n"
	for _, tt := range []struct {
		name, first, ctype string
		msg                []byte
	}{
		{"request length", get, "text/plain", fmt.Appendf(nil,
			"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)},
		{"request chunked", get, "application/octet-stream", request},
		{"response length", noContent, "text/plain", fmt.Appendf(nil,
			"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)},
		{"response chunked", noContent, "application/octet-stream", response},
	} {
		c := &chunkConn{data: append([]byte(tt.first), tt.msg...), piece: 1000}
		var m *Message
		var err error
		if tt.first == get {
			rd := NewServerReader(c, Options{})
			var r Request
			if err := rd.Next(&r); err != nil || string(r.Target) != "/first" {
				t.Fatalf("%s: first: %q, %v", tt.name, r.Target, err)
			}
			err = rd.Next(&r)
			if m = &r.Message; err == nil && (string(r.Method) != "POST" || string(r.Target) != "/upload") {
				t.Fatalf("%s: request line %q %q, want POST /upload", tt.name, r.Method, r.Target)
			}
		} else {
			rd := NewClientReader(c, Options{})
			var r Response
			if err := rd.Next(&r, time.Time{}); err != nil || r.Status != 204 {
				t.Fatalf("%s: first: %d, %v", tt.name, r.Status, err)
			}
			err = rd.Next(&r, time.Time{})
			if m = &r.Message; err == nil && r.Status != 200 {
				t.Fatalf("%s: status %d, want 200", tt.name, r.Status)
			}
		}
		if got := string(m.Get("Content-Type")); err != nil || len(m.Body) != len(body) || got != tt.ctype {
			t.Fatalf("%s: second: %d bytes, Content-Type %q, %v; want %d bytes, %q", tt.name, len(m.Body), got, err, len(body), tt.ctype)
		}
	}
}

func TestTargetPath(t *testing.T) {
	for _, tt := range []struct{ target, want string }{
		{"/fruits", "/fruits"},
		{"/fruits?x=1", "/fruits"},
		{"/a%2Fb?q", "/a%2Fb"},
		{"http://x/fruits", "/fruits"},
		{"HTTP://x:8080/fruits?q=http://y/z", "/fruits"},
		{"http://x", ""},
		{"http://x?q", ""},
		{"*", "*"},
		{"example.com:443", "example.com:443"},
		{"", ""},
	} {
		if got := TargetPath(tt.target); got != tt.want {
			t.Errorf("TargetPath(%q) = %q, want %q", tt.target, got, tt.want)
		}
		if got := TargetPath([]byte(tt.target)); string(got) != tt.want {
			t.Errorf("TargetPath([]byte(%q)) = %q, want %q", tt.target, got, tt.want)
		}
	}
}

// FuzzTargetPath: the path is a part of the target with no '?', begins
// with '/' when not empty and the target is in origin or absolute form, and
// the string and byte forms agree.
func FuzzTargetPath(f *testing.F) {
	for _, s := range []string{"/a?b", "http://h/p?q", "h:1", "*", "x://"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		p := TargetPath(target)
		if string(TargetPath([]byte(target))) != p {
			t.Fatalf("string and []byte disagree on %q", target)
		}
		if !strings.Contains(target, p) || strings.Contains(p, "?") {
			t.Fatalf("TargetPath(%q) = %q", target, p)
		}
		if p != "" && strings.Contains(target[:strings.Index(target, p)], "://") && p[0] != '/' {
			t.Fatalf("absolute form %q: path %q", target, p)
		}
	})
}

// clockConn is a countConn that records the deadlines armed on it and,
// when clock is set, tells the time (a Clock).
type clockConn struct {
	countConn
	out        bytes.Buffer
	rdl, wdl   []time.Time
	clock      time.Time
	clockCalls int
}

func (c *clockConn) Write(p []byte) (int, error)        { c.out.Write(p); return c.countConn.Write(p) }
func (c *clockConn) SetReadDeadline(t time.Time) error  { c.rdl = append(c.rdl, t); return nil }
func (c *clockConn) SetWriteDeadline(t time.Time) error { c.wdl = append(c.wdl, t); return nil }
func (c *clockConn) Now() time.Time                     { c.clockCalls++; return c.clock }

// noClock hides a clockConn's Now: a connection that is no Clock.
type noClock struct{ ServerConn }

// TestServeConnClock checks that ServeConn arms its deadlines and dates its
// responses by the connection's clock when it has one (a carrier.Conn), and
// by time.Now when it has none.
func TestServeConnClock(t *testing.T) {
	fixed := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	o := Options{IdleTimeout: time.Minute, WriteTimeout: 5 * time.Second}
	for _, tc := range []struct {
		name  string
		clock bool
	}{
		{"the connection's clock", true},
		{"time.Now", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clockConn{countConn: countConn{repeatConn: repeatConn{data: benchRequest}, left: 2}, clock: fixed}
			var sc ServerConn = c
			if !tc.clock {
				sc = noClock{c}
			}
			before := time.Now()
			if err := ServeConn(sc, o, func(_ *Request, rep *Reply) { rep.Body = []byte("ok") }, nil); err != nil {
				t.Fatal(err)
			}
			if c.writes != 2 || len(c.rdl) == 0 || len(c.wdl) == 0 {
				t.Fatalf("%d writes, %d read and %d write deadlines", c.writes, len(c.rdl), len(c.wdl))
			}
			base := fixed
			if !tc.clock {
				base = before
			}
			date := "Date: " + fixed.Format(dateFormat) // the clock's, never the real one
			if tc.clock != strings.Contains(c.out.String(), date) {
				t.Errorf("responses %q: %q in them should be %v", c.out.String(), date, tc.clock)
			}
			// the idle deadline after the first request, and the write deadline
			rdl, wdl := c.rdl[len(c.rdl)-1], c.wdl[0]
			for _, d := range []struct {
				name     string
				got, min time.Time
				span     time.Duration
			}{
				{"idle read deadline", rdl, base.Add(o.IdleTimeout), deadlineSlack},
				{"write deadline", wdl, base.Add(o.WriteTimeout), deadlineSlack},
			} {
				span := d.span
				if !tc.clock {
					span += time.Since(before)
				}
				if d.got.Before(d.min) || d.got.After(d.min.Add(span)) {
					t.Errorf("%s %v: want from %v to %v later", d.name, d.got, d.min, span)
				}
			}
			if tc.clock == (c.clockCalls == 0) {
				t.Errorf("Now called %d times with a clock: %v", c.clockCalls, tc.clock)
			}
		})
	}
}

// TestServeConnAnswersBeforeWaiting: a response is written before
// ServeConn waits for the rest of a request begun behind it in the same
// read, not held until that request completes (a client that sends the
// rest only after the answer would otherwise wait for a timeout).
func TestServeConnAnswersBeforeWaiting(t *testing.T) {
	for _, tc := range []struct{ name, first, rest string }{
		{"part of the next head", "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HT", "TP/1.1\r\nHost: x\r\n\r\n"},
		{"the next head, part of its body", "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbo", "dy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := pipeConn(t)
			o := Options{IdleTimeout: time.Minute, ReadHeaderTimeout: time.Minute, ReadTimeout: time.Minute}
			done := make(chan error, 1)
			go func() {
				done <- ServeConn(server.(ServerConn), o, func(req *Request, rep *Reply) { rep.Body = append([]byte(nil), req.Target...) }, nil)
			}()
			br := bufio.NewReader(client)
			client.SetDeadline(time.Now().Add(5 * time.Second))
			client.Write([]byte(tc.first))
			for i, want := range []string{"/a", "/b"} {
				if i == 1 {
					client.Write([]byte(tc.rest))
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("answer %d: %v (held until the next request's timeout?)", i, err)
				}
				b, _ := io.ReadAll(resp.Body)
				if string(b) != want {
					t.Fatalf("answer %d: %q, want %q", i, b, want)
				}
			}
			client.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestServeConnRefusedHEAD: a HEAD request ServeConn refuses is answered
// without a body, as any answer to HEAD (RFC 9110 §9.3.2); a refused GET
// has one.
func TestServeConnRefusedHEAD(t *testing.T) {
	for _, tc := range []struct {
		method   string
		wantBody string
	}{
		{"HEAD", ""},
		{"GET", "Request Entity Too Large"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			client, server := pipeConn(t)
			go ServeConn(server.(ServerConn), Options{MaxBodyBytes: 10}, func(_ *Request, rep *Reply) { rep.Body = []byte("ok") }, nil)
			client.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(client, tc.method+" / HTTP/1.1\r\nHost: x\r\nContent-Length: 9999\r\n\r\n")
			b, err := io.ReadAll(client)
			if err != nil {
				t.Fatal(err)
			}
			head, body, _ := strings.Cut(string(b), "\r\n\r\n")
			if !strings.HasPrefix(head, "HTTP/1.1 413 ") || body != tc.wantBody {
				t.Fatalf("answer %q, want a 413 with body %q", b, tc.wantBody)
			}
		})
	}
}
