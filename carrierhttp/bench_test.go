package carrierhttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
)

// fixedBody is the trivial handler of the benchmarks: a fixed body, its
// type and length set, as a health check answers.
var fixedBody = []byte("OK")

func fixedHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = contentTypeText
		w.Write(fixedBody)
	})
}

// contentTypeText is set as a slice so that the handler allocates nothing.
var contentTypeText = []string{"text/plain; charset=utf-8"}

// BenchmarkFixedBody measures one keep-alive client's request-response
// round trips to the fixed-body handler, on the carrier host and on
// net/http's server beside it. Allocations are the whole process's (both
// servers' included; the client allocates nothing per request).
func BenchmarkFixedBody(b *testing.B) {
	b.Run("carrierhttp", func(b *testing.B) {
		_, addr := startCarrier(b, fixedHandler(), nil)
		benchRoundTrips(b, addr)
	})
	b.Run("nethttp", func(b *testing.B) {
		benchRoundTrips(b, startNetHTTP(b, fixedHandler()))
	})
}

// BenchmarkTypicalHandler is a handler as usually written (Header().Set,
// io.WriteString, reading a query parameter and a header) on a request
// with a browser's handful of headers, on both servers.
func BenchmarkTypicalHandler(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, r.URL.Query().Get("name")+" "+r.Header.Get("User-Agent"))
	})
	req := "GET /hello?name=spindle HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench/1.0\r\nAccept: */*\r\nAccept-Encoding: gzip\r\nConnection: keep-alive\r\n\r\n"
	b.Run("carrierhttp", func(b *testing.B) {
		_, addr := startCarrier(b, h, nil)
		benchRequest(b, addr, req)
	})
	b.Run("nethttp", func(b *testing.B) {
		benchRequest(b, startNetHTTP(b, h), req)
	})
}

// benchRoundTrips sends b.N requests on one connection, each after the
// previous answer, reading answers of the first answer's length (the Date
// field keeps it constant).
func benchRoundTrips(b *testing.B, addr string) {
	benchRequest(b, addr, "GET /health HTTP/1.1\r\nHost: bench\r\n\r\n")
}

// benchRequest is benchRoundTrips with the request raw.
func benchRequest(b *testing.B, addr, raw string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte(raw)
	if _, err := c.Write(req); err != nil {
		b.Fatal(err)
	}
	cr := &countingReader{r: c}
	resp, err := http.ReadResponse(bufio.NewReader(cr), nil)
	if err != nil {
		b.Fatal(err)
	}
	io.ReadAll(resp.Body)
	size := int(cr.n)
	buf := make([]byte, size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// countingReader reads one byte at a time, so that the bufio.Reader above
// it never reads beyond the first answer, and counts them.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p[:1])
	c.n += int64(n)
	return n, err
}
