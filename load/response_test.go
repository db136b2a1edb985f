package load

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

type parseResult struct {
	consumed  int
	done      bool
	status    int
	keepAlive bool
	err       bool
}

// parseAll feeds in in pieces of size step (0: all at once) and then, if the
// response is not complete, reports EOF when eof is set.
func parseAll(in []byte, step int, head, eof bool) parseResult {
	var p responseParser
	p.reset(head)
	var r parseResult
	for off := 0; off < len(in) && !p.done(); {
		end := len(in)
		if step > 0 && off+step < end {
			end = off + step
		}
		n, err := p.feed(in[off:end])
		r.consumed += n
		off += n
		if err != nil {
			// The stream is abandoned: how much of it was consumed first
			// depends on where the reads ended, so it is not compared.
			return parseResult{err: true}
		}
		if n < end-(off-n) && !p.done() {
			r.err = true // a parser must consume everything unless done
			return r
		}
	}
	if !p.done() && eof {
		p.eof()
	}
	r.done = p.done()
	if r.done {
		r.status = p.status
		r.keepAlive = p.keepAliveAfter()
	}
	return r
}

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file      string
		eof       bool
		status    int
		keepAlive bool
	}{
		{"nginx_return200.http", false, 200, true},
		{"chunked.http", false, 200, true},
		{"gohttp_json.http", false, 200, true},
		{"http10_eof.http", true, 200, false},
	}
	for _, tt := range tests {
		in, err := os.ReadFile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []int{0, 1, 2, 7} {
			r := parseAll(in, step, false, tt.eof)
			if r.err || !r.done || r.status != tt.status || r.keepAlive != tt.keepAlive || r.consumed != len(in) {
				t.Errorf("%s step %d: %+v (len %d)", tt.file, step, r, len(in))
			}
		}
	}
}

func TestParseTable(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		head, eof bool
		want      parseResult
	}{
		{"minimal", "HTTP/1.1 204 No Content\r\n\r\n", false, false, parseResult{done: true, status: 204, keepAlive: true}},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", false, false, parseResult{done: true, status: 200, keepAlive: true}},
		{"no reason", "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n", false, false, parseResult{done: true, status: 404, keepAlive: true}},
		{"close", "HTTP/1.1 500 Oops\r\nConnection: Close\r\nContent-Length: 1\r\n\r\nx", false, false, parseResult{done: true, status: 500}},
		{"http10 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", false, false, parseResult{done: true, status: 200, keepAlive: true}},
		{"head ignores length", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", true, false, parseResult{done: true, status: 200, keepAlive: true}},
		{"304 no body", "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", false, false, parseResult{done: true, status: 304, keepAlive: true}},
		{"interim 100", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", false, false, parseResult{done: true, status: 201, keepAlive: true}},
		{"chunked upper hex", "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n", false, false, parseResult{done: true, status: 200, keepAlive: true}},
		{"folded header", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n", false, false, parseResult{done: true, status: 200, keepAlive: true}},
		{"truncated body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", false, true, parseResult{}},
		{"truncated head", "HTTP/1.1 200 OK\r\nContent-Le", false, true, parseResult{}},
		{"bad version", "HTTP/2.0 200 OK\r\n\r\n", false, false, parseResult{err: true}},
		{"not http", "SSH-2.0-OpenSSH\r\n", false, false, parseResult{err: true}},
		{"short status", "HTTP/1.1 20 OK\r\n\r\n", false, false, parseResult{err: true}},
		{"status below 100", "HTTP/1.1 099 X\r\n\r\n", false, false, parseResult{err: true}},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", false, false, parseResult{err: true}},
		{"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx", false, false, parseResult{err: true}},
		{"huge length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", false, false, parseResult{err: true}},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, false, parseResult{err: true}},
		{"chunk overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", false, false, parseResult{err: true}},
		{"switching protocols", "HTTP/1.1 101 Switching\r\n\r\n", false, false, parseResult{err: true}},
		{"space in name", "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", false, false, parseResult{err: true}},
	}
	for _, tt := range tests {
		got := parseAll([]byte(tt.in), 0, tt.head, tt.eof)
		got.consumed = 0
		if got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestParseHeadLimit(t *testing.T) {
	in := append([]byte("HTTP/1.1 200 OK\r\nX: "), bytes.Repeat([]byte("a"), maxHeader)...)
	for _, step := range []int{len(in), 1000} {
		var p responseParser
		p.reset(false)
		var err error
		for off := 0; off < len(in) && err == nil; off += step {
			_, err = p.feed(in[off:min(off+step, len(in))])
		}
		if !errors.Is(err, errParse) {
			t.Fatalf("over-long head in pieces of %d: %v, want a parse error", step, err)
		}
	}
}

func TestParseLeavesNextResponse(t *testing.T) {
	one := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	var p responseParser
	p.reset(false)
	n, err := p.feed([]byte(one + one))
	if err != nil || !p.done() || n != len(one) {
		t.Fatalf("n=%d done=%v err=%v, want %d bytes and done", n, p.done(), err, len(one))
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "chunked.http"))
	if err != nil {
		t.Fatal(err)
	}
	var p responseParser
	allocs := testing.AllocsPerRun(100, func() {
		p.reset(false)
		_, _ = p.feed(in)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per response, want 0", allocs)
	}
}

// FuzzResponseParser checks that parsing never panics and that the outcome
// does not depend on how the bytes are split across reads.
func FuzzResponseParser(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.http"))
	for _, file := range files {
		in, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(in, uint8(1), false)
	}
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"), uint8(3), true)
	f.Fuzz(func(t *testing.T, in []byte, step uint8, head bool) {
		whole := parseAll(in, 0, head, true)
		split := parseAll(in, int(step%16)+1, head, true)
		if whole != split {
			t.Fatalf("whole %+v, split by %d %+v", whole, step%16+1, split)
		}
		if whole.done && (whole.status < 200 || whole.status > 999) {
			t.Fatalf("completed with status %d", whole.status)
		}
	})
}

func BenchmarkParseNginx(b *testing.B) {
	in, err := os.ReadFile(filepath.Join("testdata", "nginx_return200.http"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	var p responseParser
	for i := 0; i < b.N; i++ {
		p.reset(false)
		if _, err := p.feed(in); err != nil || !p.done() {
			b.Fatal("parse failed")
		}
	}
}
