package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/leakcheck"
	"github.com/spindle-lab/spindle/internal/testsvc"
	"github.com/spindle-lab/spindle/tfb"
)

// TestMain stops the PostgreSQL server TestTFBApp starts
// (internal/testsvc) once the tests have run.
func TestMain(m *testing.M) { os.Exit(testsvc.Main(m)) }

// TestTFBApp serves the tfb app in each of its modes on the binary's
// PostgreSQL (the tables made by Start) and wants /health, /db,
// /fortunes and /queries answered, an unknown path 404, the answers
// counted, and nothing left after Close.
func TestTFBApp(t *testing.T) {
	dsn := testsvc.Postgres(t) // before the leak check: its wait stays
	type variant struct {
		mode      Mode
		goConns   bool // Options.DBGoConns
		wantPools int
	}
	var variants []variant
	for _, mode := range TFBModes {
		pools := 1
		if mode != ModeNetHTTP {
			pools = 2 // one per carrier
		}
		if mode == ModeNetHTTPCarrier {
			variants = append(variants, variant{mode, true, 1})
		}
		variants = append(variants, variant{mode, false, pools})
	}
	for _, v := range variants {
		name := string(v.mode)
		if v.goConns {
			name += " with Go conns"
		}
		t.Run(name, func(t *testing.T) {
			leakcheck.Register(t, 5*time.Second)
			// The carriers' hand-off as spindle serve sets it: a request
			// waiting for a conn of its pool waits the Go way.
			co := carrier.Options{HandoffThreshold: HandoffFor(v.mode, AppTFB, 0, false), OnHandoff: func(carrier.Handoff) {}}
			s, err := Start(context.Background(), Options{Mode: v.mode, Addr: "127.0.0.1:0", Threads: 2, Carrier: co,
				App: AppTFB, DB: dsn, DBPool: 4, AdminAddr: "127.0.0.1:0", DBGoConns: v.goConns})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if len(s.dbPools) != v.wantPools {
				t.Errorf("%d database pools, want %d", len(s.dbPools), v.wantPools)
			}
			c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
			defer c.CloseIdleConnections()
			base := "http://" + s.Addr().String()
			for _, tc := range []struct {
				path   string
				status int
				body   string // a part of the body
			}{
				{"/health", 200, "OK"},
				{"/db", 200, `"randomNumber":`},
				{"/queries?queries=3", 200, `"randomNumber":`},
				{"/fortunes", 200, "Additional fortune added at request time."},
				{"/json", 200, `{"message":"Hello, World!"}`},
				{"/fruits", 404, ""},
			} {
				resp, err := c.Get(base + tc.path)
				if err != nil {
					t.Fatalf("GET %s: %v", tc.path, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.body) {
					t.Errorf("GET %s: %d %q; want %d with %q", tc.path, resp.StatusCode, b, tc.status, tc.body)
				}
				if tc.path == "/db" {
					var w tfb.World
					if err := json.Unmarshal(b, &w); err != nil || w.ID < 1 || w.ID > tfb.WorldRows {
						t.Errorf("/db answered %q (%v)", b, err)
					}
				}
			}
			// More requests at once than the pools have conns: the rest
			// wait for one (in carrier mode this hung serve's carriers
			// while it did not hand off).
			var wg sync.WaitGroup
			for range 24 {
				wg.Go(func() {
					resp, err := c.Get(base + "/db")
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						t.Errorf("concurrent /db: %s", resp.Status)
					}
				})
			}
			wg.Wait()
			resp, err := c.Get("http://" + s.AdminAddr().String() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			metrics, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, want := range []string{`spindle_server_requests_total{code="200"} 29`, `spindle_server_requests_total{code="404"} 1`} {
				if !strings.Contains(string(metrics), want) {
					t.Errorf("/metrics lacks %s:\n%s", want, metrics)
				}
			}
		})
	}
}

// TestTFBOptionsRejected: the tfb app outside its modes, without a
// database, with one pgx cannot read or that does not answer, and with the
// blocking endpoint, fails to start, saying why.
func TestTFBOptionsRejected(t *testing.T) {
	leakcheck.Register(t, 5*time.Second)
	good := "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable" // nothing listens on port 1: refused
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"handoff mode", Options{Mode: ModeHandoff, DB: good}, "app tfb runs in modes nethttp, nethttp-carrier, carrier (not handoff)"},
		{"no database", Options{Mode: ModeNetHTTP}, "needs a database"},
		{"bad URL", Options{Mode: ModeNetHTTP, DB: "postgres://x@[::1/db"}, "cannot parse"},
		{"bad pool", Options{Mode: ModeNetHTTP, DB: good, DBPool: -1}, "pool size -1"},
		{"blocking", Options{Mode: ModeNetHTTP, DB: good, BlockingEndpoint: true}, "does not serve /block"},
		{"refused nethttp", Options{Mode: ModeNetHTTP, DB: good}, "database at 127.0.0.1:1"},
		{"refused nethttp-carrier", Options{Mode: ModeNetHTTPCarrier, DB: good, Threads: 1}, "database at 127.0.0.1:1"},
		{"refused carrier", Options{Mode: ModeCarrier, DB: good, Threads: 1}, "database at 127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.App, tc.o.Addr = AppTFB, "127.0.0.1:0"
			s, err := Start(context.Background(), tc.o)
			if err == nil {
				s.Close()
				t.Fatalf("Start: no error; want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("Start: %v; want one line with %q", err, tc.want)
			}
		})
	}
}
