package bench

import (
	"slices"
	"strings"
	"testing"
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

func TestSetFlag(t *testing.T) {
	a := setFlag([]string{"serve", "--backend", "x", "--port", "1"}, "--backend", "y")
	if !slices.Equal(a, []string{"serve", "--backend", "y", "--port", "1"}) {
		t.Errorf("setFlag replace = %q", a)
	}
	a = setFlag([]string{"mock"}, "--host", "")
	if !slices.Equal(a, []string{"mock", "--host", ""}) {
		t.Errorf("setFlag append = %q", a)
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
