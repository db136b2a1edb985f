package tfb

import (
	"strings"
	"testing"
)

// TestPoolConfig: a DSN pgx reads gives a pool of the size asked (0: the
// default); a DSN it cannot read and a negative size are errors that say
// why.
func TestPoolConfig(t *testing.T) {
	for _, tc := range []struct {
		dsn     string
		size    int32
		want    int32
		wantErr string
	}{
		{"postgres://u@127.0.0.1:5432/db", 0, DefaultPoolSize, ""},
		{"postgres://u@127.0.0.1:5432/db", 3, 3, ""},
		{"host=127.0.0.1 user=u", 1, 1, ""},
		{"postgres://u@127.0.0.1:5432/db", -1, 0, "must not be negative"},
		{"postgres://u@127.0.0.1:99999/db", 1, 0, "tfb: cannot parse"},
		{"postgres://u@[::1/db", 1, 0, "tfb: cannot parse"},
		{"host=127.0.0.1 pool_max_conns=zero", 1, 0, "pool_max_conns"},
	} {
		cfg, err := PoolConfig(tc.dsn, tc.size)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("PoolConfig(%q, %d): %v; want an error with %q", tc.dsn, tc.size, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("PoolConfig(%q, %d): %v", tc.dsn, tc.size, err)
		case tc.wantErr == "" && cfg.MaxConns != tc.want:
			t.Errorf("PoolConfig(%q, %d): MaxConns %d; want %d", tc.dsn, tc.size, cfg.MaxConns, tc.want)
		}
	}
}

// The pool's conns, which pgxpool dials and greets from a goroutine of its
// own, leave Go's netpoller once the carrier's tasks alone query over
// them: each had a Go conn for that goroutine, whose duplicate fd woke a
// runtime thread at every answer to the tasks' queries (an epoll_pwait and
// two context switches per query, docs/PERFORMANCE.md "Thirteenth
// session"). One pool conn, a few /queries requests: its Go conn is
// dropped, and the answers stay right.
func TestPolledConnsLeaveGoNetpoller(t *testing.T) {
	base, g := servePolled(t, checkLeaks(t), 1, 1)
	c := newClient(t, 1, requestTimeout)
	for range 3 {
		if err := getOK(c, base+"/queries?queries=20", '['); err != nil {
			t.Fatal(err)
		}
	}
	if n := g.Snapshot()[0].GoConnsDropped; n != 1 {
		t.Errorf("the carrier dropped %d Go conns after 60 queries on its one pool conn, want 1: the conn pgxpool's goroutine greeted stays in Go's netpoller", n)
	}
}
