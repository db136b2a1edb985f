package carrierhttp

import (
	"bufio"
	"context"
	"fmt"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/http1"
	"github.com/spindle-lab/spindle/internal/testsvc"
)

// fixedBody is the trivial handler of the benchmarks: a fixed body, its
// type and length set, as a health check answers.
var fixedBody = []byte("OK")

func fixedHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = contentTypeText
		w.Write(fixedBody)
	})
}

// contentTypeText is set as a slice so that the handler allocates nothing.
var contentTypeText = []string{"text/plain; charset=utf-8"}

// BenchmarkFixedBody measures one keep-alive client's request-response
// round trips to the fixed-body handler, on the carrier host, on
// http1.ServeConn with the same answer (the carrier mode's code path) and
// on net/http's server. Allocations are the whole process's (both
// servers' included; the client allocates nothing per request).
func BenchmarkFixedBody(b *testing.B) { benchFixedServers(b, benchRoundTrips) }

// benchFixedServers runs client against each server of the fixed-body
// answer: carrierhttp, http1.ServeConn (the carrier mode's code path) and
// net/http.
func benchFixedServers(b *testing.B, client func(b *testing.B, addr string)) {
	b.Run("carrierhttp", func(b *testing.B) {
		_, addr := startCarrier(b, fixedHandler(), nil)
		client(b, addr)
	})
	b.Run("http1", func(b *testing.B) {
		client(b, startHTTP1(b))
	})
	b.Run("nethttp", func(b *testing.B) {
		client(b, startNetHTTP(b, fixedHandler()))
	})
}

// BenchmarkTypicalHandler is a handler as usually written (Header().Set,
// io.WriteString, reading a query parameter and a header) on a request
// with a browser's handful of headers, on both servers.
func BenchmarkTypicalHandler(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, r.URL.Query().Get("name")+" "+r.Header.Get("User-Agent"))
	})
	b.Run("carrierhttp", func(b *testing.B) {
		_, addr := startCarrier(b, h, nil)
		benchRequest(b, addr, typicalRequest)
	})
	b.Run("nethttp", func(b *testing.B) {
		benchRequest(b, startNetHTTP(b, h), typicalRequest)
	})
}

// typicalRequest is a browser's GET with a handful of headers.
const typicalRequest = "GET /hello?name=spindle HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench/1.0\r\nAccept: */*\r\nAccept-Encoding: gzip\r\nConnection: keep-alive\r\n\r\n"

// benchRoundTrips sends b.N requests on one connection, each after the
// previous answer, reading answers of the first answer's length (the Date
// field keeps it constant).
func benchRoundTrips(b *testing.B, addr string) {
	benchRequest(b, addr, "GET /health HTTP/1.1\r\nHost: bench\r\n\r\n")
}

// benchRequest is benchRoundTrips with the request raw.
func benchRequest(b *testing.B, addr, raw string) {
	c, size := dialBench(b, addr, raw)
	benchExchanges(b, c, raw, size)
}

// benchExchanges sends raw on c b.N times, each after the previous answer,
// reading answers of size bytes.
func benchExchanges(b *testing.B, c net.Conn, raw string, size int) {
	req := []byte(raw)
	buf := make([]byte, size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// dialBench connects to addr, sends raw once and returns the connection
// (closed at the benchmark's end) and the size of the answer, which every
// later answer to raw has too (the Date field's length is fixed).
func dialBench(b *testing.B, addr, raw string) (net.Conn, int) {
	c := dial(b, addr)
	if _, err := c.Write([]byte(raw)); err != nil {
		b.Fatal(err)
	}
	cr := &countingReader{r: c}
	resp, err := http.ReadResponse(bufio.NewReader(cr), nil)
	if err != nil {
		b.Fatal(err)
	}
	io.ReadAll(resp.Body)
	return c, int(cr.n)
}

// countingReader reads one byte at a time, so that the bufio.Reader above
// it never reads beyond the first answer, and counts them.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p[:1])
	c.n += int64(n)
	return n, err
}

// pipelineDepth is how many requests BenchmarkPipelined sends in one write:
// enough that the two system calls per batch are a small part of each
// request's cost, which is then the server's code path.
const pipelineDepth = 32

// BenchmarkPipelined sends batches of pipelineDepth requests for the
// fixed-body answer and reads the answers; ns/op is per request. Beside
// carrierhttp and net/http it runs http1.ServeConn with the same answer
// (the carrier mode's code path, no *http.Request at all), the reference
// of issue 10's target.
func BenchmarkPipelined(b *testing.B) { benchFixedServers(b, benchPipelined) }

// startHTTP1 serves the fixed-body answer with http1.ServeConn on a fresh
// group of carriers.
func startHTTP1(b *testing.B) string {
	b.Helper()
	g, err := carrier.New(carrier.Options{Carriers: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	o := http1.Options{}.WithDefaults()
	l, err := g.Listen("127.0.0.1:0", func(t *carrier.Task, c *carrier.Conn) {
		http1.ServeConn(c, o, func(req *http1.Request, rep *http1.Reply) {
			rep.ContentType = contentTypeText[0]
			rep.Body = fixedBody
		}, nil)
	}, carrier.ListenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return l.Addr().String()
}

// benchPipelined is BenchmarkPipelined's client: b.N requests in batches.
func benchPipelined(b *testing.B, addr string) {
	one := "GET /health HTTP/1.1\r\nHost: bench\r\n\r\n"
	c, size := dialBench(b, addr, one)
	batch := []byte(strings.Repeat(one, pipelineDepth))
	buf := make([]byte, size*pipelineDepth)
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += pipelineDepth {
		k := min(pipelineDepth, b.N-n)
		if _, err := c.Write(batch[:k*len(one)]); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:k*size]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild measures conn.build alone, with no connection: the
// *http.Request made from a head parsed once (its strings, header map, URL
// and Host), for the benchmarks' /health request and BenchmarkTypicalHandler's
// browser-like one, each made anew (the default) and reused
// (Server.ReuseRequests). It is in-process CPU work, steadier than the
// socket benchmarks on a busy machine. Allocations: the head's one copy
// and the context; made anew, the request's parts and its header map.
func BenchmarkBuild(b *testing.B) {
	for _, tc := range []struct {
		name, raw string
		reuse     bool
	}{
		{"health", "GET /health HTTP/1.1\r\nHost: bench\r\n\r\n", false},
		{"typical", typicalRequest, false},
		{"health-reused", "GET /health HTTP/1.1\r\nHost: bench\r\n\r\n", true},
		{"typical-reused", typicalRequest, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := &conn{s: &Server{ReuseRequests: tc.reuse}}
			if tc.reuse {
				c.reused, c.hdr = &request{}, make(http.Header)
			}
			c.body.c = c
			c.ctx = context.Background()
			c.Buf = []byte(tc.raw)
			n, err := c.hp.ParseRequest(c.Buf, &c.preq, http1.Options{MaxHeaderBytes: c.s.maxHeaderBytes()})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				c.Start, c.End = 0, len(c.Buf) // build consumes the head
				if err := c.build(n); err != nil {
					b.Fatal(err)
				}
			}
			if c.req.Host != "bench" || c.req.URL.Path == "" {
				b.Fatalf("built %s %q, host %q", c.req.Method, c.req.RequestURI, c.req.Host)
			}
		})
	}
}

// sqliteClients is how many concurrent keep-alive clients
// BenchmarkSQLiteHandler runs: eight times its pool of connections, so
// that under net/http requests wait for one.
const sqliteClients = 16

// BenchmarkSQLiteHandler measures a database/sql handler (one indexed
// SELECT per request, sqliteLookup, on a SQLite file with the pure-Go
// driver and a pool of sqlitePool connections) under net/http and on one
// carrier, driven by sqliteClients concurrent keep-alive clients; req/s is
// the requests answered per second of the run, handoffs the carrier's
// hand-offs in the run (the lookup is far shorter than the threshold: a
// run handed off was preempted, or waited for a connection held by one).
func BenchmarkSQLiteHandler(b *testing.B) {
	path := newSQLiteDB(b)
	b.Run("nethttp", func(b *testing.B) {
		benchClients(b, startNetHTTP(b, sqliteHandler(openSQLite(b, path), sqliteLookup)))
	})
	for _, side := range []string{"carrier", "parked"} { // parked: Options.ParkIdle, serve's nethttp-carrier default
		b.Run(side, func(b *testing.B) {
			// The carrier's default report of a hand-off (a run preempted past
			// the threshold on this busy machine) would log, with a stack,
			// between the benchmark's name and its figures: the hand-offs are
			// reported as a metric instead.
			g, err := carrier.New(carrier.Options{Carriers: 1, ParkIdle: side == "parked", OnHandoff: func(carrier.Handoff) {}})
			if err != nil {
				b.Fatal(err)
			}
			s := &Server{Handler: sqliteHandler(openSQLite(b, path), sqliteLookup), ErrorLog: log.New(io.Discard, "", 0)}
			benchClients(b, listenOn(b, g, s))
			b.ReportMetric(float64(g.Snapshot()[0].Handoffs), "handoffs")
		})
	}
}

// benchClients sends b.N requests for rows of newSQLiteDB's table to addr
// from sqliteClients clients, each asking for a row of its own.
func benchClients(b *testing.B, addr string) {
	urls, wants := make([]string, sqliteClients), make([]string, sqliteClients)
	for i := range urls {
		id := i*(sqliteRows/sqliteClients) + 1
		urls[i] = fmt.Sprintf("http://%s/?arg=%d", addr, id)
		wants[i] = fmt.Sprintf("%d item-%d %d\n", id, id, id*37%1000)
	}
	driveClients(b, urls, wants)
}

// driveClients sends b.N requests from len(urls) goroutines, client i to
// urls[i], each an http.Client with a transport of its own (one keep-alive
// connection), and reports req/s. Each client's first request, before the
// timer starts, opens its connection and checks the answer is wants[i]
// ("": any 200).
func driveClients(b *testing.B, urls, wants []string) {
	clients := make([]*http.Client, len(urls))
	for i := range clients {
		tr := &http.Transport{}
		b.Cleanup(tr.CloseIdleConnections)
		clients[i] = &http.Client{Transport: tr, Timeout: 10 * time.Second}
		if got, err := getBody(clients[i].Get(urls[i])); err != nil || wants[i] != "" && got != wants[i] {
			b.Fatalf("GET %s: %q, %v; want %q", urls[i], got, err, wants[i])
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				resp, err := c.Get(urls[i])
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("GET %s: %s", urls[i], resp.Status)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// standardHandlers are the handlers that wait the Go way for less
// than the hand-off threshold, or longer (sleep50), as commonly written:
// backend is a URL answering at once. standardHandler adds the drivers'.
func standardHandlers(backend string) map[string]http.Handler {
	u, _ := url.Parse(backend)
	fast := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fast") })
	// The "-pooled" forms keep as many idle backend conns as their
	// requests use at once (16 clients, 3 calls each), where the default
	// Transport keeps 2 per host and dials the others afresh: with them the
	// comparison is of the servers, not of how many dials each side's
	// concurrency costs the handler (docs/PERFORMANCE.md, "Twelfth session").
	pooled := &http.Transport{MaxIdleConnsPerHost: 3 * sqliteClients}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.Transport = pooled
	return map[string]http.Handler{
		"timeout":         http.TimeoutHandler(fast, time.Second, "timeout"),
		"proxy":           httputil.NewSingleHostReverseProxy(u),
		"proxy-pooled":    proxy,
		"errgroup":        fanOut(&http.Client{}, backend),
		"errgroup-pooled": fanOut(&http.Client{Transport: pooled}, backend),
		"sleep50": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(50 * time.Millisecond)
			io.WriteString(w, "slept")
		}),
		// Gathers its collectors on goroutines of its own and waits.
		"promhttp": promHandler(),
	}
}

// fanOut is the errgroup handler: three backend calls with client from
// goroutines of an errgroup, waited for.
func fanOut(client *http.Client, backend string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g, ctx := errgroup.WithContext(r.Context())
		for range 3 {
			g.Go(func() error {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, backend, nil)
				if err != nil {
					return err
				}
				_, err = getBody(client.Do(req))
				return err
			})
		}
		if err := g.Wait(); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
		}
	})
}

// benchRedisKey is the key the redis handler GETs; benchRedisValue its
// value, the answer.
const benchRedisKey, benchRedisValue = "bench:greeting", "hello"

// standardHandler is the handler called name for one server side, made
// afresh: standardHandlers', or a driver's, with a client or pool of its
// own (closed when b ends) of the binary's Redis or PostgreSQL
// (internal/testsvc; b skips where it cannot start): "redis" GETs
// benchRedisKey through go-redis (its default pool, 20 connections on 2
// CPUs), "pgxpool" looks up the row ?arg (pgLookup) on a pgxpool.Pool of
// sqlitePool connections, as BenchmarkSQLiteHandler's does on SQLite.
//
// dial, where not nil, is the drivers' dialer: a carrier group's
// DialContext makes their conns carrier conns, polled by the carrier that
// runs the handler (issue 25), where the default ones are Go's net.Conns,
// on which a handler on a carrier blocks the Go way.
//
// pool is pgxpool's size (0: sqlitePool).
func standardHandler(b *testing.B, backend, name string, dial func(ctx context.Context, network, addr string) (net.Conn, error), pool int32) http.Handler {
	b.Helper()
	switch name {
	case "redis":
		c := newRedisClient(b, testsvc.Redis(b), 0)
		if dial != nil {
			c = goredis.NewClient(&goredis.Options{Addr: c.Options().Addr, Dialer: dial})
			b.Cleanup(func() { c.Close() })
		}
		if err := c.Set(context.Background(), benchRedisKey, benchRedisValue, 0).Err(); err != nil {
			b.Fatal(err)
		}
		return redisGetHandler(c, benchRedisKey)
	case "pgxpool":
		dsn := pgItems(b)
		if pool == 0 {
			pool = sqlitePool
		}
		if dial == nil {
			return pgxHandler(testsvc.PgxPool(b, dsn, pool), pgLookup)
		}
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			b.Fatal(err)
		}
		cfg.MaxConns = pool
		cfg.ConnConfig.DialFunc = dial
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		return pgxHandler(pool, pgLookup)
	}
	return standardHandlers(backend)[name]
}

// driveStandard drives the standard handler called name at addr from
// sqliteClients (16) keep-alive clients: pgxpool's each asking for a row of
// its own (benchClients), the others for "/", redis's wanting
// benchRedisValue.
func driveStandard(b *testing.B, name, addr string) {
	if name == "pgxpool" {
		benchClients(b, addr)
		return
	}
	urls, wants := make([]string, sqliteClients), make([]string, sqliteClients)
	for i := range urls {
		urls[i] = "http://" + addr + "/"
		if name == "redis" {
			wants[i] = benchRedisValue
		}
	}
	driveClients(b, urls, wants)
}

// BenchmarkStandardHandlers serves each of standardHandler's handlers
// under net/http, on one carrier, and on one carrier wrapped in
// OffloadHandler, 16 keep-alive clients in closed loop, req/s: the issue's
// ratios (carrier over net/http) for handlers that wait the Go way; the
// drivers' handlers also on one carrier with their conns dialled on it
// ("polled": carrier conns, which the carrier polls for the handler's
// task). Each side makes its handler, clients and pools afresh. Run the
// sides alternated (docs/PERFORMANCE.md).
//
// "carriers" is the same CPU budget as net/http's: one carrier per CPU
// the process may use (Options.Carriers 0), where net/http's server may
// run on every P. One carrier serves its requests on one thread, so on
// this 2-CPU machine "carrier" compares one core's event loop with a
// server that may use both (docs/PERFORMANCE.md, "Twelfth session").
// "parked" and "carriers-parked" are those with Options.ParkIdle, as
// spindle serve runs nethttp-carrier. Each carrier side reports its
// hand-offs and park yields per request.
func BenchmarkStandardHandlers(b *testing.B) {
	backend := startNetHTTP(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "backend") }))
	for _, name := range []string{"timeout", "proxy", "proxy-pooled", "errgroup", "errgroup-pooled", "sleep50", "promhttp", "redis", "pgxpool"} {
		b.Run(name+"/nethttp", func(b *testing.B) {
			driveStandard(b, name, startNetHTTP(b, standardHandler(b, "http://"+backend, name, nil, 0)))
		})
		if name == "pgxpool" { // and with a pool as large as the clients: no request waits for a conn
			b.Run(name+"/nethttp-pool16", func(b *testing.B) {
				driveStandard(b, name, startNetHTTP(b, standardHandler(b, "http://"+backend, name, nil, sqliteClients)))
			})
		}
		sides := []string{"carrier", "carriers", "parked", "carriers-parked", "offload"}
		switch name {
		case "redis":
			sides = append(sides, "polled")
		case "pgxpool":
			sides = append(sides, "polled", "polled-pool16")
		}
		for _, side := range sides {
			b.Run(name+"/"+side, func(b *testing.B) {
				// The park watch on: these handlers wait on drivers and
				// backends (docs/PERFORMANCE.md, "Twelfth session").
				o := carrier.Options{Carriers: 1, OnHandoff: func(carrier.Handoff) {}}
				if side == "carriers" || side == "carriers-parked" {
					o.Carriers = 0 // one per CPU
				}
				o.ParkIdle = strings.HasSuffix(side, "parked") // idle carriers park: spindle serve's nethttp-carrier default
				g, err := carrier.New(o)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { g.Close() }) // also when the handler skips (listenOn closes it too)
				var dial func(ctx context.Context, network, addr string) (net.Conn, error)
				pool := int32(0)
				switch side {
				case "polled-pool16":
					pool = sqliteClients
					fallthrough
				case "polled":
					dial = g.DialContext
				}
				h := standardHandler(b, "http://"+backend, name, dial, pool) // it may skip
				if side == "offload" {
					h = OffloadHandler(h)
				}
				s := &Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
				driveStandard(b, name, listenOn(b, g, s))
				var tot carrier.Telemetry
				for _, t := range g.Snapshot() {
					tot.Handoffs += t.Handoffs
					tot.ParkYields += t.ParkYields
					tot.ParkWatched += t.ParkWatched
				}
				b.ReportMetric(float64(tot.Handoffs)/float64(b.N), "handoffs/op")
				b.ReportMetric(float64(tot.ParkYields)/float64(b.N), "parkyields/op")
				b.ReportMetric(float64(tot.ParkWatched)/float64(b.N), "watched/op")
			})
		}
	}
}
