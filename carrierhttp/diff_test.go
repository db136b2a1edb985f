package carrierhttp

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testMux is the handler both servers run in the differential suite.
func testMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/fixed", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello, world\n")
	})
	mux.HandleFunc("/html", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html><body>sniffed</body></html>")
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "cannot read the body", 400) // not err: its text differs between servers
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	})
	mux.HandleFunc("/limit", func(w http.ResponseWriter, r *http.Request) {
		// As a handler bounds a body: past the limit net/http answers with
		// Connection: close and closes rather than read the rest.
		r.Body = http.MaxBytesReader(w, r.Body, 5)
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		w.Write(b)
	})
	mux.HandleFunc("/noread", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ignored the body")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		n = min(n, 100) // fuzzed queries ask for more
		w.Header().Set("Content-Type", "text/plain")
		chunk := strings.Repeat("0123456789", 100)
		for i := 0; i < n; i++ {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for i := range 3 {
			fmt.Fprintf(w, "part %d\n", i)
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/length", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "12345")
	})
	mux.HandleFunc("/short", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "12345")
	})
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.PathValue("code"))
		w.Header().Set("X-Code", r.PathValue("code"))
		w.WriteHeader(code)
		io.WriteString(w, "body for "+r.PathValue("code"))
	})
	mux.HandleFunc("/trailer", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "data")
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "yes")
	})
	mux.HandleFunc("/controller", func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		e1 := rc.SetReadDeadline(time.Now().Add(time.Second))
		e2 := rc.SetWriteDeadline(time.Now().Add(time.Second))
		io.WriteString(w, "first ")
		e3 := rc.Flush()
		b, e4 := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%v %v %v %v %q", e1, e2, e3, e4, b)
	})
	mux.HandleFunc("/set/{keys}", func(w http.ResponseWriter, r *http.Request) {
		// Sets X-<key> for each comma-separated key ("-": none), so that
		// pipelined answers carry differing sets of fields.
		for k := range strings.SplitSeq(r.PathValue("keys"), ",") {
			if k != "-" {
				w.Header().Set("X-"+k, k)
			}
		}
		io.WriteString(w, "set "+r.PathValue("keys"))
	})
	mux.HandleFunc("/deadline", func(w http.ResponseWriter, r *http.Request) {
		// A read deadline that passes before the connection's next request.
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(deadlineSet))
		io.WriteString(w, "deadline set")
	})
	mux.HandleFunc("/hints", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		io.WriteString(w, "after hints")
	})
	mux.HandleFunc("/badlength", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "abc")
		io.WriteString(w, "body")
	})
	mux.HandleFunc("/own-te", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "chunked")
		w.Header().Set("Date", "Mon, 02 Jan 2006 15:04:05 GMT")
		io.WriteString(w, "own framing")
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	mux.HandleFunc("/panic", func(w http.ResponseWriter, r *http.Request) {
		panic("boom")
	})
	mux.HandleFunc("/panic-after-write", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 5000))
		w.(http.Flusher).Flush()
		panic("boom")
	})
	mux.HandleFunc("/request", func(w http.ResponseWriter, r *http.Request) {
		// What the handler sees of the request.
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fmt.Fprintf(w, "%s %q path=%q rawpath=%q query=%q force=%v host=%q proto=%s %d.%d cl=%d te=%v close=%v\n",
			r.Method, r.RequestURI, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.URL.ForceQuery, r.Host,
			r.Proto, r.ProtoMajor, r.ProtoMinor, r.ContentLength, r.TransferEncoding, r.Close)
		for _, k := range keys {
			fmt.Fprintf(w, "%s=%q\n", k, r.Header[k])
		}
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "body=%q err=%v\n", b, err != nil)
	})
	return mux
}

// TestDifferential sends the same bytes to net/http's server and to the
// carrier host, both running testMux, and compares what a client sees;
// the carrier host runs with its own requests for each (the default) and
// with ReuseRequests.
func TestDifferential(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reuse=%v", reuse), func(t *testing.T) {
			testDifferential(t, func(s *Server) { s.ReuseRequests = reuse })
		})
	}
}

func testDifferential(t *testing.T, configure func(*Server)) {
	h := testMux()
	_, ca := startCarrier(t, h, configure)
	na := startNetHTTP(t, h)
	get := func(target string) string { return "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n" }
	cases := []struct {
		name    string
		raw     string
		methods []string
	}{
		{"fixed", get("/fixed"), nil},
		{"sniffed", get("/html"), nil},
		{"not found", get("/nothing"), nil},
		{"query and escapes", get("/request?a=1&b=%20#frag"), nil},
		{"escaped path", get("/request/%7Euser/a%2Fb"), nil},
		{"raw path chars", get("/request/(x)!*"), nil},
		{"empty query", get("/request?"), nil},
		{"absolute form", "GET http://other:81/request?q HTTP/1.1\r\nHost: x\r\n\r\n", nil},
		{"headers", "GET /request HTTP/1.1\r\nHost: example.com:8080\r\nx-lower: a\r\nX-Multi: 1\r\nX-Multi: 2\r\nPragma: no-cache\r\nCookie: a=b\r\n\r\n", nil},
		{"http/1.0", "GET /fixed HTTP/1.0\r\n\r\n", nil},
		{"http/1.0 keep-alive", "GET /fixed HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", nil},
		{"connection close", "GET /fixed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", nil},
		{"handler closes", get("/close"), nil},
		{"head", "HEAD /fixed HTTP/1.1\r\nHost: x\r\n\r\n", []string{"HEAD"}},
		{"head of big", "HEAD /big?n=5 HTTP/1.1\r\nHost: x\r\n\r\n", []string{"HEAD"}},
		{"pipelined", get("/fixed") + "HEAD /html HTTP/1.1\r\nHost: x\r\n\r\n" + get("/stream") + get("/big?n=3"), []string{"GET", "HEAD", "GET", "GET"}},
		{"pipelined field sets", get("/set/a") + get("/set/b") + get("/set/a,b") + get("/set/c,b") + get("/set/-") + get("/hints") + get("/set/b") + get("/set/a"), nil},
		{"pipelined hosts", "GET /request HTTP/1.1\r\nHost: a\r\n\r\nGET /request HTTP/1.1\r\nX: 1\r\nHost: b:1\r\n\r\nGET /request HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", nil},
		{"body by length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello there" + get("/fixed"), nil},
		{"chunked body", "POST /request HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n there\r\n0\r\nX-T: 1\r\n\r\n" + get("/fixed"), nil},
		{"body within MaxBytesReader's limit", "POST /limit HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde" + get("/fixed"), nil},
		{"body past MaxBytesReader's limit", "POST /limit HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n0123456789abcdefghij" + get("/fixed"), nil},
		{"chunked past MaxBytesReader's limit", "POST /limit HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n01234567\r\n0\r\n\r\n" + get("/fixed"), nil},
		{"unread body", "POST /noread HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde" + get("/fixed"), nil},
		{"unread chunked", "POST /noread HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" + get("/fixed"), nil},
		{"100-continue", "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody", nil},
		{"unknown expectation", "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: magic\r\nContent-Length: 4\r\n\r\nbody", nil},
		{"100-continue in HTTP/1.0", "POST /echo HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody", nil},
		{"100-continue among words", "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue, foo\r\nContent-Length: 4\r\n\r\nbody", nil},
		{"empty expectation", "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: \r\nContent-Length: 4\r\n\r\nbody", nil},
		{"unknown expectation in HTTP/1.0", "POST /echo HTTP/1.0\r\nExpect: magic\r\nContent-Length: 4\r\n\r\nbody", nil},
		{"big chunked answer", get("/big?n=20"), nil},
		{"streaming", get("/stream"), nil},
		{"early hints", get("/hints"), nil},
		{"invalid handler length", get("/badlength"), nil},
		{"head with declared length", "HEAD /length HTTP/1.1\r\nHost: x\r\n\r\n", []string{"HEAD"}},
		{"options star", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", nil},
		{"length and chunked", "POST /request HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", nil},
		{"http/1.0 post", "POST /echo HTTP/1.0\r\nContent-Length: 4\r\n\r\nbody", nil},
		{"long target", get("/request?" + strings.Repeat("q=1&", 500)), nil},
		{"handler's own TE and Date", get("/own-te"), nil},
		{"empty answer", get("/empty") + "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" + get("/fixed"), nil},
		{"close with unread body", "POST /noread HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5\r\n\r\nabcde", nil},
		{"leading zeros in length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 007\r\n\r\nabcdefg", nil},
		{"http/1.0 chunked", "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", nil},
		{"response controller", "POST /controller HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", nil},
		{"declared length", get("/length"), nil},
		{"short of declared length", get("/short"), nil},
		{"204", get("/status/204"), nil},
		{"304", get("/status/304"), nil},
		{"418", get("/status/418"), nil},
		{"599", get("/status/599"), nil},
		{"trailers", get("/trailer"), nil},
		{"panic after write", get("/panic-after-write"), nil},
		// Hostile and malformed input.
		{"no host", "GET /fixed HTTP/1.1\r\n\r\n", nil},
		{"two hosts", "GET /fixed HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", nil},
		{"bad host", "GET /fixed HTTP/1.1\r\nHost: a b\r\n\r\n", nil},
		{"bad method", "G(T /fixed HTTP/1.1\r\nHost: x\r\n\r\n", nil},
		{"bad version", "GET /fixed HTTP/x.y\r\nHost: x\r\n\r\n", nil},
		{"http/2.0", "GET /fixed HTTP/2.0\r\nHost: x\r\n\r\n", nil},
		{"bad target", "GET fixed HTTP/1.1\r\nHost: x\r\n\r\n", nil},
		{"bad escape", "GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n", nil},
		{"bad header", "GET /fixed HTTP/1.1\r\nHost: x\r\nNo colon\r\n\r\n", nil},
		{"control in value", "GET /fixed HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n", nil},
		{"bad length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", nil},
		{"two lengths", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", nil},
		{"unknown coding", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", nil},
		{"bad chunk", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", nil},
		{"huge head", "GET /fixed HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", DefaultMaxHeaderBytes+headerSlack) + "\r\n\r\n", nil},
		// A body cut short waits for the rest in both (no timeouts here):
		// TestTimeouts covers it with ReadTimeout.
	}
	// All exchanges run at once: most end with a quiet wait.
	const quiet = 300 * time.Millisecond // silence after an answer that counts as kept open
	got := make([]outcome, len(cases))
	want := make([]outcome, len(cases))
	var wg sync.WaitGroup
	for i, tc := range cases {
		wg.Go(func() { want[i] = exchange(t, na, tc.raw, tc.methods, quiet) })
		wg.Go(func() { got[i] = exchange(t, ca, tc.raw, tc.methods, quiet) })
	}
	wg.Wait()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d, ok := deliberate[tc.name]; ok {
				if !strings.HasPrefix(got[i].String(), d.answer) || got[i].Closed != d.closed || got[i].String() == want[i].String() {
					t.Errorf("carrier host (deliberately unlike net/http: %s):\n%s\n\nwant it to start %q, closed=%v; net/http:\n%s",
						d.why, got[i], d.answer, d.closed, want[i])
				}
				return
			}
			if got[i].String() != want[i].String() {
				t.Errorf("carrier host:\n%s\n\nnet/http:\n%s", got[i], want[i])
			}
		})
	}
}

// deliberate are the exchanges where the carrier host, through http1's
// framing rules (docs/server.md, "Framing"), answers unlike net/http on
// purpose: the start of its answer, whether it closes, and why.
var deliberate = map[string]struct {
	answer string
	closed bool
	why    string
}{
	"length and chunked": {"HTTP/1.1 200 close=true", true,
		"RFC 9112 §6.3: a server MUST close after answering a request with both Content-Length and Transfer-Encoding; net/http keeps it open"},
	"http/1.0 chunked": {"HTTP/1.1 400 close=true", true,
		"Transfer-Encoding in HTTP/1.0 is refused (RFC 9112 §6.1); net/http drops the field and reads the body as the next request"},
	"bad host": {"HTTP/1.1 400 close=true", true,
		"the same 400 and close, with http1's plain 400 body where net/http adds \": malformed Host header\""},
}

// TestContinueUnread: a handler that ignores the body of a request that
// expects 100-continue gets "Connection: close" in both servers, and the
// carrier host closes at once, where net/http waits for the body the
// client will not send without a 100 (its early close reads up to 256 KiB).
func TestContinueUnread(t *testing.T) {
	h := testMux()
	_, ca := startCarrier(t, h, nil)
	na := startNetHTTP(t, h)
	raw := "POST /noread HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"
	want := exchange(t, na, raw, nil, 300*time.Millisecond)
	got := exchange(t, ca, raw, nil, 300*time.Millisecond)
	if !slices.Equal(got.Responses, want.Responses) || !got.Closed {
		t.Errorf("carrier host:\n%s\n\nnet/http:\n%s\nwant the same answer and a close", got, want)
	}
}

// TestHandlerPanic: a panic before anything was sent answers 500 and
// closes the connection (net/http only closes it), and the server goes on
// serving others.
func TestHandlerPanic(t *testing.T) {
	_, ca := startCarrier(t, testMux(), nil)
	got := exchange(t, ca, "GET /panic HTTP/1.1\r\nHost: x\r\n\r\nGET /fixed HTTP/1.1\r\nHost: x\r\n\r\n", nil, 300*time.Millisecond)
	if len(got.Responses) != 1 || !strings.Contains(got.Responses[0], " 500 ") || !got.Closed {
		t.Fatalf("panic: got %s, want one 500 and a close", got)
	}
	got = exchange(t, ca, "GET /fixed HTTP/1.1\r\nHost: x\r\n\r\n", nil, 300*time.Millisecond)
	if len(got.Responses) != 1 || !strings.Contains(got.Responses[0], "hello, world") {
		t.Fatalf("after a panic: %s", got)
	}
}

// deadlineSet is the read deadline /deadline sets, from now.
const deadlineSet = 50 * time.Millisecond

// TestHandlerDeadlineEnds: a read deadline a handler set does not outlive
// its request: the connection's next request, sent after it passed, is
// answered, by both servers (net/http clears it before the wait for the
// next request).
func TestHandlerDeadlineEnds(t *testing.T) {
	h := testMux()
	_, ca := startCarrier(t, h, nil)
	servers := []struct{ name, addr string }{{"net/http", startNetHTTP(t, h)}, {"carrier host", ca}}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			c := dial(t, srv.addr)
			c.SetDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(c)
			for i, target := range []string{"/deadline", "/fixed"} {
				if i > 0 {
					time.Sleep(4 * deadlineSet)
				}
				fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", target)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("request %d, %s: %v", i+1, target, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("request %d, %s: %s", i+1, target, resp.Status)
				}
			}
		})
	}
}

// TestTrailerBytes: the trailer section is net/http's byte for byte:
// declared and TrailerPrefix fields together, sorted by name (the
// differential suite's parsed answers do not see the order).
func TestTrailerBytes(t *testing.T) {
	h := testMux()
	_, ca := startCarrier(t, h, nil)
	na := startNetHTTP(t, h)
	trailer := func(addr string) string {
		c := dial(t, addr)
		io.WriteString(c, "GET /trailer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		_, after, ok := strings.Cut(string(b), "\r\n0\r\n")
		if !ok {
			t.Fatalf("no last chunk in %q", b)
		}
		return after
	}
	if got, want := trailer(ca), trailer(na); got != want {
		t.Fatalf("trailer section %q, net/http's %q", got, want)
	}
}
