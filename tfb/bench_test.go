package tfb

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/testsvc"
)

// benchClients is how many keep-alive clients BenchmarkTFB runs in closed
// loop, and how many connections its pool may open: a request never waits
// for a database connection.
const benchClients = 16

// benchWarmup is how many requests each client sends before the timer
// starts: the connections are open and every pool connection has
// prepared its statements.
const benchWarmup = 4

// benchEndpoints are BenchmarkTFB's test types, with the first byte of
// their answers.
var benchEndpoints = []struct {
	name, path string
	first      byte
}{
	{"db", "/db", '{'},
	{"fortunes", "/fortunes", '<'},
	{"queries20", "/queries?queries=20", '['},
	{"json", "/json", '{'},
}

// BenchmarkTFB measures each endpoint's max throughput under net/http's
// server ("nethttp") and carrierhttp's on one carrier ("carrier"; "polled"
// with the pool's conns dialled on the carrier, which polls them), with
// benchClients clients in closed loop: req/s, and for the carrier the
// hand-offs per request (a handler whose pgx wait held the carrier past
// the hand-off threshold). Each side's server is fresh; the pool is
// shared.
func BenchmarkTFB(b *testing.B) {
	pool := testsvc.PgxPool(b, testDSN(b), benchClients)
	h := New(pool)
	for _, ep := range benchEndpoints {
		b.Run(ep.name, func(b *testing.B) {
			b.Run("nethttp", func(b *testing.B) {
				closedLoop(b, serveNetHTTP(b, h)+ep.path, ep.first, nil)
			})
			b.Run("carrier", func(b *testing.B) {
				base, g := serveCarriers(b, h, 1)
				closedLoop(b, base+ep.path, ep.first, g)
			})
			b.Run("polled", func(b *testing.B) { // pgx over carrier conns
				base, g := servePolled(b, testDSN(b), 1, benchClients)
				closedLoop(b, base+ep.path, ep.first, g)
			})
		})
	}
}

// closedLoop sends b.N GETs of url from benchClients clients, each
// sending its next request when its last is answered, and reports req/s
// and, where g is not nil, g's first carrier's hand-offs per request.
func closedLoop(b *testing.B, url string, first byte, g *carrier.Group) {
	c := newClient(b, benchClients, requestTimeout)
	var (
		errOnce  sync.Once
		firstErr error
	)
	send := func(n int64) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range benchClients {
			wg.Go(func() {
				for next.Add(1) <= n {
					if err := getOK(c, url, first); err != nil {
						errOnce.Do(func() { firstErr = err })
						return
					}
				}
			})
		}
		wg.Wait()
	}
	handoffs := func() uint64 {
		if g == nil {
			return 0
		}
		return g.Snapshot()[0].Handoffs
	}
	send(benchClients * benchWarmup)
	h0 := handoffs()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	send(int64(b.N))
	elapsed := time.Since(start)
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	if g != nil {
		b.ReportMetric(float64(handoffs()-h0)/float64(b.N), "handoffs/op")
	}
}
