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
