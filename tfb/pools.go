package tfb

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spindle-lab/spindle/carrier"
)

// DefaultPoolSize is the connections a pool may open (each pool of
// NewCarrierPools: one per carrier) where the caller does not say: 16, as
// many as BenchmarkTFB's clients, so that a request seldom waits for one.
const DefaultPoolSize = 16

// PoolConfig parses dsn (a PostgreSQL URL or key=value string, as
// pgxpool.ParseConfig reads it) into a pool of at most size connections;
// size 0 is DefaultPoolSize.
func PoolConfig(dsn string, size int32) (*pgxpool.Config, error) {
	if size < 0 {
		return nil, fmt.Errorf("tfb: pool size %d: must not be negative", size)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("tfb: %w", err)
	}
	if size == 0 {
		size = DefaultPoolSize
	}
	cfg.MaxConns = size
	return cfg, nil
}

// NewCarrierPools opens one pool of at most size connections (0:
// DefaultPoolSize) per carrier of g, each dialling its connections on its
// carrier (Carrier.DialContext), so that NewPools(pools.Get) sends each
// request's queries over connections its own carrier polls. The pools
// connect lazily, at their first use; the caller closes every one
// (pools.All) before it closes g.
func NewCarrierPools(ctx context.Context, g *carrier.Group, dsn string, size int32) (*carrier.PerCarrier[*pgxpool.Pool], error) {
	return carrier.NewPerCarrier(g, func(c *carrier.Carrier) (*pgxpool.Pool, error) {
		cfg, err := PoolConfig(dsn, size)
		if err != nil {
			return nil, err
		}
		cfg.ConnConfig.DialFunc = c.DialContext
		return pgxpool.NewWithConfig(ctx, cfg)
	}, (*pgxpool.Pool).Close)
}
