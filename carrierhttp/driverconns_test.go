package carrierhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	goredis "github.com/redis/go-redis/v9"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/testsvc"
)

// Drivers over carrier conns (issue 25): pgx (database/sql and pgxpool)
// and go-redis dial with the carriers' DialContext, so that their conns are
// carrier conns, which their own goroutines (pgx's context watcher, the
// pools' dialers and health checks) use as well as the handlers' tasks.
// Before conns served any goroutine, one *sql.DB shared by 2 carriers
// killed the process ("coro: OS thread locking must match"), a 50 ms query
// timeout was ignored (302 ms), and the pools' dialers were never used on
// a carrier.

// countingDial wraps dial: it counts the conns dialled and fails a conn
// that is not a carrier conn.
func countingDial(n *atomic.Int64, dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if _, ok := c.(*carrier.Conn); !ok {
			c.Close()
			return nil, fmt.Errorf("dialled a %T, want a *carrier.Conn", c)
		}
		n.Add(1)
		return c, nil
	}
}

// carrierServer starts a server on n carriers and returns its base URL,
// its group, and the function that gives it its handler: the handler's
// clients are made after the server, since their dialers need its group.
func carrierServer(t *testing.T, n int) (string, *carrier.Group, func(http.Handler)) {
	t.Helper()
	g, err := carrier.New(carrier.Options{Carriers: n})
	if err != nil {
		t.Fatal(err)
	}
	var h atomic.Pointer[http.Handler]
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }), ErrorLog: log.New(io.Discard, "", 0)}
	return "http://" + listenOn(t, g, s), g, func(handler http.Handler) { h.Store(&handler) }
}

// getAll sends n GETs of url from conc clients at once and returns the
// first failure: a status other than 200 or a body other than want(i).
func getAll(url string, n, conc int, want func(i int) string) error {
	var failed atomic.Pointer[error]
	var next atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				resp, err := client.Get(url + strconv.Itoa(i))
				if err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || string(b) != want(i) {
					err := fmt.Errorf("request %d: %d %q, want 200 %q", i, resp.StatusCode, b, want(i))
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		return *p
	}
	return nil
}

// plusOne answers SELECT $1 + 1 for ?n= with query.
func plusOne(query func(ctx context.Context, n int) (int, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		v, err := query(r.Context(), n)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, v)
	})
}

func wantPlusOne(i int) string { return strconv.Itoa(i + 1) }

func TestDriverConnsOnCarriers(t *testing.T) {
	t.Run("pgx database/sql, one DB for 2 carriers", func(t *testing.T) {
		dsn := testsvc.Postgres(t)
		url, g, setHandler := carrierServer(t, 2)
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		var dials atomic.Int64
		cfg.DialFunc = countingDial(&dials, g.DialContext)
		db := stdlib.OpenDB(*cfg)
		db.SetMaxOpenConns(4)
		t.Cleanup(func() { db.Close() })
		setHandler(plusOne(func(ctx context.Context, n int) (v int, err error) {
			err = db.QueryRowContext(ctx, "SELECT $1::int + 1", n).Scan(&v)
			return v, err
		}))
		if err := getAll(url+"/?n=", 400, 16, wantPlusOne); err != nil {
			t.Fatal(err)
		}
		if dials.Load() == 0 {
			t.Error("no conn dialled on a carrier")
		}
	})
	t.Run("pgx query timeout on one carrier", func(t *testing.T) {
		dsn := testsvc.Postgres(t)
		url, g, setHandler := carrierServer(t, 1)
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		var dials atomic.Int64
		cfg.ConnConfig.DialFunc = countingDial(&dials, g.DialContext)
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := pool.Exec(ctx, "SELECT pg_sleep(1)")
			fmt.Fprintf(w, "%v %d", errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled), time.Since(start).Milliseconds())
		}))
		for range 3 {
			resp, err := http.Get(url + "/")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var timedOut bool
			var ms int
			fmt.Sscanf(string(b), "%t %d", &timedOut, &ms)
			if !timedOut || ms > 500 {
				t.Errorf("a 50ms query timeout: timed out %v after %d ms (answer %q); want true within 500 ms", timedOut, ms, b)
			}
		}
		if dials.Load() == 0 {
			t.Error("no conn dialled on a carrier")
		}
	})
	t.Run("pgxpool per carrier", func(t *testing.T) {
		dsn := testsvc.Postgres(t)
		url, g, setHandler := carrierServer(t, 2)
		dials := make([]atomic.Int64, 2)
		pools, err := carrier.NewPerCarrier(g, func(c *carrier.Carrier) (*pgxpool.Pool, error) {
			cfg, err := pgxpool.ParseConfig(dsn)
			if err != nil {
				return nil, err
			}
			cfg.MaxConns = 2
			cfg.ConnConfig.DialFunc = countingDial(&dials[c.ID()], c.DialContext)
			return pgxpool.NewWithConfig(context.Background(), cfg)
		}, (*pgxpool.Pool).Close)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, p := range pools.All() {
				p.Close()
			}
		})
		var wrong atomic.Int64
		setHandler(plusOne(func(ctx context.Context, n int) (v int, err error) {
			if task := carrier.TaskFromContext(ctx); task == nil || pools.Get(ctx) != pools.Of(task.Carrier()) {
				wrong.Add(1)
			}
			err = pools.Get(ctx).QueryRow(ctx, "SELECT $1::int + 1", n).Scan(&v)
			return v, err
		}))
		if err := getAll(url+"/?n=", 400, 16, wantPlusOne); err != nil {
			t.Fatal(err)
		}
		if wrong.Load() > 0 {
			t.Errorf("%d requests got another carrier's pool", wrong.Load())
		}
		for i := range dials {
			if dials[i].Load() == 0 {
				t.Errorf("carrier %d's pool dialled no conn on it", i)
			}
		}
	})
	t.Run("go-redis", func(t *testing.T) {
		addr := testsvc.Redis(t)
		url, g, setHandler := carrierServer(t, 2)
		var dials atomic.Int64
		c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 4, Dialer: countingDial(&dials, g.DialContext)})
		t.Cleanup(func() { c.Close() })
		key := t.Name()
		setHandler(plusOne(func(ctx context.Context, n int) (int, error) {
			k := key + ":" + strconv.Itoa(n)
			if err := c.Set(ctx, k, n+1, time.Minute).Err(); err != nil {
				return 0, err
			}
			return c.Get(ctx, k).Int()
		}))
		if err := getAll(url+"/?n=", 400, 16, wantPlusOne); err != nil {
			t.Fatal(err)
		}
		if dials.Load() == 0 {
			t.Error("no conn dialled on a carrier")
		}
	})
}
