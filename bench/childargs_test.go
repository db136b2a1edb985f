package bench

import (
	"reflect"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/internal/cliflag/cliflagtest"
	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/mock"
	"github.com/spindle-lab/spindle/remote"
	"github.com/spindle-lab/spindle/server"
)

// LoadArgs is "load", the flags that "spindle load" parses back into the
// configuration's load, and the URL last.
func TestLoadArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate int
	}{{"closed loop", 0}, {"fixed rate", 20000}} {
		c := Config{LoadThreads: 3, Connections: 120, Duration: 7 * time.Second, Warmup: 2 * time.Second,
			LoadCPUs: cpu.Set{0, 1}, Rate: tc.rate, ServerPort: 18081}
		a := LoadArgs(c, nil, "r/load.json", "r/load", "r/load.hlog")
		if len(a) < 2 || a[0] != "load" || a[len(a)-1] != "http://127.0.0.1:18081/fruits" {
			t.Fatalf("%s: %q: want load ... URL", tc.name, a)
		}
		got := cliflagtest.Parse(t, (*load.Flags).Register, a[1:len(a)-1])
		want := load.DefaultFlags()
		want.Threads, want.Connections, want.Duration, want.Warmup, want.CPUs = 3, 120, 7*time.Second, 2*time.Second, cpu.Set{0, 1}
		want.Latency, want.JSON, want.Hgrm, want.Hlog = true, "r/load.json", "r/load", "r/load.hlog"
		want.HlogInterval = TimelineInterval
		if tc.rate > 0 {
			want.Rate, want.RateGiven = float64(tc.rate), true
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q parse to %+v, want %+v", tc.name, a, got, want)
		}
	}
}

// HlogInterval is TimelineInterval up to MaxTimelineIntervals of it, then
// the multiple of it that keeps the log within that many intervals.
func TestHlogInterval(t *testing.T) {
	for _, tc := range []struct {
		window, want time.Duration
	}{
		{0, 100 * time.Millisecond},
		{3 * time.Second, 100 * time.Millisecond},
		{time.Minute, 100 * time.Millisecond},
		{time.Minute + time.Millisecond, 200 * time.Millisecond},
		{10 * time.Minute, time.Second},
		{time.Hour, 6 * time.Second},
	} {
		got := HlogInterval(tc.window)
		if got != tc.want {
			t.Errorf("HlogInterval(%v) = %v, want %v", tc.window, got, tc.want)
		}
		if n := tc.window / got; n > MaxTimelineIntervals {
			t.Errorf("HlogInterval(%v) = %v: %d intervals, over %d", tc.window, got, n, MaxTimelineIntervals)
		}
	}
}

// TestMixArgs: a blocking mix reaches the load generator as its --mix
// entries with the host alone for URL, and the server gets
// --blocking-endpoint; neither changes without one.
func TestMixArgs(t *testing.T) {
	mix, err := blockingMix("sleep", 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		c        Config
		url      string
		blocking bool
	}{
		{"no mix", Config{ServerPort: 18081, MockPort: 18080}, "http://127.0.0.1:18081/fruits", false},
		{"blocking mix", Config{ServerPort: 18081, MockPort: 18080, Mix: mix, BlockingEndpoint: true}, "http://127.0.0.1:18081/", true},
	} {
		a := LoadArgs(tc.c, nil, "r/load.json", "r/load", "r/load.hlog")
		if a[len(a)-1] != tc.url {
			t.Errorf("%s: load URL %s, want %s", tc.name, a[len(a)-1], tc.url)
		}
		got := cliflagtest.Parse(t, (*load.Flags).Register, a[1:len(a)-1])
		if !reflect.DeepEqual(got.Mix, tc.c.Mix) {
			t.Errorf("%s: load --mix %v, want %v", tc.name, got.Mix, tc.c.Mix)
		}
		s := ServerArgs(tc.c, nil)
		sf := cliflagtest.Parse(t, (*server.Flags).Register, s[1:])
		if sf.BlockingEndpoint != tc.blocking {
			t.Errorf("%s: server --blocking-endpoint %v, want %v (%q)", tc.name, sf.BlockingEndpoint, tc.blocking, s)
		}
	}
}

// TestMixConnections: with a mix the load's connection count is rounded
// up to a multiple of the mix's cycle (each connection then sends one
// target); without one it stays.
func TestMixConnections(t *testing.T) {
	mix, err := blockingMix("mutex", 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    Config
		want int
	}{
		{"no mix", Config{Connections: 30, Rate: 5000}, 30},
		{"a multiple", Config{Connections: 200, Mix: mix}, 200},
		{"rounded up", Config{Connections: 101, Rate: 2800, Mix: mix}, 200},
		{"fewer than a cycle", Config{Connections: 10, Mix: load.Mix{{Weight: 3, Target: "/a"}, {Weight: 1, Target: "/b"}}}, 12},
	} {
		if got := tc.c.MixConnections(); got != tc.want {
			t.Errorf("%s: %d connections, want %d", tc.name, got, tc.want)
		}
	}
}

// TestPlacedArgs: where h puts the roles decides, in MockArgs, ServerArgs
// and LoadArgs alone, the addresses the mock and the server listen on, the
// backend URL the server calls and the URL a load generator here sends
// to; each parses back through its role's Register.
func TestPlacedArgs(t *testing.T) {
	a := &remote.Host{Dest: remote.Dest{Host: "a"}, Info: remote.Info{Addr: "10.0.0.1"}}
	b := &remote.Host{Dest: remote.Dest{Host: "b"}, Info: remote.Info{Addr: "10.0.0.2"}}
	const local = cliflag.DefaultHost
	for _, tc := range []struct {
		name                  string
		h                     *Hosts
		mockHost, serverHost  string
		adminHost, backendURL string
		loadURL               string
	}{
		{"all here", nil, local, local, local, "http://127.0.0.1:18080/fruits", "http://127.0.0.1:18081/fruits"},
		{"all here, no hosts", &Hosts{}, local, local, local, "http://127.0.0.1:18080/fruits", "http://127.0.0.1:18081/fruits"},
		{"load elsewhere", &Hosts{Load: []*remote.Host{b}, ServerAddr: "10.0.0.9"}, local, "", local, "http://127.0.0.1:18080/fruits", "http://10.0.0.9:18081/fruits"},
		{"server and mock on one host", &Hosts{Server: a, Mock: a}, "", "", "", "http://127.0.0.1:18080/fruits", "http://10.0.0.1:18081/fruits"},
		{"server and mock apart", &Hosts{Server: a, Mock: b}, "", "", "", "http://10.0.0.2:18080/fruits", "http://10.0.0.1:18081/fruits"},
		{"mock here, reached at an address", &Hosts{Server: a, MockAddr: "10.0.0.7"}, "", "", "", "http://10.0.0.7:18080/fruits", "http://10.0.0.1:18081/fruits"},
		{"mock on IPv6", &Hosts{Server: a, MockAddr: "fd00::7"}, "", "", "", "http://[fd00::7]:18080/fruits", "http://10.0.0.1:18081/fruits"},
	} {
		c := Config{Mode: ModeCarrier, Threads: 1, Wait: "block", Topology: "off", MockThreads: 1, MockThinkTime: 5 * time.Millisecond, MockPort: 18080, ServerPort: 18081, AdminPort: 9090}
		m := MockArgs(c, tc.h)
		if m[0] != "mock" {
			t.Fatalf("%s: mock args %q", tc.name, m)
		}
		mf := cliflagtest.Parse(t, (*mock.Flags).Register, m[1:])
		s := ServerArgs(c, tc.h)
		if s[0] != "serve" {
			t.Fatalf("%s: server args %q", tc.name, s)
		}
		sf := cliflagtest.Parse(t, (*server.Flags).Register, s[1:])
		if mf.Host != tc.mockHost || mf.Port != 18080 {
			t.Errorf("%s: mock on %q port %d, want %q port 18080 (%q)", tc.name, mf.Host, mf.Port, tc.mockHost, m)
		}
		if sf.Host != tc.serverHost || sf.AdminHost != tc.adminHost || sf.Backend != tc.backendURL || sf.AdminPort != 9090 {
			t.Errorf("%s: server on %q, admin on %q port %d, backend %q; want %q, %q port 9090, %q (%q)",
				tc.name, sf.Host, sf.AdminHost, sf.AdminPort, sf.Backend, tc.serverHost, tc.adminHost, tc.backendURL, s)
		}
		if l := LoadArgs(c, tc.h, "r/load.json", "r/load", "r/load.hlog"); l[len(l)-1] != tc.loadURL {
			t.Errorf("%s: load URL %s, want %s", tc.name, l[len(l)-1], tc.loadURL)
		}
	}
}

// TestServerWaitArgs: the server child gets the idle strategy and, where
// set, its fixed B, as serve reads them back.
func TestServerWaitArgs(t *testing.T) {
	for _, tc := range []struct {
		wait  string
		waitB time.Duration
	}{
		{"block", 0},
		{"adaptive", 0},
		{"adaptive", 200 * time.Microsecond},
	} {
		c := Config{Mode: ModeCarrier, Threads: 1, Wait: tc.wait, WaitB: tc.waitB, Topology: "off", ServerPort: 18081}
		s := ServerArgs(c, nil)
		sf := cliflagtest.Parse(t, (*server.Flags).Register, s[1:])
		if sf.Wait != tc.wait || sf.WaitB != tc.waitB {
			t.Errorf("%s, B %v: the server reads --wait %s, --wait-b %v (%q)", tc.wait, tc.waitB, sf.Wait, sf.WaitB, s)
		}
	}
}

// TestServerSliceArgs: the server child gets the carriers' time slice as
// serve reads it back: the default where the configuration has none, 0
// (the kernel's) where it asks for the kernel's.
func TestServerSliceArgs(t *testing.T) {
	for _, tc := range []struct {
		slice, want time.Duration
	}{
		{0, carrier.DefaultSlice},
		{-1, 0},
		{2 * time.Millisecond, 2 * time.Millisecond},
	} {
		c := Config{Mode: ModeCarrier, Threads: 1, Wait: "block", Slice: tc.slice, Topology: "off", ServerPort: 18081}
		s := ServerArgs(c, nil)
		if sf := cliflagtest.Parse(t, (*server.Flags).Register, s[1:]); sf.Slice != tc.want {
			t.Errorf("slice %v: the server reads --slice %v (%q), want %v", tc.slice, sf.Slice, s, tc.want)
		}
	}
}

// The server child reads --batch-others as the config means it: on unless
// NoBatch.
func TestServerBatchArgs(t *testing.T) {
	for _, noBatch := range []bool{false, true} {
		c := Config{Mode: ModeCarrier, Threads: 1, Wait: "block", NoBatch: noBatch, Topology: "off", ServerPort: 18081}
		s := ServerArgs(c, nil)
		if sf := cliflagtest.Parse(t, (*server.Flags).Register, s[1:]); sf.BatchOthers == noBatch {
			t.Errorf("NoBatch %v: the server reads --batch-others %v (%q)", noBatch, sf.BatchOthers, s)
		}
	}
}
