package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/remote"
)

func TestSplitLoad(t *testing.T) {
	for _, tc := range []struct {
		conns, rate, threads, n int
		want                    []LoadShare
		err                     string
	}{
		{100, 0, 4, 1, []LoadShare{{100, 4, 0}}, ""},
		{100, 20000, 4, 2, []LoadShare{{50, 4, 10000}, {50, 4, 10000}}, ""},
		{10, 1001, 4, 3, []LoadShare{{4, 4, 334}, {3, 3, 334}, {3, 3, 333}}, ""},
		{2, 0, 4, 2, []LoadShare{{1, 1, 0}, {1, 1, 0}}, ""},
		{1, 0, 1, 2, nil, "at least one per load host"},
		{10, 1, 1, 2, nil, "at least 1 req/s per load host"},
		{10, 0, 1, 0, nil, "0 hosts"},
		{10, 0, 0, 2, nil, "load threads"},
	} {
		got, err := SplitLoad(tc.conns, tc.rate, tc.threads, tc.n)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("SplitLoad(%d, %d, %d, %d) error = %v, want %q", tc.conns, tc.rate, tc.threads, tc.n, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitLoad(%d, %d, %d, %d) = %v, %v; want %v", tc.conns, tc.rate, tc.threads, tc.n, got, err, tc.want)
			continue
		}
		// The parts add up exactly and differ by at most one.
		var c, r int
		for _, s := range got {
			c, r = c+s.Connections, r+s.Rate
			if s.Threads > s.Connections || s.Connections-got[len(got)-1].Connections > 1 {
				t.Errorf("SplitLoad(%d, ...) share %+v unbalanced", tc.conns, s)
			}
		}
		if c != tc.conns || r != tc.rate {
			t.Errorf("SplitLoad(%d, %d, ...) adds up to %d connections, %d req/s", tc.conns, tc.rate, c, r)
		}
	}
}

func TestHostsLocal(t *testing.T) {
	var h *Hosts
	if h.Remote() || h.Check() != nil || h.CheckCPUs(Config{}) != nil || len(h.all()) != 0 {
		t.Error("a nil placement is not all local")
	}
	if got := h.Layout(); got != "server local, mock local, load local" {
		t.Errorf("Layout = %q", got)
	}
}

// TestRunRefusesBadPlacement: Run checks a placement before it starts
// anything: hosts not prepared, a server the load hosts cannot reach, a CPU
// set a host lacks.
func TestRunRefusesBadPlacement(t *testing.T) {
	s, err := remote.NewSession(remote.Options{})
	if err != nil {
		t.Skipf("no ssh client: %v", err)
	}
	defer s.Close()
	h1 := s.Host(remote.Dest{Host: "h1"})
	h2 := s.Host(remote.Dest{Host: "h2"})
	cfg := Config{Name: "c", Mode: ModeCarrier, Threads: 1, Connections: 2, LoadThreads: 1, MockThreads: 1,
		Topology: "off", Wait: "block", Duration: time.Second, ServerCPUs: cpu.Set{7}}
	for _, tc := range []struct {
		hosts *Hosts
		want  string
	}{
		{&Hosts{Server: h1, Mock: h1}, "not prepared"},
		{&Hosts{Load: []*remote.Host{h2}}, "--server-addr"},
		{&Hosts{Server: h1, Mock: nil}, "--mock-host"},
	} {
		dir := filepath.Join(t.TempDir(), "res")
		_, err := Run(context.Background(), cfg, RunOptions{Dir: dir, Hosts: tc.hosts})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run with %s: %v, want an error with %q", tc.hosts.Layout(), err, tc.want)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("Run with %s made its result directory", tc.hosts.Layout())
		}
	}
	h1.Info.CPUs, h1.Exe = cpu.Set{0, 1}, "/x/spindle"
	err = (&Hosts{Server: h1, Mock: h1}).CheckCPUs(cfg)
	if err == nil || !strings.Contains(err.Error(), "CPUs 7 are not online") {
		t.Errorf("CheckCPUs = %v, want CPU 7 missing on h1", err)
	}
}
