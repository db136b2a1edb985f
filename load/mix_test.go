package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/latency"
)

func TestParseMixEntry(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want MixEntry
		err  string // part of the error; "" for none
	}{
		{"95:/fruits", MixEntry{95, "/fruits"}, ""},
		{"5:/block?kind=sleep&d=20ms", MixEntry{5, "/block?kind=sleep&d=20ms"}, ""},
		{"1:/", MixEntry{1, "/"}, ""},
		{"007:/a:b", MixEntry{7, "/a:b"}, ""}, // the first colon ends the weight
		{"65536:/x", MixEntry{65536, "/x"}, ""},
		{"1://x%20y", MixEntry{1, "//x%20y"}, ""},
		{"", MixEntry{}, "want WEIGHT:TARGET such as 95:/fruits"},
		{"/fruits", MixEntry{}, "want WEIGHT:TARGET such as"},
		{":/fruits", MixEntry{}, `whole weight from 1 to 65536, got weight ""`},
		{"0:/fruits", MixEntry{}, `got weight "0"`},
		{"-5:/fruits", MixEntry{}, `got weight "-5"`},
		{"+5:/fruits", MixEntry{}, `got weight "+5"`},
		{"1.5:/fruits", MixEntry{}, "whole weight"},
		{"5k:/fruits", MixEntry{}, "whole weight"},
		{" 5:/fruits", MixEntry{}, "whole weight"},
		{"65537:/x", MixEntry{}, "whole weight"},
		{"99999999999999999999:/x", MixEntry{}, "whole weight"},
		{"5:", MixEntry{}, `starts with /`},
		{"5:fruits", MixEntry{}, `starts with / (a path and query such as /fruits?x=1), got "fruits"`},
		{"5:http://h/fruits", MixEntry{}, "starts with /"},
		{"5:/a b", MixEntry{}, `without spaces or control characters (' ' at byte 2)`},
		{"5:/a\tb", MixEntry{}, "control characters"},
		{"5:/a\r\nX: y", MixEntry{}, "control characters"},
		{"5:/a\x7f", MixEntry{}, "control characters"},
		{"5:/\x00", MixEntry{}, "control characters"},
		{"5:/é", MixEntry{}, "percent-encode byte 0xc3 at byte 1"},
		{"5:/a#top", MixEntry{}, "without a fragment"},
	} {
		got, err := ParseMixEntry(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err == "" && got != tc.want:
			t.Errorf("%q: %+v, want %+v", tc.in, got, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %+v, %v; want an error mentioning %q", tc.in, got, err, tc.err)
		case err != nil && (strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "want ")):
			t.Errorf("%q: error %q: want one line saying what is valid", tc.in, err)
		}
	}
}

func FuzzParseMixEntry(f *testing.F) {
	for _, s := range []string{"95:/fruits", "5:/block?kind=sleep&d=20ms", "0:/", "1:", ":", "65537:/x", "3:/a b", "1:/\xff", "1:/#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseMixEntry(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: error of several lines: %q", s, err)
			}
			return
		}
		if e.Weight < 1 || e.Weight > MaxMixWeight || !strings.HasPrefix(e.Target, "/") {
			t.Fatalf("%q: parsed to %+v", s, e)
		}
		for i := 0; i < len(e.Target); i++ {
			if c := e.Target[i]; c <= ' ' || c >= 0x7f || c == '#' {
				t.Fatalf("%q: target %q has byte %#x", s, e.Target, c)
			}
		}
		if err := CheckMix([]MixEntry{e}); err != nil {
			t.Fatalf("%q: parsed to %+v, which CheckMix refuses: %v", s, e, err)
		}
		back, err := ParseMixEntry(e.String())
		if err != nil || back != e {
			t.Fatalf("%q: %+v writes %q, which parses to %+v, %v", s, e, e.String(), back, err)
		}
	})
}

// The flag refuses an entry beyond the limits of the whole mix, keeping
// the entries before it.
func TestMixFlagLimits(t *testing.T) {
	var m Mix
	for i := range MaxMixEntries {
		if err := m.Set(fmt.Sprintf("1:/p%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Set("1:/one-too-many"); err == nil || !strings.Contains(err.Error(), "at most 16 mix entries") {
		t.Errorf("entry %d: %v, want refused", MaxMixEntries+1, err)
	}
	if len(m) != MaxMixEntries {
		t.Errorf("%d entries kept, want %d", len(m), MaxMixEntries)
	}
	m = nil
	if err := m.Set("65000:/a"); err != nil {
		t.Fatal(err)
	}
	if err := m.Set("537:/b"); err == nil || !strings.Contains(err.Error(), "sum to at most 65536, got 65537") {
		t.Errorf("weights over the bound: %v", err)
	}
	if got := strings.Join(m.Values(), " "); got != "65000:/a" {
		t.Errorf("values %q", got)
	}
}

// The selection gives each entry exactly its share over every cycle of
// sum(weights) requests, and within one request of it over every prefix
// (so within two over any window), spread evenly: 95:5 sends the rare
// entry every 20th request.
func TestMixTable(t *testing.T) {
	for _, weights := range [][]int{{1}, {95, 5}, {3, 2, 1}, {1, 1}, {5, 95}, {7, 1, 1, 1}, {1000, 1}} {
		var mix []MixEntry
		sum := 0
		for i, w := range weights {
			mix = append(mix, MixEntry{w, fmt.Sprintf("/e%d", i)})
			sum += w
		}
		table := mixTable(mix)
		if len(table) != sum {
			t.Fatalf("%v: table of %d slots, want %d", weights, len(table), sum)
		}
		const cycles = 7
		n := make([]int, len(weights))
		for k := range cycles * sum {
			n[table[k%sum]]++
			for i, w := range weights {
				if d := float64(n[i]) - float64((k+1)*w)/float64(sum); d <= -1 || d >= 1 {
					t.Fatalf("%v: after %d requests entry %d has %d, want %d of every %d (off by %.2f)", weights, k+1, i, n[i], w, sum, d)
				}
			}
			if (k+1)%sum == 0 {
				for i, w := range weights {
					if n[i] != (k+1)/sum*w {
						t.Fatalf("%v: after %d requests (whole cycles) entry %d has %d, want %d", weights, k+1, i, n[i], (k+1)/sum*w)
					}
				}
			}
		}
	}
	table := mixTable([]MixEntry{{95, "/fruits"}, {5, "/block"}})
	last := -1
	for k := range 3 * len(table) {
		if table[k%len(table)] != 1 {
			continue
		}
		if last >= 0 && k-last != 20 {
			t.Errorf("95:5: the rare entry at requests %d and %d, want every 20th", last, k)
		}
		last = k
	}
}

// mixServer is a net/http loopback server that counts the requests of each
// target it receives.
type mixServer struct {
	*httptest.Server
	mu     sync.Mutex
	counts map[string]int64
}

func startMixServer(t *testing.T) *mixServer {
	s := &mixServer{counts: map[string]int64{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.counts[r.RequestURI]++
		s.mu.Unlock()
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(s.Close)
	return s
}

// A run with a mix against a real server: each target gets its share of
// the requests (exactly, but for the requests the end cut off), the server
// received each entry's requests, and the entries add up to the totals.
func TestMixRun(t *testing.T) {
	mix := []MixEntry{{3, "/a"}, {2, "/b?x=1&y=2"}, {1, "/missing"}}
	for _, tc := range []struct {
		name string
		rate float64
	}{{"fixed rate", 600}, {"closed loop", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			s := startMixServer(t)
			const conns = 4
			r, err := Run(context.Background(), Options{URL: s.URL, Mix: mix, Threads: 2, Connections: conns,
				Duration: 800 * time.Millisecond, Warmup: 100 * time.Millisecond, Rate: tc.rate, Timeout: time.Second}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkAccounting(t, r)
			if len(r.Mix) != len(mix) || r.Sent < 100 {
				t.Fatalf("%d entries, %d sent: %+v", len(r.Mix), r.Sent, r.Mix)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			var completed, sent int64
			for i, e := range r.Mix {
				t.Logf("%s: weight %d, sent %d, completed %d, queued %d, p99 %dus", e.Target, e.Weight, e.Sent, e.Completed, e.Queued,
					e.Corrected.PercentilesUs[latency.PercentileKey(99)])
				if e.Target != mix[i].Target || e.Weight != mix[i].Weight {
					t.Errorf("entry %d is %s weight %d, want %+v", i, e.Target, e.Weight, mix[i])
				}
				// Fixed rate, the window's requests are consecutive in the
				// selection's order: one off each end, and those the end
				// cut off (one per connection at most). Closed loop each
				// thread has its own sequence: twice as many ends.
				// A generator that fell behind (a loaded machine, -race)
				// left intended requests unsent, any one entry's each.
				want := float64(r.Sent) * float64(e.Weight) / 6
				slack := 2.0 + conns + float64(r.NotSent)
				if tc.rate == 0 {
					slack = 2*2 + conns
				}
				if d := float64(e.Sent) - want; d < -slack || d > slack {
					t.Errorf("%s: sent %d of %d, want %.1f ± %.0f", e.Target, e.Sent, r.Sent, want, slack)
				}
				// The warm-up's requests reached the server too.
				if got := s.counts[e.Target]; got < e.Completed {
					t.Errorf("%s: the server received %d, the entry completed %d", e.Target, got, e.Completed)
				}
				if e.Corrected.Count != e.Completed || e.Uncorrected.Count != e.Completed {
					t.Errorf("%s: %d/%d latencies for %d completed", e.Target, e.Corrected.Count, e.Uncorrected.Count, e.Completed)
				}
				completed += e.Completed
				sent += e.Sent
			}
			if len(s.counts) != len(mix) {
				t.Errorf("the server received targets %v, want the mix's alone", s.counts)
			}
			if completed != r.Completed || sent != r.Sent {
				t.Errorf("entries: %d completed, %d sent; totals %d, %d", completed, sent, r.Completed, r.Sent)
			}
			if m := r.Mix[2]; m.ByStatus.C4xx != m.Completed || r.ByStatus.C4xx != m.Completed {
				t.Errorf("/missing: %d 4xx of %d, total 4xx %d: want every 404 there", m.ByStatus.C4xx, m.Completed, r.ByStatus.C4xx)
			}
			if text := reportText(t, r); !strings.Contains(text, "  Request mix (corrected latency):\n    Target ") ||
				!strings.Contains(text, "    /b?x=1&y=2 ") {
				t.Errorf("report lacks the mix table:\n%s", text)
			}
		})
	}
}

// TestMixDedicatedConns: at a fixed rate with a connection count that is
// a multiple of the mix's cycle, each connection sends one target only
// (a fast request never waits behind a slow one on its connection), and
// the connections of each target are its weight's share of them.
func TestMixDedicatedConns(t *testing.T) {
	mix := []MixEntry{{3, "/a"}, {1, "/b"}}
	var mu sync.Mutex
	seen := map[string]map[string]bool{} // client address -> targets
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if seen[r.RemoteAddr] == nil {
			seen[r.RemoteAddr] = map[string]bool{}
		}
		seen[r.RemoteAddr][r.RequestURI] = true
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer s.Close()
	conns := 2 * MixCycle(mix)
	r, err := Run(context.Background(), Options{URL: s.URL, Mix: mix, Threads: 2, Connections: conns,
		Duration: 500 * time.Millisecond, Rate: 400, Timeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, r)
	mu.Lock()
	defer mu.Unlock()
	per := map[string]int{}
	for addr, targets := range seen {
		if len(targets) != 1 {
			t.Errorf("connection %s sent %v: want one target", addr, targets)
		}
		for tg := range targets {
			per[tg]++
		}
	}
	if len(seen) != conns || per["/a"] != 6 || per["/b"] != 2 {
		t.Errorf("%d connections, targets by connection %v: want %d, /a 6, /b 2", len(seen), per, conns)
	}
}

// Without a mix the result has no entries and the report no table.
func TestNoMix(t *testing.T) {
	s := startMixServer(t)
	r, err := Run(context.Background(), Options{URL: s.URL + "/a?q", Threads: 1, Connections: 1,
		Duration: 200 * time.Millisecond, Rate: 100, Timeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, r)
	if text := reportText(t, r); r.Mix != nil || strings.Contains(text, "Request mix") {
		t.Errorf("mix %+v, report:\n%s", r.Mix, text)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.counts) != 1 || s.counts["/a?q"] < r.Completed {
		t.Errorf("the server received %v, want %d or more of /a?q", s.counts, r.Completed)
	}
}

func TestMixBadOptions(t *testing.T) {
	ok := Options{URL: "http://127.0.0.1:1", Threads: 1, Connections: 1, Duration: time.Second, Timeout: time.Second,
		Mix: []MixEntry{{95, "/fruits"}, {5, "/block?d=1ms"}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	tooMany := make([]MixEntry, MaxMixEntries+1)
	for i := range tooMany {
		tooMany[i] = MixEntry{1, "/"}
	}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"URL path", func(o *Options) { o.URL += "/fruits" }, "gives the host alone"},
		{"URL query", func(o *Options) { o.URL += "/?a=1" }, "gives the host alone"},
		{"weight 0", func(o *Options) { o.Mix[0].Weight = 0 }, `mix entry "0:/fruits": want a weight from 1`},
		{"target", func(o *Options) { o.Mix[1].Target = "block" }, "starts with /"},
		{"target space", func(o *Options) { o.Mix[1].Target = "/a b" }, "spaces"},
		{"too many", func(o *Options) { o.Mix = tooMany }, "at most 16"},
		{"sum", func(o *Options) { o.Mix[0].Weight = MaxMixWeight }, "sum to at most"},
	} {
		o := ok
		o.Mix = append([]MixEntry(nil), ok.Mix...)
		tc.edit(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestBuildRequests(t *testing.T) {
	tg, err := parseTarget("http://127.0.0.1:8080/")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Method: "GET", Headers: []string{"X-A: 1"}, Mix: []MixEntry{{95, "/fruits"}, {5, "/block?kind=sleep&d=20ms"}}}
	got := buildRequests(o, tg)
	want := []string{
		"GET /fruits HTTP/1.1\r\nX-A: 1\r\nHost: 127.0.0.1:8080\r\n\r\n",
		"GET /block?kind=sleep&d=20ms HTTP/1.1\r\nX-A: 1\r\nHost: 127.0.0.1:8080\r\n\r\n",
	}
	if len(got) != len(want) || string(got[0]) != want[0] || string(got[1]) != want[1] {
		t.Errorf("requests %q, want %q", got, want)
	}
}
