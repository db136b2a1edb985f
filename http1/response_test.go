package http1

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseResponseHead(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		head    bool
		wantErr error // nil, ErrIncomplete or a specific *Error
		status  int
		length  int64
		chunked bool
		keep    bool
		n       int // head length; 0: all of in
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", false, nil, 200, 12, false, true, 0},
		{"body follows", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", false, nil, 200, 2, false, true, 38},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n", false, nil, 200, -1, true, true, 0},
		{"until close", "HTTP/1.1 200 OK\r\n\r\n", false, nil, 200, -1, false, false, 0},
		{"head", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", true, nil, 200, 0, false, true, 0},
		{"head without length", "HTTP/1.1 200 OK\r\n\r\n", true, nil, 200, 0, false, true, 0},
		{"304", "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", false, nil, 304, 0, false, true, 0},
		{"interim", "HTTP/1.1 100 Continue\r\n\r\n", false, nil, 100, 0, false, true, 0},
		{"http10", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false, nil, 200, 0, false, false, 0},
		{"http10 keep-alive", "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", false, nil, 200, 0, false, true, 0},
		{"close", "HTTP/1.1 200 OK\r\nConnection: x, close\r\nContent-Length: 0\r\n\r\n", false, nil, 200, 0, false, false, 0},
		{"folded close", "HTTP/1.1 200 OK\r\nConnection: x,\r\n close\r\nContent-Length: 0\r\n\r\n", false, nil, 200, 0, false, false, 0},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 1\n\n", false, nil, 200, 1, false, true, 0},
		{"incomplete line", "HTTP/1.1 200 OK\r\nContent-Le", false, ErrIncomplete, 0, 0, false, false, 0},
		{"incomplete head", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n", false, ErrIncomplete, 0, 0, false, false, 0},
		{"bad status line", "SSH-2.0-OpenSSH\r\n", false, errBadStatusLine, 0, 0, false, false, 0},
		{"bad code", "HTTP/1.1 2x0 OK\r\n", false, errBadStatusLine, 0, 0, false, false, 0},
		{"bad version", "HTTP/1.x 200 OK\r\n", false, errBadVersion, 0, 0, false, false, 0},
		{"bad line before the end", "HTTP/1.1 200 OK\r\nBad Name: x\r\nMore", false, errBadHeader, 0, 0, false, false, 0},
		{"fold first", "HTTP/1.1 200 OK\r\n x\r\n\r\n", false, errBadHeader, 0, 0, false, false, 0},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", false, errBadLength, 0, 0, false, false, 0},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", false, errLengths, 0, 0, false, false, 0},
		{"gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false, errCoding, 0, 0, false, false, 0},
		{"too long", "HTTP/1.1 200 OK\r\nX: " + string(bytes.Repeat([]byte("a"), DefaultMaxHeaderBytes)), false, errResponseTooLong, 0, 0, false, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Response
			n, err := ParseResponseHead([]byte(tt.in), &r, tt.head, Options{})
			if err != tt.wantErr {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			want := tt.n
			if want == 0 {
				want = len(tt.in)
			}
			if n != want || r.Status != tt.status || r.ContentLength != tt.length || r.Chunked != tt.chunked || r.KeepAlive != tt.keep {
				t.Fatalf("n %d status %d length %d chunked %v keep %v; want %d %d %d %v %v",
					n, r.Status, r.ContentLength, r.Chunked, r.KeepAlive, want, tt.status, tt.length, tt.chunked, tt.keep)
			}
		})
	}
}

// TestParseResponseHeadFold checks that each obs-fold in a response head
// is replaced with spaces in the buffer (RFC 9112 §5.2), so a folded value
// has no CR or LF, and that parsing the rewritten head again, whole or in
// pieces, gives the same fields.
func TestParseResponseHeadFold(t *testing.T) {
	tests := []struct{ name, in, rewritten, value string }{
		{"CRLF", "HTTP/1.1 200 OK\r\nX-F: a,\r\n b\r\nContent-Length: 0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nX-F: a,   b\r\nContent-Length: 0\r\n\r\n", "a,   b"},
		{"bare LF", "HTTP/1.1 200 OK\nX-F: a\n\tb\n\n", "HTTP/1.1 200 OK\nX-F: a \tb\n\n", "a \tb"},
		{"two folds", "HTTP/1.1 200 OK\r\nX-F: a\r\n b\r\n  c \r\n\r\n",
			"HTTP/1.1 200 OK\r\nX-F: a   b    c \r\n\r\n", "a   b    c"},
		{"empty fold", "HTTP/1.1 200 OK\r\nX-F: a\r\n \r\n\r\n", "HTTP/1.1 200 OK\r\nX-F: a   \r\n\r\n", "a"},
		{"empty first line", "HTTP/1.1 200 OK\r\nX-F:\r\n b\r\n\r\n", "HTTP/1.1 200 OK\r\nX-F:   b\r\n\r\n", "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := []byte(tt.in)
			var r Response
			n, err := ParseResponseHead(buf, &r, false, Options{})
			if err != nil || n != len(buf) {
				t.Fatalf("n, err = %d, %v; want %d, nil", n, err, len(buf))
			}
			if v := r.Get("x-f"); bytes.ContainsAny(v, "\r\n") || string(v) != tt.value {
				t.Fatalf("value %q, want %q", v, tt.value)
			}
			if string(buf) != tt.rewritten {
				t.Fatalf("buffer after parsing %q, want %q", buf, tt.rewritten)
			}
			want := outcome(n, err, &r)
			var again Response
			if n, err := ParseResponseHead(buf, &again, false, Options{}); outcome(n, err, &again) != want {
				t.Fatalf("parsed again: %+v, first: %+v", outcome(n, err, &again), want)
			}
			if n, err := parseInPieces([]byte(tt.in), []byte{0}, false, &again); outcome(n, err, &again) != want {
				t.Fatalf("in pieces: %+v, whole: %+v", outcome(n, err, &again), want)
			}
		})
	}
}

// headOutcome is what a head parse yields, for comparing two ways of
// getting there.
type headOutcome struct {
	n               int
	err             error
	status, major   int
	length          int64
	chunked, keep   bool
	reason, headers string
}

func outcome(n int, err error, r *Response) headOutcome {
	o := headOutcome{n: n, err: err}
	if err == nil {
		o.status, o.major, o.length, o.chunked, o.keep, o.reason = r.Status, r.Major, r.ContentLength, r.Chunked, r.KeepAlive, string(r.Reason)
		o.headers = fmt.Sprintf("%q", r.Headers)
	}
	return o
}

// parseInPieces feeds data to a HeadParser in pieces of the sizes listed
// (cycled), in a buffer grown by append, until it answers other than
// ErrIncomplete or data runs out.
func parseInPieces(data, sizes []byte, head bool, r *Response) (int, error) {
	var hp HeadParser
	var buf []byte
	for i := 0; ; i++ {
		k := len(data) - len(buf)
		if len(sizes) > 0 {
			k = min(k, int(sizes[i%len(sizes)])+1)
		}
		buf = append(buf, data[len(buf):len(buf)+k]...)
		n, err := hp.Parse(buf, r, head, Options{})
		if err != ErrIncomplete || len(buf) == len(data) {
			return n, err
		}
	}
}

// FuzzResponseHead checks the shared head parser: it never panics, and
// parsing a head that arrives in pieces, resuming each time, gives what
// parsing it whole gives.
func FuzzResponseHead(f *testing.F) {
	addCorpus(f, "responses")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, head := range []bool{false, true} {
			var whole, split Response
			// A copy: the parser rewrites each obs-fold with spaces, and
			// the pieces come from the bytes as received.
			n, err := ParseResponseHead(bytes.Clone(data), &whole, head, Options{})
			want := outcome(n, err, &whole)
			if err == nil && (n > len(data) || n < len("HTTP/1.1 200\n\n")) {
				t.Fatalf("head length %d of %d bytes", n, len(data))
			}
			for _, sizes := range [][]byte{{0}, {2, 6}, {30}} {
				n, err := parseInPieces(data, sizes, head, &split)
				if got := outcome(n, err, &split); got != want {
					t.Fatalf("in pieces %v: %+v; whole: %+v", sizes, got, want)
				}
			}
		}
	})
}

func TestParseResponseHeadDoesNotAllocate(t *testing.T) {
	in := benchResponse()
	var r Response
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ParseResponseHead(in, &r, false, Options{}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per head, want 0", allocs)
	}
}

// decodeInPieces decodes a chunked body given in pieces of the sizes listed
// (cycled) and returns the data, the bytes consumed and the outcome, with
// the trailer section kept (KeepTrailer) in trailer.
func decodeInPieces(in, sizes []byte) (data []byte, n int, done bool, err error) {
	data, n, done, _, err = decodeTrailerInPieces(in, sizes)
	return data, n, done, err
}

// decodeTrailerInPieces is decodeInPieces that returns the trailer section
// too.
func decodeTrailerInPieces(in, sizes []byte) (data []byte, n int, done bool, trailer string, err error) {
	d := ChunkedDecoder{MaxBody: 1 << 20, KeepTrailer: true}
	for i := 0; n < len(in) && !d.Done() && err == nil; i++ {
		k := len(in) - n
		if len(sizes) > 0 {
			k = min(k, int(sizes[i%len(sizes)])+1)
		}
		var used int
		data, used, err = d.AppendDecoded(data, in[n:n+k])
		n += used
	}
	return data, n, d.Done(), string(d.Trailer()), err
}

func TestChunkedDecoder(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // decoded body
		rest     int    // bytes left after the body
		err      error  // nil, ErrIncomplete or an *Error
	}{
		{"simple", "3\r\nabc\r\n0\r\n\r\n", "abc", 0, nil},
		{"extension", "3;x=y\r\nabc\r\n1;q \r\nd\r\n0\r\n\r\n", "abcd", 0, nil},
		{"trailing OWS", "3 \t\r\nabc\r\n0\r\n\r\n", "abc", 0, nil},
		{"upper hex", "A\r\n0123456789\r\n0\r\n\r\n", "0123456789", 0, nil},
		{"trailer", "1\r\na\r\n0\r\nX-T: v\r\nY:\r\n\r\n", "a", 0, nil},
		{"next message", "1\r\na\r\n0\r\n\r\nGET", "a", 3, nil},
		{"trailer with bare LF lines", "0\r\nA: b\nC: d\r\n\r\n", "", 0, nil},
		{"bare LF end", "1\r\na\r\n0\r\n\nGET / HTTP/1.1\r\n\r\n", "", 0, errTrailer},
		{"bare LF after a trailer", "0\r\nA: b\r\n\n", "", 0, errTrailer},
		{"CRLF after a bare LF line", "0\r\nA: b\n\r\n", "", 0, errTrailer},
		{"incomplete data", "5\r\nab", "", 0, ErrIncomplete},
		{"leading OWS", " 3\r\nabc\r\n0\r\n\r\n", "", 0, errChunked},
		{"OWS before extension", "3 ;x\r\nabc\r\n0\r\n\r\n", "", 0, errChunked},
		{"bare LF", "3\nabc\r\n0\r\n\r\n", "", 0, errChunked},
		{"CR inside", "3\rx\r\nabc\r\n0\r\n\r\n", "", 0, errChunked},
		{"no digits", ";x\r\n", "", 0, errChunked},
		{"17 digits", "00000000000000001\r\n", "", 0, errChunked},
		{"data without CRLF", "3\r\nabcX\r\n", "", 0, errChunked},
		{"too large", "100001\r\n", "", 0, errBodyTooLarge},
		{"bad trailer", "0\r\nBad Name: v\r\n\r\n", "", 0, errBadHeader},
		{"folded trailer", "0\r\nA: b\r\n c\r\n\r\n", "", 0, errTrailer},
		{"long trailer", "0\r\nX: " + string(bytes.Repeat([]byte("a"), maxTrailer)), "", 0, errTrailer},
		{"long line", "1;" + string(bytes.Repeat([]byte("e"), maxChunkLine)), "", 0, errChunked},
	}
	// The trailer sections kept (KeepTrailer) where not empty.
	trailers := map[string]string{
		"trailer":                    "X-T: v\r\nY:\r\n",
		"trailer with bare LF lines": "A: b\nC: d\r\n",
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, sizes := range [][]byte{nil, {0}, {4, 1}} {
				data, n, done, trailer, err := decodeTrailerInPieces([]byte(tt.in), sizes)
				if err == nil && !done {
					err = ErrIncomplete
				}
				if err != tt.err || err == nil && (string(data) != tt.want || len(tt.in)-n != tt.rest || trailer != trailers[tt.name]) {
					t.Fatalf("pieces %v: %q, trailer %q, %d left, %v; want %q, trailer %q, %d left, %v",
						sizes, data, trailer, len(tt.in)-n, err, tt.want, trailers[tt.name], tt.rest, tt.err)
				}
			}
		})
	}
}

// FuzzChunkedDecoder checks that the outcome of decoding does not depend
// on how the bytes are split.
func FuzzChunkedDecoder(f *testing.F) {
	f.Add([]byte("3;x\r\nabc\r\n0\r\nT: v\r\n\r\nrest"), []byte{0})
	f.Add([]byte("1\r\na\r\n0\r\nT: v\nU: w\r\n\r\n"), []byte{1, 3})
	f.Fuzz(func(t *testing.T, in, sizes []byte) {
		data, n, done, trailer, err := decodeTrailerInPieces(in, nil)
		sdata, sn, sdone, strailer, serr := decodeTrailerInPieces(in, sizes)
		if !bytes.Equal(data, sdata) || n != sn || done != sdone || err != serr || trailer != strailer {
			t.Fatalf("whole: %q %d %v %q %v; in pieces %v: %q %d %v %q %v", data, n, done, trailer, err, sizes, sdata, sn, sdone, strailer, serr)
		}
		// The kept trailer is the end of the body, less the empty line.
		if done && !strings.HasSuffix(string(in[:n]), trailer+"\r\n") {
			t.Fatalf("trailer %q is not the end of %q", trailer, in[:n])
		}
	})
}

// FuzzClientReaderChunking checks that however the input is split into
// reads, ClientReader yields the responses (and the final error) that
// ParseResponse yields on the whole input, but for the interim (1xx, not
// 101) ones, which ClientReader drops, up to max1xx in a row.
func FuzzClientReaderChunking(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "responses", "*.http"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, []byte{3, 0, 50})
	}
	f.Fuzz(func(t *testing.T, data, sizes []byte) {
		type got struct {
			status        int
			headers, body string
			keep          bool
		}
		var want []got
		var wantErr error
		var r Response
		interim := 0                       // in a row
		for rest := bytes.Clone(data); ; { // the parser rewrites obs-folds
			n, err := ParseResponse(rest, &r, true, Options{})
			if err != nil {
				wantErr = err
				if err == ErrIncomplete {
					wantErr = io.ErrUnexpectedEOF
				}
				break
			}
			rest = rest[n:]
			if r.Status/100 == 1 && r.Status != 101 {
				if interim++; interim > max1xx {
					wantErr = errTooMany1xx
					break
				}
				continue
			}
			interim = 0
			want = append(want, got{r.Status, fmt.Sprintf("%q", r.Headers), string(r.Body), r.KeepAlive})
		}
		rd := NewClientReader(&chunkConn{data: data, sizes: sizes}, Options{})
		for i := 0; ; i++ {
			err := rd.Next(&r, time.Time{})
			if err != nil {
				if i != len(want) || (err != wantErr && !(wantErr == errTooMany1xx && strings.Contains(err.Error(), "interim"))) {
					t.Fatalf("after %d responses: %v; want %d responses, then %v", i, err, len(want), wantErr)
				}
				return
			}
			if i >= len(want) || (got{r.Status, fmt.Sprintf("%q", r.Headers), string(r.Body), r.KeepAlive}) != want[i] {
				t.Fatalf("response %d: %d %q %v; want %v", i, r.Status, r.Body, r.KeepAlive, want)
			}
		}
	})
}

// errTooMany1xx stands for ClientReader's error after more than max1xx
// interim responses in a row, in FuzzClientReaderChunking's expectations.
var errTooMany1xx = errors.New("too many interim responses")

// TestClientReaderInterim: interim responses before a response are
// dropped (a backend's "100 Continue" or "103 Early Hints" that the
// client did not ask for), 101 is a response, and more than max1xx of
// them in a row is an error.
func TestClientReaderInterim(t *testing.T) {
	const ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	for _, tc := range []struct {
		name, in   string
		wantStatus int
		wantErr    string
	}{
		{"100 then 200", "HTTP/1.1 100 Continue\r\n\r\n" + ok, 200, ""},
		{"103 then 200", "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n" + ok, 200, ""},
		{"five interim", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", max1xx) + ok, 200, ""},
		{"six interim", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", max1xx+1) + ok, 0, "interim"},
		{"101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", 101, ""},
		{"interim then end", "HTTP/1.1 100 Continue\r\n\r\n", 0, io.ErrUnexpectedEOF.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Response
			err := NewClientReader(&chunkConn{data: []byte(tc.in), piece: 7}, Options{}).Next(&r, time.Time{})
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Next: %v, want an error with %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("Next: %v", err)
			case r.Status != tc.wantStatus:
				t.Fatalf("status %d, want %d", r.Status, tc.wantStatus)
			case r.Status == 200 && string(r.Body) != "ok":
				t.Fatalf("body %q", r.Body)
			}
		})
	}
}

// chunkedResponse returns a response with a chunked body of size bytes in
// chunks of chunk bytes, and the body.
func chunkedResponse(size, chunk int) (msg, body []byte) {
	return chunkedMessage("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n", size, chunk)
}

// chunkedMessage returns head followed by a chunked body of size bytes in
// chunks of chunk bytes, and the body.
func chunkedMessage(head string, size, chunk int) (msg, body []byte) {
	msg = []byte(head)
	for len(body) < size {
		k := min(chunk, size-len(body))
		piece := bytes.Repeat([]byte{byte('a' + len(body)%26)}, k)
		msg = strconv.AppendInt(msg, int64(k), 16)
		msg = append(msg, "\r\n"...)
		msg = append(msg, piece...)
		msg = append(msg, "\r\n"...)
		body = append(body, piece...)
	}
	return append(msg, "0\r\n\r\n"...), body
}

// TestClientReaderResumes reads a 1 MiB chunked body arriving in 4 KiB
// pieces. The decoded part of the input is dropped as it is decoded, so
// the read buffer stays at its initial size: nothing is parsed twice.
func TestClientReaderResumes(t *testing.T) {
	msg, body := chunkedResponse(1<<20, 3000)
	second := "HTTP/1.1 204 No Content\r\n\r\n"
	c := &chunkConn{data: append(msg, second...), piece: 4 << 10}
	rd := NewClientReader(c, Options{})
	var r Response
	if err := rd.Next(&r, time.Time{}); err != nil || !bytes.Equal(r.Body, body) || !r.Chunked {
		t.Fatalf("chunked: %d bytes, chunked %v, %v; want %d bytes", len(r.Body), r.Chunked, err, len(body))
	}
	if got := string(r.Get("content-type")); got != "application/octet-stream" {
		t.Fatalf("header after the body: %q", got)
	}
	if cap(rd.b.Buf) > initialBuffer {
		t.Fatalf("read buffer grew to %d bytes for a chunked body, want %d", cap(rd.b.Buf), initialBuffer)
	}
	if c.i < len(msg)/(4<<10) {
		t.Fatalf("%d reads for %d bytes in 4 KiB pieces", c.i, len(msg))
	}
	if err := rd.Next(&r, time.Time{}); err != nil || r.Status != 204 {
		t.Fatalf("second: %d, %v", r.Status, err)
	}
}

func benchResponse() []byte {
	var w Writer
	return w.AppendResponse(nil, ResponseHead{Status: 200, ContentType: "application/json"}, bytes.Repeat([]byte("x"), 600))
}

// BenchmarkParseResponseHead parses a head like the server's backend
// client gets (synthetic) and nginx's answer the load generator gets.
func BenchmarkParseResponseHead(b *testing.B) {
	nginx, err := os.ReadFile(filepath.Join("testdata", "responses", "nginx.http"))
	if err != nil {
		b.Fatal(err)
	}
	for _, bm := range []struct {
		name string
		in   []byte
	}{{"synthetic", benchResponse()}, {"nginx", nginx}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bm.in)))
			var r Response
			for b.Loop() {
				if _, err := ParseResponseHead(bm.in, &r, false, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClientReaderChunked reads one response with a chunked body in
// 4 KiB reads: time per byte (MB/s) must not fall as the body grows.
func BenchmarkClientReaderChunked(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			msg, _ := chunkedResponse(size, 1000)
			b.SetBytes(int64(len(msg)))
			c := &chunkConn{piece: 4 << 10}
			rd := NewClientReader(c, Options{})
			var r Response
			for b.Loop() {
				c.data = msg
				rd.Reset(c)
				if err := rd.Next(&r, time.Time{}); err != nil || len(r.Body) != size {
					b.Fatalf("%d bytes, %v", len(r.Body), err)
				}
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	cases := []struct {
		code string
		want int
		ok   bool
	}{
		{"200", 200, true}, {"+20", 20, true}, {"-00", 0, true}, {"000", 0, true},
		{"-01", 0, false}, {"20", 0, false}, {"2000", 0, false}, {"2x0", 0, false}, {"--0", 0, false}, {"+-0", 0, false},
	}
	for _, tc := range cases {
		n, ok := parseStatus([]byte(tc.code))
		if n != tc.want || ok != tc.ok {
			t.Errorf("parseStatus(%q) = %d, %v; want %d, %v", tc.code, n, ok, tc.want, tc.ok)
		}
		// strconv.Atoi, as net/http uses it, agrees.
		an, err := strconv.Atoi(tc.code)
		if gok := len(tc.code) == 3 && err == nil && an >= 0; gok != tc.ok || gok && an != tc.want {
			t.Errorf("%q: net/http's reading %d, %v differs", tc.code, an, gok)
		}
	}
}

// TestDate: Date renders now's second, keeps its rendering while now stays
// in that second (a stale rendering planted in it shows), and renders again
// for another second, earlier ones included (a step of the wall clock).
func TestDate(t *testing.T) {
	var d Date
	at := time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)
	planted := "Sat, 01 Jan 2000 00:00:00 GMT"
	for _, tc := range []struct {
		name  string
		now   time.Time
		plant bool // plant a rendering before the call
		want  string
	}{
		{"first", at, false, "Mon, 02 Jan 2006 15:04:05 GMT"},
		{"same second: kept", at.Add(999 * time.Millisecond), true, planted},
		{"next second", at.Add(time.Second), false, "Mon, 02 Jan 2006 15:04:06 GMT"},
		{"earlier second", at.Add(-time.Hour), false, "Mon, 02 Jan 2006 14:04:05 GMT"},
		{"another zone", at.In(time.FixedZone("X", 3600)).Add(time.Hour), false, "Mon, 02 Jan 2006 16:04:05 GMT"},
	} {
		if tc.plant {
			copy(d.buf[:], planted)
		}
		if got := string(d.Append([]byte("Date: "), tc.now)); got != "Date: "+tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, "Date: "+tc.want)
		}
	}
}
