package carrierhttp

import (
	"strings"
	"testing"
	"time"
)

// FuzzDifferential sends arbitrary bytes to net/http's server and to the
// carrier host, both running testMux, and compares the first answer (all of
// it that matters) and whether the connection stays open. Inputs that
// touch the documented differences are skipped: header lines folded or
// with whitespace before the colon (http1 refuses both), handler panics,
// 100-continue.
func FuzzDifferential(f *testing.F) {
	for _, s := range []string{
		"GET /request HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /request HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
		"GET http://h/request?a=b HTTP/1.0\r\n\r\n",
		"HEAD /fixed HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /request/%41%2f?q HTTP/1.1\r\nHost: [::1]:80\r\nX: a\r\n\r\n",
		"GET /status/299 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	} {
		f.Add(s)
	}
	// Short timeouts on both sides and a short wait for the first answer:
	// a request left incomplete ends soon. Where either server gave no
	// answer in that wait (an incomplete request, or a slow machine), the
	// input is not compared.
	firstWait, netHTTPReadTimeout = time.Second, 200*time.Millisecond
	defer func() { firstWait, netHTTPReadTimeout = 5*time.Second, 0 }()
	_, ca := startCarrier(f, testMux(), func(s *Server) { s.ReadTimeout = 200 * time.Millisecond })
	na := startNetHTTP(f, testMux())
	f.Fuzz(func(t *testing.T, raw string) {
		for _, skip := range []string{"\n ", "\n\t", " :", "\t:", "panic", "xpect", "XPECT"} {
			if strings.Contains(raw, skip) {
				return
			}
		}
		method, _, _ := strings.Cut(raw, " ")
		want := exchange(t, na, raw, []string{method}, 50*time.Millisecond)
		got := exchange(t, ca, raw, []string{method}, 50*time.Millisecond)
		first := func(o outcome) string {
			if len(o.Responses) == 0 {
				return "no answer"
			}
			return o.Responses[0]
		}
		if len(got.Responses) == 0 || len(want.Responses) == 0 {
			return
		}
		if first(got) != first(want) {
			t.Fatalf("input %q\ncarrier host: %s\nnet/http:     %s", raw, first(got), first(want))
		}
	})
}
