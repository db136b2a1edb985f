package server

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/leakcheck"
	"github.com/spindle-lab/spindle/mock"
)

func TestParseBlock(t *testing.T) {
	const maxD = 2 * time.Second
	for _, tc := range []struct {
		query string
		want  blockSpec
		err   string // "": valid; else a part of the error
	}{
		{"kind=sleep&d=20ms", blockSpec{blockSleep, 20 * time.Millisecond}, ""},
		{"d=20ms&kind=sleep", blockSpec{blockSleep, 20 * time.Millisecond}, ""},
		{"kind=sleep", blockSpec{blockSleep, 0}, ""},
		{"kind=mutex&d=1.5ms", blockSpec{blockMutex, 1500 * time.Microsecond}, ""},
		{"kind=compute&d=50ms", blockSpec{blockCompute, 50 * time.Millisecond}, ""},
		{"kind=singleflight", blockSpec{blockSingleflight, 0}, ""},
		{"kind=singleflight&d=2s", blockSpec{blockSingleflight, maxD}, ""},
		{"kind=sleep&d=0", blockSpec{blockSleep, 0}, ""},
		{"kind=sleep&d=%32%30ms", blockSpec{blockSleep, 20 * time.Millisecond}, ""}, // escaped "20ms"
		{"kind=sleep&", blockSpec{blockSleep, 0}, ""},
		{"", blockSpec{}, "kind missing: want kind=sleep, mutex, singleflight or compute"},
		{"d=20ms", blockSpec{}, "kind missing"},
		{"kind=nap", blockSpec{}, `kind "nap": want sleep, mutex, singleflight or compute`},
		{"kind=", blockSpec{}, `kind "": want`},
		{"kind=Sleep", blockSpec{}, `kind "Sleep"`},
		{"kind=sleep&d=20", blockSpec{}, `d "20": want a duration with its unit, such as 20ms`},
		{"kind=sleep&d=abc", blockSpec{}, `d "abc": want a duration`},
		{"kind=sleep&d=", blockSpec{}, `d "": want a duration`},
		{"kind=sleep&d=-1ms", blockSpec{}, `d "-1ms": want 0 to 2s (the backend timeout)`},
		{"kind=sleep&d=2.001s", blockSpec{}, `d "2.001s": want 0 to 2s`},
		{"kind=sleep&d=1h", blockSpec{}, `d "1h": want 0 to 2s`},
		{"kind=sleep&kind=mutex", blockSpec{}, "kind given 2 times: give it once"},
		{"kind=sleep&d=1ms&d=2ms", blockSpec{}, "d given 2 times"},
		{"kind=sleep&x=1", blockSpec{}, `parameter "x": unknown (want kind and d)`},
		{"a=1&kind=nap", blockSpec{}, `parameter "a": unknown`}, // the first problem, always the same
		{"kind=sleep&d=%zz", blockSpec{}, `query "kind=sleep&d=%zz": invalid URL escape "%zz"`},
		{"kind=sleep;d=1ms", blockSpec{}, "invalid semicolon separator"},
	} {
		got, err := parseBlock(tc.query, maxD)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("parseBlock(%q) = %+v, %v; want %+v", tc.query, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseBlock(%q) = %+v, %v; want an error with %q", tc.query, got, err, tc.err)
		case err != nil && strings.ContainsAny(err.Error(), "\r\n"):
			t.Errorf("parseBlock(%q): error %q is not one line", tc.query, err)
		}
	}
}

func FuzzParseBlock(f *testing.F) {
	for _, q := range []string{"kind=sleep&d=20ms", "kind=singleflight", "kind=mutex&d=1ms&d=2ms", "d=%zz", "kind=sleep;d=1", ""} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		const maxD = time.Second
		b, err := parseBlock(q, maxD)
		if err != nil {
			if b != (blockSpec{}) {
				t.Fatalf("parseBlock(%q) = %+v with error %v", q, b, err)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("parseBlock(%q): error %q is not one line", q, err)
			}
			return
		}
		if b.kind < blockSleep || b.kind > blockSingleflight || b.d < 0 || b.d > maxD {
			t.Fatalf("parseBlock(%q) = %+v: out of range", q, b)
		}
		// What it accepted, spelled canonically, parses the same.
		name := ""
		for n, k := range blockKinds {
			if k == b.kind {
				name = n
			}
		}
		if again, err := parseBlock("kind="+name+"&d="+b.d.String(), maxD); err != nil || again != b {
			t.Fatalf("parseBlock(%q) = %+v; its canonical form gives %+v, %v", q, b, again, err)
		}
	})
}

// blockOptions turn the endpoint on, with carriers that hand off a blocked
// run (whatever carrier.Options' default is).
var blockOptions = Options{BlockingEndpoint: true, Carrier: carrier.Options{HandoffThreshold: carrier.DefaultHandoffThreshold}}

// handoffs sums the carriers' hand-offs and park yields (0 without
// carriers): the runs they went on without, whether the monitor took the
// run past the threshold or the park watch as it began to wait (a task
// whose earlier runs waited, as this conn's do).
func handoffs(s *Server) uint64 {
	if s.group == nil {
		return 0
	}
	var n uint64
	for _, c := range s.group.Snapshot() {
		n += c.GaveUp()
	}
	return n
}

// blocksOnCarrier says whether mode runs /block in a carrier's task, where
// a run past the threshold is handed off (handoff mode runs it on an
// offloaded goroutine, nethttp on its own).
func blocksOnCarrier(mode Mode) bool { return mode == ModeCarrier || mode == ModeNetHTTPCarrier }

// TestBlockEndpoint: /block's answers and its 400s, each on one keep-alive
// connection that goes on serving after it, in every mode.
func TestBlockEndpoint(t *testing.T) {
	cases := []struct {
		name, target string
		status       int
		body         string // "": not checked
		atLeast      time.Duration
	}{
		{"sleep", "/block?kind=sleep&d=20ms", 200, "OK", 20 * time.Millisecond},
		{"sleep, no d", "/block?kind=sleep", 200, "OK", 0},
		{"mutex", "/block?kind=mutex&d=5ms", 200, "OK", 5 * time.Millisecond},
		{"singleflight", "/block?kind=singleflight", 200, wantFruits, 0},
		{"singleflight, held", "/block?kind=singleflight&d=10ms", 200, wantFruits, 10 * time.Millisecond},
		{"absolute form", "http://x/block?kind=sleep&d=2ms", 200, "OK", 2 * time.Millisecond},
		{"no query", "/block", 400, "bad /block query: kind missing: want kind=sleep, mutex, singleflight or compute", 0},
		{"unknown kind", "/block?kind=nap", 400, `bad /block query: kind "nap": want sleep, mutex, singleflight or compute`, 0},
		{"d without unit", "/block?kind=sleep&d=20", 400, `bad /block query: d "20": want a duration with its unit, such as 20ms`, 0},
		{"negative d", "/block?kind=sleep&d=-1ms", 400, `bad /block query: d "-1ms": want 0 to 2s (the backend timeout)`, 0},
		{"d past the backend timeout", "/block?kind=singleflight&d=3s", 400, `bad /block query: d "3s": want 0 to 2s (the backend timeout)`, 0},
		{"unknown parameter", "/block?kind=sleep&for=1s", 400, `bad /block query: parameter "for": unknown (want kind and d)`, 0},
		{"repeated", "/block?kind=sleep&kind=mutex", 400, "bad /block query: kind given 2 times: give it once", 0},
		{"bad escape", "/block?kind=sleep%zz", 400, `bad /block query: query "kind=sleep%zz": invalid URL escape "%zz"`, 0},
	}
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, blockOptions)
		c := e.dial()
		defer c.Close()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c.t = t
				start := time.Now()
				e.send(c, fmt.Sprintf(get, tc.target))
				resp, body := c.read(tc.status)
				if took := time.Since(start); took < tc.atLeast {
					t.Errorf("answered in %v, want at least %v", took, tc.atLeast)
				}
				if tc.body != "" && body != tc.body {
					t.Errorf("body %q, want %q", body, tc.body)
				}
				if resp.Close {
					t.Errorf("%d with Connection: close: the connection should go on", tc.status)
				}
				if want := map[bool]string{true: "application/json", false: "text/plain; charset=utf-8"}[tc.body == wantFruits]; resp.Header.Get("Content-Type") != want {
					t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), want)
				}
				e.send(c, fmt.Sprintf(get, "/health")) // and the connection serves on
				c.read(200)
			})
		}
		c.t = t
		e.send(c, "HEAD /block?kind=sleep&d=1ms HTTP/1.1\r\nHost: x\r\n\r\n")
		if head, err := http.ReadResponse(c.br, &http.Request{Method: "HEAD"}); err != nil || head.StatusCode != 200 || head.ContentLength != 2 {
			t.Fatalf("HEAD /block: %v %+v", err, head)
		}
		if blocksOnCarrier(mode) && handoffs(e.srv) == 0 {
			t.Errorf("no hand-off or park yield after a 20 ms sleep on the only carrier")
		}
	})
}

// TestBlockOff: without Options.BlockingEndpoint, /block is an unknown
// path: 404 and close, whatever its query.
func TestBlockOff(t *testing.T) {
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{})
		for _, target := range []string{"/block?kind=sleep&d=1s", "/block?kind=nap"} {
			c := e.dialFor(t)
			start := time.Now()
			e.send(c, fmt.Sprintf(get, target))
			if resp, _ := c.read(404); !resp.Close {
				t.Errorf("%s: 404 without Connection: close", target)
			}
			if took := time.Since(start); took > 500*time.Millisecond {
				t.Errorf("%s took %v: it slept", target, took)
			}
		}
	})
}

// TestBlockIsolation: while /block sleeps on the only carrier (or
// goroutine's GOMAXPROCS), /health and /fruits on other connections answer
// in far less than the sleep.
func TestBlockIsolation(t *testing.T) {
	const sleep = time.Second
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, blockOptions)
		blocked := e.dialFor(t)
		e.send(blocked, fmt.Sprintf(get, "/block?kind=sleep&d="+sleep.String()))
		sent := time.Now()
		time.Sleep(50 * time.Millisecond) // let it begin its sleep
		fast := e.dialFor(t)
		for _, path := range []string{"/health", "/fruits", "/health"} {
			start := time.Now()
			e.send(fast, fmt.Sprintf(get, path))
			fast.read(200)
			// The hand-off takes 1-1.5 ms; the rest is slack for a
			// loaded 2-CPU machine under the race detector.
			if took := time.Since(start); took > sleep/4 {
				t.Errorf("%s took %v while another request slept %v", path, took, sleep)
			}
		}
		if _, body := blocked.read(200); body != "OK" {
			t.Errorf("/block body %q", body)
		}
		if took := time.Since(sent); took < sleep {
			t.Errorf("/block answered after %v, want at least %v", took, sleep)
		}
	})
}

// TestBlockSingleflight: concurrent singleflight requests, each on its own
// connection, share one leader's backend exchange, and every one of them,
// leader and followers, answers the fruits within a bound: on carriers the
// followers block the Go way while their leader's exchange is polled by
// the same, only carrier, which hangs for ever unless it hands off.
func TestBlockSingleflight(t *testing.T) {
	const (
		clients = 8
		hold    = 300 * time.Millisecond // the leader's sleep before its exchange
		// bound is far below what clients exchanges one after the other
		// would take (2.4 s), and leaves 700 ms of slack.
		bound = time.Second
	)
	var hits atomic.Int64
	fruits, err := json.Marshal(mock.Fruits)
	if err != nil {
		t.Fatal(err)
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(fruits)
	}))
	defer backend.Close()
	forModes(t, func(t *testing.T, mode Mode) {
		leakcheck.Register(t, 3*time.Second)
		e := startOn(t, mode, blockOptions, backend.URL+"/fruits")
		t.Cleanup(e.close)
		conns := make([]*client, clients)
		for i := range conns {
			conns[i] = e.dialFor(t)
		}
		before := hits.Load()
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan string, clients)
		for i, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				target := "/block?kind=singleflight&d=" + hold.String()
				if _, err := c.Write([]byte(fmt.Sprintf(get, target))); err != nil {
					errs <- fmt.Sprintf("client %d: %v", i, err)
					return
				}
				resp, err := http.ReadResponse(c.br, nil)
				if err != nil {
					errs <- fmt.Sprintf("client %d after %v: %v", i, time.Since(start), err)
					return
				}
				body := readAll(resp)
				if took := time.Since(start); resp.StatusCode != 200 || body != wantFruits || took > bound {
					errs <- fmt.Sprintf("client %d: %d %.40q after %v (bound %v)", i, resp.StatusCode, body, took, bound)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for msg := range errs {
			t.Error(msg)
		}
		// All were sent together and a flight lasts over 300 ms: one
		// leader, perhaps two on a slow start, never one each.
		if n := hits.Load() - before; n < 1 || n >= clients/2 {
			t.Errorf("%d backend exchanges for %d concurrent singleflight requests", n, clients)
		}
		if blocksOnCarrier(mode) && handoffs(e.srv) == 0 {
			t.Errorf("no hand-off or park yield: the followers never blocked their carrier?")
		}
		t.Logf("%d backend exchange(s), %d hand-offs and park yields, all answered in %v", hits.Load()-before, handoffs(e.srv), time.Since(start))
	})
}

// readAll reads a response's body as a string (an error reads as one).
func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "read error: " + err.Error()
	}
	return string(b)
}

// sparseLog passes one message per interval and counts the ones it drops.
func TestSparseLog(t *testing.T) {
	var out strings.Builder
	now := time.Unix(1000, 0)
	l := newSparseLog(&out)
	l.now = func() time.Time { return now }
	write := func(msg string) {
		if n, err := l.Write([]byte(msg + "\n")); n != len(msg)+1 || err != nil {
			t.Fatalf("Write(%q) = %d, %v", msg, n, err)
		}
	}
	write("a") // the first goes through
	write("b") // dropped
	now = now.Add(999 * time.Millisecond)
	write("c") // dropped
	now = now.Add(time.Millisecond)
	write("d") // a second after a: through, with the count
	now = now.Add(5 * time.Second)
	write("e") // through, nothing left out
	want := "a\nd\n(and 2 more messages since the one before, left out: at most one every 1s)\ne\n"
	if out.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestBlockKindsListed: BlockKinds name blockKind's kinds in order, and
// BlockTarget writes a query that parses to the kind and hold it names.
func TestBlockKindsListed(t *testing.T) {
	want := map[string]blockKind{"sleep": blockSleep, "mutex": blockMutex, "singleflight": blockSingleflight, "compute": blockCompute}
	if !maps.Equal(blockKinds, want) {
		t.Errorf("/block takes kinds %v, want %v", blockKinds, want)
	}
	for _, k := range BlockKinds {
		target := BlockTarget(k, 20*time.Millisecond)
		_, query, _ := strings.Cut(target, "?")
		b, err := parseBlock(query, time.Second)
		if err != nil || b.kind != blockKinds[k] || b.d != 20*time.Millisecond {
			t.Errorf("BlockTarget(%q) = %s: parsed to %+v, %v", k, target, b, err)
		}
	}
}
