package carrierhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	goredis "github.com/redis/go-redis/v9"

	"github.com/spindle-lab/spindle/internal/testsvc"
)

// The corpus's and the benchmarks' database and cache drivers, go-redis
// and pgxpool, against a real Redis and PostgreSQL that internal/testsvc
// starts once for this test binary (TestMain stops them), and promhttp.

// corpusRequests is how many concurrent requests serveAll sends to a
// corpus handler: redisBarrier's last one wakes the others.
const corpusRequests = 8

// driverCorpus starts the servers of TestBlockingHandlers' driver cases,
// "redis" (redisBarrier) and "pgxpool" (pgReport on a pool of
// sqlitePool), each in a subtest of t of that name, which skips with the
// reason where its server cannot start here; it returns the names of the
// cases whose server started, and handler, which makes a case's handler
// for one server (clients and pools of its own, closed when tb ends).
// Starting the servers here, before the cases' leak checks count, keeps
// the servers' waiting goroutines out of the count.
func driverCorpus(t *testing.T) (names []string, handler func(tb testing.TB, name string) http.Handler) {
	var redisAddr, pgDSN string
	if t.Run("redis", func(t *testing.T) { redisAddr = testsvc.Redis(t) }) && redisAddr != "" {
		names = append(names, "redis")
	}
	if t.Run("pgxpool", func(t *testing.T) { pgDSN = pgItems(t) }) && pgDSN != "" {
		names = append(names, "pgxpool")
	}
	return names, func(tb testing.TB, name string) http.Handler {
		switch name {
		case "redis":
			// A pool of exactly the corpus's requests: the waiters hold
			// theirs in BLPOP while the last one pushes.
			return redisBarrier(tb, newRedisClient(tb, redisAddr, corpusRequests), tb.Name())
		case "pgxpool":
			return pgxHandler(testsvc.PgxPool(tb, pgDSN, sqlitePool), pgReport)
		}
		return nil
	}
}

// redisBarrier is the corpus's "redis" case: each request counts itself
// in (INCR); the first corpusRequests-1 wait for news in a BLPOP, the
// server holding their connections, and the last pushes one item of news
// for each. On carriers a waiter's run blocks the Go way (go-redis reads a
// net.Conn) until the last request comes: without the hand-off, a carrier
// that took a waiter would never start the last request, and every waiter
// would time out (tried once with HandoffThreshold -1 on one carrier: the
// first waiter answered 504 after BLPOP's 5 s, the others timed out; with
// the hand-off, 7 hand-offs and the same answers as net/http's). Keys are prefix's, deleted first, so each server counts
// from zero.
func redisBarrier(tb testing.TB, c *goredis.Client, prefix string) http.Handler {
	tb.Helper()
	arrived, news := prefix+":arrived", prefix+":news"
	if err := c.Del(context.Background(), arrived, news).Err(); err != nil {
		tb.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		n, err := c.Incr(ctx, arrived).Result()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if n == corpusRequests {
			items := make([]any, corpusRequests-1)
			for i := range items {
				items[i] = "news"
			}
			if err := c.RPush(ctx, news, items...).Err(); err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			fmt.Fprintf(w, "woke %d", len(items))
			return
		}
		// The wait is bounded within serveAll's 10 s client timeout.
		kv, err := c.BLPop(ctx, 5*time.Second, news).Result()
		if errors.Is(err, goredis.Nil) {
			http.Error(w, "no news", http.StatusGatewayTimeout)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		io.WriteString(w, kv[1])
	})
}

// newRedisClient is a go-redis client of the server at addr with a pool
// of poolSize connections (0: go-redis's default, ten per GOMAXPROCS),
// closed when tb ends.
func newRedisClient(tb testing.TB, addr string, poolSize int) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: poolSize})
	tb.Cleanup(func() { c.Close() })
	return c
}

// redisGetHandler answers the value of key, one GET per request.
func redisGetHandler(c *goredis.Client, key string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := c.Get(r.Context(), key).Result()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		io.WriteString(w, v)
	})
}

// pgReport is pgxpool's corpus query, sqliteReport's scan of every row,
// grouped (the same answer: four lines, "c0 2000 996000" first); pgLookup
// the benchmark's, sqliteLookup's one row by its primary key, in
// PostgreSQL's placeholders. As with SQLite, eight requests on a pool of
// two are handed off on carriers (8 hand-offs on one carrier, a trial run)
// and do not hang without the hand-off (the same answers with
// HandoffThreshold -1): a request holds its connection only while it
// reads the rows.
const (
	pgReport = sqliteReport
	pgLookup = "SELECT id, name, price FROM items WHERE id = $1"
)

// pgItems makes the table items of newSQLiteDB, the same rows, in the
// binary's PostgreSQL, where the binary's first call finds it missing, and
// returns the server's DSN.
func pgItems(tb testing.TB) string {
	tb.Helper()
	dsn := testsvc.Postgres(tb)
	ctx := context.Background()
	pool := testsvc.PgxPool(tb, dsn, 1)
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS items (id integer PRIMARY KEY, name text NOT NULL, category text NOT NULL, price integer NOT NULL)"); err != nil {
		tb.Fatal(err)
	}
	const fill = `INSERT INTO items (id, name, category, price)
		SELECT id, 'item-' || id, 'c' || (id % $2), id * 37 % 1000 FROM generate_series(1, $1::integer) AS id
		ON CONFLICT (id) DO NOTHING`
	if _, err := pool.Exec(ctx, fill, sqliteRows, sqliteCategories); err != nil {
		tb.Fatal(err)
	}
	return dsn
}

// pgxHandler is sqliteHandler on a pgxpool.Pool: query with the request's
// ?arg values as its arguments, the rows answered one line each, columns
// separated by spaces; the connection goes back to the pool before the
// answer is written.
func pgxHandler(pool *pgxpool.Pool, query string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args []any
		for _, v := range r.URL.Query()["arg"] {
			args = append(args, v)
		}
		body, err := pgxLines(r.Context(), pool, query, args)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(body)
	})
}

// pgxLines runs query on pool and returns its rows, one line each.
func pgxLines(ctx context.Context, pool *pgxpool.Pool, query string, args []any) ([]byte, error) {
	rows, err := pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var b bytes.Buffer
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprint(&b, v)
		}
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// promHandler is promhttp's handler of a registry of its own with a few
// collectors, as a service exposes: the Go runtime's, the process's, and
// a counter and a histogram with a few series each.
func promHandler() http.Handler {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bench_requests_total", Help: "Requests by route."}, []string{"route"})
	durations := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bench_request_seconds", Help: "Request durations by route."}, []string{"route"})
	for i, route := range []string{"/orders", "/users", "/health"} {
		requests.WithLabelValues(route).Add(float64(100 * (i + 1)))
		durations.WithLabelValues(route).Observe(0.001 * float64(i+1))
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), requests, durations)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
