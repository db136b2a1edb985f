package carrierhttp

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/http1"
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
// round trips to the fixed-body handler, on the carrier host, on
// http1.ServeConn with the same answer (the carrier mode's code path) and
// on net/http's server. Allocations are the whole process's (both
// servers' included; the client allocates nothing per request).
func BenchmarkFixedBody(b *testing.B) { benchFixedServers(b, benchRoundTrips) }

// benchFixedServers runs client against each server of the fixed-body
// answer: carrierhttp, http1.ServeConn (the carrier mode's code path) and
// net/http.
func benchFixedServers(b *testing.B, client func(b *testing.B, addr string)) {
	b.Run("carrierhttp", func(b *testing.B) {
		_, addr := startCarrier(b, fixedHandler(), nil)
		client(b, addr)
	})
	b.Run("http1", func(b *testing.B) {
		client(b, startHTTP1(b))
	})
	b.Run("nethttp", func(b *testing.B) {
		client(b, startNetHTTP(b, fixedHandler()))
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
	b.Run("carrierhttp", func(b *testing.B) {
		_, addr := startCarrier(b, h, nil)
		benchRequest(b, addr, typicalRequest)
	})
	b.Run("nethttp", func(b *testing.B) {
		benchRequest(b, startNetHTTP(b, h), typicalRequest)
	})
}

// typicalRequest is a browser's GET with a handful of headers.
const typicalRequest = "GET /hello?name=spindle HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench/1.0\r\nAccept: */*\r\nAccept-Encoding: gzip\r\nConnection: keep-alive\r\n\r\n"

// benchRoundTrips sends b.N requests on one connection, each after the
// previous answer, reading answers of the first answer's length (the Date
// field keeps it constant).
func benchRoundTrips(b *testing.B, addr string) {
	benchRequest(b, addr, "GET /health HTTP/1.1\r\nHost: bench\r\n\r\n")
}

// benchRequest is benchRoundTrips with the request raw.
func benchRequest(b *testing.B, addr, raw string) {
	c, size := dialBench(b, addr, raw)
	req := []byte(raw)
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

// dialBench connects to addr, sends raw once and returns the connection
// (closed at the benchmark's end) and the size of the answer, which every
// later answer to raw has too (the Date field's length is fixed).
func dialBench(b *testing.B, addr, raw string) (net.Conn, int) {
	c := dial(b, addr)
	if _, err := c.Write([]byte(raw)); err != nil {
		b.Fatal(err)
	}
	cr := &countingReader{r: c}
	resp, err := http.ReadResponse(bufio.NewReader(cr), nil)
	if err != nil {
		b.Fatal(err)
	}
	io.ReadAll(resp.Body)
	return c, int(cr.n)
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

// pipelineDepth is how many requests BenchmarkPipelined sends in one write:
// enough that the two system calls per batch are a small part of each
// request's cost, which is then the server's code path.
const pipelineDepth = 32

// BenchmarkPipelined sends batches of pipelineDepth requests for the
// fixed-body answer and reads the answers; ns/op is per request. Beside
// carrierhttp and net/http it runs http1.ServeConn with the same answer
// (the carrier mode's code path, no *http.Request at all), the reference
// of issue 10's target.
func BenchmarkPipelined(b *testing.B) { benchFixedServers(b, benchPipelined) }

// startHTTP1 serves the fixed-body answer with http1.ServeConn on a fresh
// group of carriers.
func startHTTP1(b *testing.B) string {
	b.Helper()
	g, err := carrier.New(carrier.Options{Carriers: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	o := http1.Options{}.WithDefaults()
	l, err := g.Listen("127.0.0.1:0", func(t *carrier.Task, c *carrier.Conn) {
		http1.ServeConn(c, o, func(req *http1.Request, rep *http1.Reply) {
			rep.ContentType = contentTypeText[0]
			rep.Body = fixedBody
		}, nil)
	}, carrier.ListenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return l.Addr().String()
}

// benchPipelined is BenchmarkPipelined's client: b.N requests in batches.
func benchPipelined(b *testing.B, addr string) {
	one := "GET /health HTTP/1.1\r\nHost: bench\r\n\r\n"
	c, size := dialBench(b, addr, one)
	batch := []byte(strings.Repeat(one, pipelineDepth))
	buf := make([]byte, size*pipelineDepth)
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += pipelineDepth {
		k := min(pipelineDepth, b.N-n)
		if _, err := c.Write(batch[:k*len(one)]); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:k*size]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild measures conn.build alone, with no connection: the
// *http.Request made from a head parsed once (its strings, header map, URL
// and Host), for the benchmarks' /health request and BenchmarkTypicalHandler's
// browser-like one. It is in-process CPU work, steadier than the socket
// benchmarks on a busy machine. Allocations: the head's one copy.
func BenchmarkBuild(b *testing.B) {
	for _, tc := range []struct{ name, raw string }{
		{"health", "GET /health HTTP/1.1\r\nHost: bench\r\n\r\n"},
		{"typical", typicalRequest},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := &conn{s: &Server{}, hdr: make(http.Header)}
			c.body.c = c
			c.tmpl = (&http.Request{}).WithContext(context.Background())
			c.Buf = []byte(tc.raw)
			n, err := c.hp.ParseRequest(c.Buf, &c.preq, http1.Options{MaxHeaderBytes: c.s.maxHeaderBytes()})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				c.Start, c.End = 0, len(c.Buf) // build consumes the head
				if err := c.build(n); err != nil {
					b.Fatal(err)
				}
			}
			if c.req.Host != "bench" || c.req.URL.Path == "" {
				b.Fatalf("built %s %q, host %q", c.req.Method, c.req.RequestURI, c.req.Host)
			}
		})
	}
}
