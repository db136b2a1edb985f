package carrierhttp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// pieceConn is a net.Conn that reads data in pieces of the sizes listed
// (cycled; each plus one byte), then io.EOF.
type pieceConn struct {
	net.Conn // nil: only Read is used
	data     []byte
	sizes    []byte
	i        int
}

// Close does nothing: a 101's body (the connection) is closed after it
// is read.
func (c *pieceConn) Close() error { return nil }

func (c *pieceConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), len(c.data))
	if len(c.sizes) > 0 {
		k = min(k, int(c.sizes[c.i%len(c.sizes)])+1)
		c.i++
	}
	n := copy(p, c.data[:k])
	c.data = c.data[n:]
	return n, nil
}

// viaTransport reads the answer to a method request from data, given in
// pieces, as the Transport does (readResponse, then the body), and returns
// it with its body read whole.
func viaTransport(data []byte, method string, sizes []byte, maxHead int) (*http.Response, []byte, error) {
	cc := newClientConn(poolKey{}, nil)
	cc.rw = &pieceConn{data: bytes.Clone(data), sizes: sizes}
	req := (&http.Request{Method: method, Header: http.Header{}}).WithContext(context.Background())
	b, err := cc.readResponse(req, maxHead)
	if err != nil {
		return nil, nil, err
	}
	(*Transport)(nil).attachBody(cc, req, b)
	resp := &b.resp
	body, err := io.ReadAll(resp.Body)
	if cerr := resp.Body.Close(); cerr != nil {
		return nil, nil, cerr
	}
	return resp, body, err
}

// viaNetHTTP reads the answer to a method request from data with
// http.ReadResponse, skipping interim (1xx) answers as net/http's
// Transport does, and, as its body, what follows a 101's head, which the
// Transport gives as one (the connection).
func viaNetHTTP(data []byte, method string) (*http.Response, []byte, error) {
	br := bufio.NewReader(bytes.NewReader(data))
	req := &http.Request{Method: method}
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode <= 199 && resp.StatusCode != 101 {
			continue
		}
		if resp.StatusCode == 101 {
			body, err := io.ReadAll(br)
			resp.Body = io.NopCloser(bytes.NewReader(body)) // the Transport's is the connection
			return resp, body, err
		}
		body, err := io.ReadAll(resp.Body)
		return resp, body, err
	}
}

// sameResponse compares what the Transport and http.ReadResponse made of
// one answer and returns the first difference, or "" when they agree. A
// value folded over lines (obs-fold) is compared with its runs of spaces
// squeezed: http1 turns each line break into spaces, net/http joins the
// lines with one space, and RFC 9112 §5.2 allows both.
func sameResponse(got, want *http.Response, gotBody, wantBody []byte) string {
	switch {
	case got.Status != want.Status:
		return fmt.Sprintf("Status %q, net/http %q", got.Status, want.Status)
	case got.StatusCode != want.StatusCode || got.Proto != want.Proto ||
		got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor:
		return fmt.Sprintf("status %d %s, net/http %d %s", got.StatusCode, got.Proto, want.StatusCode, want.Proto)
	case !reflect.DeepEqual(squeezeValues(got.Header), squeezeValues(want.Header)):
		return fmt.Sprintf("Header %q, net/http %q", got.Header, want.Header)
	case got.ContentLength != want.ContentLength:
		return fmt.Sprintf("ContentLength %d, net/http %d", got.ContentLength, want.ContentLength)
	case !reflect.DeepEqual(got.TransferEncoding, want.TransferEncoding):
		return fmt.Sprintf("TransferEncoding %q, net/http %q", got.TransferEncoding, want.TransferEncoding)
	case got.Close != want.Close:
		return fmt.Sprintf("Close %v, net/http %v", got.Close, want.Close)
	case !reflect.DeepEqual(got.Trailer, want.Trailer):
		return fmt.Sprintf("Trailer %q, net/http %q", got.Trailer, want.Trailer)
	case !bytes.Equal(gotBody, wantBody):
		return fmt.Sprintf("body %q, net/http %q", gotBody, wantBody)
	case (got.Body == http.NoBody) != (want.Body == http.NoBody):
		return fmt.Sprintf("NoBody %v, net/http %v", got.Body == http.NoBody, want.Body == http.NoBody)
	}
	return ""
}

// squeezeValues returns h with each run of spaces and tabs in its values
// made one space.
func squeezeValues(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := make(http.Header, len(h))
	for k, vs := range h {
		for _, v := range vs {
			out[k] = append(out[k], strings.Join(strings.Fields(v), " "))
		}
	}
	return out
}

// spacedName reports whether a line of data looks like a header line with
// whitespace in its field name: http1 refuses it (RFC 9112 §5.1), net/http
// does not. (Any line: data may hold interim answers' heads too.)
func spacedName(data []byte) bool {
	for _, l := range bytes.Split(data, []byte("\n")) {
		if name, _, ok := bytes.Cut(l, []byte(":")); ok && bytes.ContainsAny(name, " \t") {
			return true
		}
	}
	return false
}

// diffResponse reads data both ways and returns the first difference, or
// "" when they agree or differ only where http1 is deliberately stricter.
func diffResponse(data []byte, method string, sizes []byte) string {
	got, gotBody, err := viaTransport(data, method, sizes, DefaultMaxResponseHeaderBytes)
	want, wantBody, werr := viaNetHTTP(data, method)
	switch {
	case err != nil && werr != nil:
		return ""
	case err != nil:
		msg := err.Error()
		if spacedName(data) || strings.Contains(msg, "trailer") {
			return "" // deliberate: see http1's package doc
		}
		return fmt.Sprintf("error %v, net/http none", err)
	case werr != nil:
		return fmt.Sprintf("no error, net/http %v", werr)
	}
	return sameResponse(got, want, gotBody, wantBody)
}

func TestReadResponseDifferential(t *testing.T) {
	long := strings.Repeat("x", 9000)
	cases := []struct {
		name, data, method string
		wantErr            bool // both must fail
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello", "GET", false},
		{"no reason", "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok", "GET", false},
		{"switching protocols", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x02hi", "GET", false},
		{"switching protocols after 100", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nContent-Length: 5\r\n\r\n", "GET", false},
		{"long reason", "HTTP/1.1 404 Not  Found here\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"spaces before code", "HTTP/1.1   200 OK\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n", "GET", false},
		{"chunked upper", "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", "GET", false},
		{"chunked with length", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", "GET", false},
		{"trailers declared", "HTTP/1.1 200 OK\r\nTrailer: X-Sum, x-other\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-Sum: 1\r\nx-other:  v \r\nX-Extra: e\r\n\r\n", "GET", false},
		{"trailers undeclared", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-Sum: 1\r\nX-Sum: 2\r\n\r\n", "GET", false},
		{"trailer declared, none sent", "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "GET", false},
		{"trailer without chunked", "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nContent-Length: 1\r\n\r\na", "GET", false},
		{"bad trailer key", "HTTP/1.1 200 OK\r\nTrailer: Content-Length\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "GET", true},
		{"close-delimited", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the close", "GET", false},
		{"HTTP/1.0 close-delimited", "HTTP/1.0 200 OK\r\n\r\nold", "GET", false},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", "GET", false},
		{"HTTP/1.0 close kept", "HTTP/1.0 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", "GET", false},
		{"HTTP/1.0 chunked ignored", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", "GET", false},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", "GET", false},
		{"connection close among tokens", "HTTP/1.1 200 OK\r\nConnection: upgrade, Close\r\nContent-Length: 2\r\n\r\nok", "GET", false},
		{"100 continue first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "GET", false},
		{"103 then 100 first", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", "POST", false},
		{"204", "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", "GET", false},
		{"204 chunked", "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\nTrailer: X-A\r\n\r\n", "GET", false},
		{"304", "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 10\r\n\r\n", "GET", false},
		{"HEAD with length", "HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n", "HEAD", false},
		{"HEAD without length", "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n", "HEAD", false},
		{"HEAD chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", "HEAD", false},
		{"duplicate same length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", "GET", false},
		{"duplicate differing length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", "GET", true},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\nok", "GET", true},
		{"empty length", "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", "GET", true},
		{"other coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "GET", true},
		{"two codings", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", true},
		{"bad status line", "HTTP/1.1 2000 OK\r\n\r\n", "GET", true},
		{"no status code", "HTTP/1.1\r\n\r\n", "GET", true},
		{"bad version", "HTTP/x.1 200 OK\r\n\r\n", "GET", true},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", "GET", true},
		{"bad header line", "HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", "GET", true},
		{"control byte in value", "HTTP/1.1 200 OK\r\nX: a\x01b\r\nContent-Length: 0\r\n\r\n", "GET", true},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "GET", true},
		{"cut head", "HTTP/1.1 200 OK\r\nContent-Le", "GET", true},
		{"nothing", "", "GET", true},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "GET", true},
		{"cut chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "GET", true},
		{"canonical keys", "HTTP/1.1 200 OK\r\ncontent-type: a\r\nX-MIXED-case: b\r\nx_under: c\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"repeated field", "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"pragma", "HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"folded value", "HTTP/1.1 200 OK\r\nX-Fold: a,\r\n  b\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"bare LF lines", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", "GET", false},
		{"long value", "HTTP/1.1 200 OK\r\nX-Long: " + long + "\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"large body", "HTTP/1.1 200 OK\r\nContent-Length: 9000\r\n\r\n" + long, "GET", false},
		{"HTTP/2.0 line", "HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n", "GET", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, sizes := range [][]byte{nil, {0}, {6, 2, 30}} {
				if d := diffResponse([]byte(tc.data), tc.method, sizes); d != "" {
					t.Fatalf("pieces %v: %s\nfor %q", sizes, d, tc.data)
				}
				_, _, err := viaTransport([]byte(tc.data), tc.method, sizes, DefaultMaxResponseHeaderBytes)
				if (err != nil) != tc.wantErr {
					t.Fatalf("pieces %v: error %v, want one: %v", sizes, err, tc.wantErr)
				}
			}
		})
	}
}

func TestReadResponseLimits(t *testing.T) {
	huge := "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 64<<10) + "\r\nContent-Length: 0\r\n\r\n"
	if _, _, err := viaTransport([]byte(huge), "GET", nil, 16<<10); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("a 64 KiB head under a 16 KiB limit: %v, want a too-large error", err)
	}
	if resp, _, err := viaTransport([]byte(huge), "GET", nil, 128<<10); err != nil || len(resp.Header.Get("X-Big")) != 64<<10 {
		t.Errorf("a 64 KiB head under a 128 KiB limit: %v", err)
	}
	// Interim answers count against the head limit together with the
	// final head, as in net/http's Transport: 50 of 28 bytes pass under
	// 64 KiB and fail under 1 KiB.
	var many strings.Builder
	for range 50 {
		many.WriteString("HTTP/1.1 103 Early Hints\r\n\r\n")
	}
	many.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	if resp, _, err := viaTransport([]byte(many.String()), "GET", nil, 64<<10); err != nil || resp.StatusCode != 200 {
		t.Errorf("50 interim answers under a 64 KiB limit: %v", err)
	}
	if _, _, err := viaTransport([]byte(many.String()), "GET", nil, 1<<10); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("50 interim answers under a 1 KiB limit: %v, want a too-large error", err)
	}
	// 101 Switching Protocols is final, as in net/http's Transport: its
	// body is the connection, to read and write, what followed the head
	// first.
	for _, sizes := range [][]byte{nil, {3}} {
		cc := newClientConn(poolKey{}, nil)
		cc.rw = &pieceConn{data: []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\nfirst frames"), sizes: sizes}
		req := (&http.Request{Method: "GET", Header: http.Header{}}).WithContext(context.Background())
		b, err := cc.readResponse(req, 1<<20)
		if err != nil || b.resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("101: %v", err)
		}
		(*Transport)(nil).attachBody(cc, req, b)
		rwc, ok := b.resp.Body.(io.ReadWriteCloser)
		if !ok {
			t.Fatalf("101: the body is a %T, not an io.ReadWriteCloser", b.resp.Body)
		}
		if got, err := io.ReadAll(rwc); string(got) != "first frames" || err != nil {
			t.Errorf("101 (pieces %v): the body reads %q %v, want what followed the head", sizes, got, err)
		}
	}
}

// TestResponseBodyAfterClose checks that a closed body reads nothing more.
func TestResponseBodyAfterClose(t *testing.T) {
	cc := newClientConn(poolKey{}, nil)
	cc.rw = &pieceConn{data: []byte("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd")}
	req := (&http.Request{Method: "GET"}).WithContext(context.Background())
	b, err := cc.readResponse(req, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	(*Transport)(nil).attachBody(cc, req, b)
	resp := &b.resp
	p := make([]byte, 2)
	if n, err := resp.Body.Read(p); n != 2 || err != nil {
		t.Fatalf("first read: %d %v", n, err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(p); err != errReadOnClosedResBody {
		t.Fatalf("read after close: %v, want %v", err, errReadOnClosedResBody)
	}
}

func FuzzReadResponse(f *testing.F) {
	seeds := []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n3\r\nabc\r\n0\r\nX-T: v\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil the close",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\nConnection: close\r\nPragma: no-cache\r\n\r\nx",
		"HTTP/1.1 304 Not Modified\r\nX-Fold: a\r\n b\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi",
	}
	for _, s := range seeds {
		f.Add([]byte(s), false, []byte{3, 0})
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n"), true, []byte{})
	f.Fuzz(func(t *testing.T, data []byte, head bool, sizes []byte) {
		if len(data) > 8<<10 {
			return
		}
		method := "GET"
		if head {
			method = "HEAD"
		}
		done := make(chan string, 1)
		go func() { done <- diffResponse(data, method, sizes) }()
		select {
		case d := <-done:
			if d != "" {
				t.Fatalf("%s\nfor %q", d, data)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer in 10s for %q", data)
		}
	})
}
