package testsvc

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PgxPool is a pgxpool.Pool of at most maxConns connections to the server
// at dsn (Postgres's), closed when tb ends.
func PgxPool(tb testing.TB, dsn string, maxConns int32) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}
