package main

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
)

// sides are the ways TestRouters and BenchmarkRouters serve each router:
// net/http, and carrierhttp on one carrier or one per CPU, blocking in
// its poller when idle or parking (carrierOptions, what -server
// carrierhttp runs).
var sides = []struct {
	name   string
	server string
	opts   carrier.Options
}{
	{"nethttp", "nethttp", carrier.Options{}},
	{"carrier", "carrierhttp", carrier.Options{Carriers: 1}},
	{"parked", "carrierhttp", carrier.Options{Carriers: 1, ParkIdle: true}},
	{"carriers", "carrierhttp", carrier.Options{Carriers: 2}},
	{"carriers-parked", "carrierhttp", carrier.Options{Carriers: 2, ParkIdle: true}},
}

func serveSide(t testing.TB, router, server string, o carrier.Options) string {
	t.Helper()
	s, err := serve(server, newRouter(router, newStore()), "127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s.Addr
}

// TestRouters sends checks to each router on each side, then has 16
// clients at once create users and read them back, each answer checked:
// the store's mutex is taken by tasks of both carriers where there are
// two.
func TestRouters(t *testing.T) {
	for _, router := range routerNames {
		for _, side := range sides {
			t.Run(router+"/"+side.name, func(t *testing.T) {
				addr := serveSide(t, router, side.server, side.opts)
				client := &http.Client{Timeout: 5 * time.Second}
				defer client.CloseIdleConnections()
				for _, c := range checks {
					if err := c.do(client, addr, router); err != nil {
						t.Fatal(err)
					}
				}
				var wg sync.WaitGroup
				for i := range 16 {
					wg.Go(func() {
						for j := range 20 {
							name := fmt.Sprintf("c%d-%d", i, j)
							created := check{method: "POST", path: "/users", body: `{"name":"` + name + `"}`, status: 201}
							if err := created.do(client, addr, router); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				// 101 users, then 320 more: 421 is the last, 422 none.
				for _, c := range []check{{method: "GET", path: "/users/421", status: 200}, {method: "GET", path: "/users/422", status: 404}} {
					if err := c.do(client, addr, router); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
}

// BenchmarkRouters serves GET /users/{id} (a route parameter, the
// middleware, the store's mutex and a JSON answer) with each router on
// each side, 16 keep-alive clients in closed loop, req/s. Run the sides
// alternated (docs/PERFORMANCE.md): net/http's server may use every CPU,
// "carrier" and "parked" one, "carriers" and "carriers-parked" one per CPU
// (GOMAXPROCS). The carrier sides count their hand-offs (a run held its
// carrier past the threshold: on a busy machine a descheduled run, or one
// waiting for the store's mutex) rather than log each.
func BenchmarkRouters(b *testing.B) {
	for _, router := range routerNames {
		for _, side := range sides {
			b.Run(router+"/"+side.name, func(b *testing.B) {
				o := side.opts
				if o.Carriers > 1 {
					o.Carriers = runtime.GOMAXPROCS(0)
				}
				var handoffs atomic.Int64
				o.OnHandoff = func(carrier.Handoff) { handoffs.Add(1) }
				drive(b, "http://"+serveSide(b, router, side.server, o)+"/users/", 16)
				if side.server != "nethttp" {
					b.ReportMetric(float64(handoffs.Load())/float64(b.N), "handoffs/op")
				}
			})
		}
	}
}

// drive sends b.N requests for base+ID (ID cycling through the 100 users)
// from clients keep-alive clients, each waiting for its answer before it
// sends again, and reports req/s.
func drive(b *testing.B, base string, clients int) {
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for range clients {
		wg.Go(func() {
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				resp, err := client.Get(base + strconv.FormatInt(n%100+1, 10))
				if err != nil {
					b.Error(err)
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Errorf("GET %s: %s, %v", base, resp.Status, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
