package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// leakCheck fails the test if, after its cleanups (those registered after
// this call run first), the process has more goroutines or open file
// descriptors than now, after waiting up to 5 s for them to go:
// spindle's internal/leakcheck, which this module cannot import.
func leakCheck(t *testing.T) {
	t.Helper()
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("leak check needs /proc/self/fd: %v", err)
		}
		return len(ents)
	}
	// Go's netpoller keeps its own descriptors from the first pollable
	// file on: open it before counting.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	g0, f0 := runtime.NumGoroutine(), fds()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			g, f := runtime.NumGoroutine(), fds()
			if g <= g0 && f <= f0 {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("leak: goroutines %d -> %d, fds %d -> %d\n%s", g0, g, f0, f, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// sides are the front ends the tests run: carrierhttp on 1 and 2
// carriers with the default poller (epoll), and on 2 with io_uring, whose
// conns give foreign callers the ring engine's path (docs/carrier.md,
// "Conns for any goroutine"; skipped where the kernel refuses io_uring).
var sides = []struct {
	name     string
	carriers int
	poller   string
}{
	{"carriers=1", 1, "epoll"},
	{"carriers=2", 2, "epoll"},
	{"io_uring", 2, "io_uring"},
}

// dial is one call of the carrier dialer that succeeded.
type dial struct {
	carrier int    // the carrier whose client dialled (its PerCarrier slot)
	local   string // the conn's local address: the peer the backend sees
	isConn  bool   // the conn is a *carrier.Conn
}

// rig is a backend and a carrierhttp front end on loopback, with what the
// test observes: the carrier dialer's calls, the peer address the backend
// saw for each payload, and how the handlers' calls ended.
type rig struct {
	t       *testing.T
	backend *backend
	srv     *grpc.Server
	baddr   string
	front   *front
	client  *http.Client

	mu       sync.Mutex
	dials    []dial
	peers    map[string]string // payload -> the caller's address, as the backend saw it
	handoffs atomic.Int64

	ended chan ended // the handlers' calls, as they end
}

type ended struct {
	path string
	err  error
	took time.Duration
}

// newRig starts a backend (counting its waiting calls, recording each
// caller's address) and a carrierhttp front end of carriers carriers
// whose clients dial with the carrier dialer, counted. Both stop at the
// test's end, and a leak check follows.
func newRig(t *testing.T, carriers int, poller string, opts ...grpc.DialOption) *rig {
	if err := carrier.CheckPoller(poller); err != nil {
		t.Skipf("poller %s: %v", poller, err)
	}
	leakCheck(t)
	r := &rig{t: t, backend: &backend{waiting: make(chan struct{}, 100)}, peers: map[string]string{}, ended: make(chan ended, 1000)}
	r.startBackend("127.0.0.1:0")
	t.Cleanup(func() { r.srv.Stop() })
	f := &frontend{
		done: func(path string, err error, took time.Duration) {
			select {
			case r.ended <- ended{path, err, took}:
			default:
			}
		},
		errorLog: log.New(io.Discard, "", 0), // the watchdog's reports of handlers that wait long: expected here
	}
	o := carrier.Options{Carriers: carriers, Poller: poller, ParkIdle: true, OnHandoff: func(carrier.Handoff) { r.handoffs.Add(1) }}
	fe, err := startFront("carrierhttp", f, "127.0.0.1:0", r.baddr, r.dialer, o, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fe.Close)
	r.front = fe
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	r.client = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return r
}

// startBackend serves r.backend on addr, recording each unary call's
// caller.
func (r *rig) startBackend(addr string) {
	r.t.Helper()
	record := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if p, ok := peer.FromContext(ctx); ok {
			if m, ok := req.(*testpb.SimpleRequest); ok {
				r.mu.Lock()
				r.peers[string(m.GetPayload().GetBody())] = p.Addr.String()
				r.mu.Unlock()
			}
		}
		return h(ctx, req)
	}
	s, a, err := startBackend(addr, r.backend, grpc.UnaryInterceptor(record))
	if err != nil {
		r.t.Fatal(err)
	}
	r.srv, r.baddr = s, a.String()
}

// dialer is carrierDialer, recording each conn it makes.
func (r *rig) dialer(c *carrier.Carrier) dialFunc {
	d := carrierDialer(c)
	return func(ctx context.Context, addr string) (net.Conn, error) {
		cn, err := d(ctx, addr)
		if err == nil {
			_, isConn := cn.(*carrier.Conn)
			r.mu.Lock()
			r.dials = append(r.dials, dial{carrier: c.ID(), local: cn.LocalAddr().String(), isConn: isConn})
			r.mu.Unlock()
		}
		return cn, err
	}
}

// reply is an answer of the front end.
type reply struct {
	status  int
	body    string
	carrier string // X-Carrier
	code    string // X-Grpc-Code
	took    time.Duration
}

func (r *rig) get(path string) (reply, error) {
	start := time.Now()
	resp, err := r.client.Get("http://" + r.front.Addr + path)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{resp.StatusCode, string(b), resp.Header.Get("X-Carrier"), resp.Header.Get("X-Grpc-Code"), time.Since(start)}, nil
}

// waitBackend waits up to 5 s until n calls wait in the backend.
func (r *rig) waitBackend(n int) {
	r.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(r.backend.waiting) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("%d calls wait in the backend after 5 s; want %d", len(r.backend.waiting), n)
		}
	}
}

// TestUnaryFromHandlers has 20 clients send 200 echo requests at once to
// handlers on each side, each with its own payload, and checks
// every answer. It checks that the calls went over carrier conns dialled
// on the handler's own carrier: the backend records the address of the
// conn each payload came over, the dialer which carrier dialled each conn
// (its PerCarrier slot) and whether it is a *carrier.Conn, and each answer
// names the carrier that ran its handler (X-Carrier).
func TestUnaryFromHandlers(t *testing.T) {
	for _, side := range sides {
		t.Run(side.name, func(t *testing.T) {
			carriers := side.carriers
			r := newRig(t, carriers, side.poller)
			const clients, each = 20, 10
			replies := make([][]reply, clients)
			var wg sync.WaitGroup
			for i := range clients {
				wg.Go(func() {
					for j := range each {
						msg := fmt.Sprintf("m%d-%d", i, j)
						rep, err := r.get("/echo?msg=" + msg)
						if err != nil {
							t.Error(err)
							return
						}
						if rep.status != 200 || rep.body != msg {
							t.Errorf("GET /echo?msg=%s: %d %q (%s); want 200 %q", msg, rep.status, rep.body, rep.code, msg)
							return
						}
						replies[i] = append(replies[i], rep)
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			dialedBy := map[string]int{} // local address -> dialling carrier
			for _, d := range r.dials {
				if !d.isConn {
					t.Errorf("carrier %d's client dialled a conn that is no *carrier.Conn", d.carrier)
				}
				dialedBy[d.local] = d.carrier
			}
			served := map[string]int{}
			for i := range clients {
				for j, rep := range replies[i] {
					msg := fmt.Sprintf("m%d-%d", i, j)
					served[rep.carrier]++
					by, ok := dialedBy[r.peers[msg]]
					switch {
					case !ok:
						t.Errorf("%s came to the backend from %q, no conn the carrier dialer made (%v)", msg, r.peers[msg], r.dials)
					case strconv.Itoa(by) != rep.carrier:
						t.Errorf("%s: handler on carrier %q, its call over a conn carrier %d dialled", msg, rep.carrier, by)
					}
				}
			}
			// One conn per client, so one dial per carrier: the handlers of
			// 20 client connections, handed out round-robin, ran on every
			// carrier.
			if len(served) != carriers || len(r.dials) != carriers {
				t.Errorf("answers by carrier %v, dials %v; want every one of %d carriers to serve and dial once", served, r.dials, carriers)
			}
			t.Logf("answers by carrier %v, dials %v, hand-offs %d", served, r.dials, r.handoffs.Load())
		})
	}
}

// TestStreamFromHandler reads a server-streaming call in a handler, 4
// requests at once, on 1 and 2 carriers.
func TestStreamFromHandler(t *testing.T) {
	for _, side := range sides {
		t.Run(side.name, func(t *testing.T) {
			r := newRig(t, side.carriers, side.poller)
			const n, size = 50, 1000
			var want strings.Builder
			for i := range n {
				want.WriteString(strings.Repeat(string(rune('a'+i%26)), size) + "\n")
			}
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					rep, err := r.get(fmt.Sprintf("/stream?n=%d&size=%d", n, size))
					if err != nil {
						t.Error(err)
					} else if rep.status != 200 || rep.body != want.String() {
						t.Errorf("GET /stream: %d (%s), %d bytes; want 200 and %d bytes, message i %d times 'a'+i", rep.status, rep.code, len(rep.body), want.Len(), size)
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestDeadlineWhileBackendSlow has 4 handlers on one carrier call a
// backend that does not answer, within 1 s. While they wait, the carrier
// answers 20 other requests, all before the first slow answer; then each
// slow call ends with DeadlineExceeded in about its deadline, and the
// backend sees the calls cancelled. (The deadline is long enough that a
// machine shared with other tests serves the 20 within it.)
func TestDeadlineWhileBackendSlow(t *testing.T) {
	r := newRig(t, 1, "epoll")
	if rep, err := r.get("/echo?msg=warm"); err != nil || rep.status != 200 {
		t.Fatalf("GET /echo?msg=warm: %+v %v", rep, err) // the client's conn is up before the clock starts
	}
	const deadline = time.Second
	slow := make(chan reply, 4)
	for range cap(slow) {
		go func() {
			rep, err := r.get("/echo?msg=" + hang + "&timeout=" + deadline.String())
			if err != nil {
				rep.body = err.Error()
			}
			slow <- rep
		}()
	}
	r.waitBackend(cap(slow))
	start := time.Now()
	for i := range 20 {
		msg := "quick" + strconv.Itoa(i)
		rep, err := r.get("/echo?msg=" + msg)
		if err != nil || rep.status != 200 || rep.body != msg {
			t.Fatalf("GET /echo?msg=%s while 4 calls wait: %+v %v", msg, rep, err)
		}
	}
	quick := time.Since(start)
	if len(slow) > 0 {
		t.Errorf("a slow call answered before the 20 quick requests, which took %v: the carrier served them late", quick)
	}
	for range cap(slow) {
		rep := <-slow
		if rep.status != http.StatusGatewayTimeout || rep.code != codes.DeadlineExceeded.String() {
			t.Errorf("slow call: %d %s %q; want 504 DeadlineExceeded", rep.status, rep.code, rep.body)
		}
		// -race and a shared 2-CPU machine: allow a second over.
		if rep.took < deadline || rep.took > 2*deadline {
			t.Errorf("slow call answered after %v; want its deadline, %v, or a little more", rep.took, deadline)
		}
	}
	r.waitBackend(0) // gRPC cancelled the calls at the backend
	t.Logf("20 quick requests in %v while 4 calls waited, hand-offs %d", quick, r.handoffs.Load())
}

// TestClientGoneCancelsCall has a client send a request whose handler
// waits on a backend that does not answer, then hang up. carrierhttp
// cancels the request's context (the carrier's hang-up watch, under epoll
// and io_uring), and the gRPC call ends with Canceled at once, not at its
// 10 s deadline; the backend sees the call cancelled.
func TestClientGoneCancelsCall(t *testing.T) {
	for _, side := range sides {
		t.Run(side.name, func(t *testing.T) {
			r := newRig(t, side.carriers, side.poller)
			c, err := net.Dial("tcp", r.front.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, "GET /echo?msg="+hang+"&timeout=10s HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			r.waitBackend(1)
			gone := time.Now()
			c.Close()
			select {
			case e := <-r.ended:
				if code := status.Code(e.err); code != codes.Canceled {
					t.Errorf("the call ended with %v (%v); want Canceled", code, e.err)
				}
				if d := time.Since(gone); d > 2*time.Second {
					t.Errorf("the call ended %v after the client left", d)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the call still waits 5 s after its client left")
			}
			r.waitBackend(0)
			// The carriers serve on.
			if rep, err := r.get("/echo?msg=after"); err != nil || rep.status != 200 || rep.body != "after" {
				t.Errorf("GET /echo?msg=after: %+v %v", rep, err)
			}
		})
	}
}

// TestBackendRestart stops the backend under the front end and starts it
// again on the same address. Meanwhile calls fail at once with
// Unavailable (503); then gRPC reconnects through the carrier dialer and
// the calls succeed again, over new carrier conns. The clients retry
// after 20-200 ms rather than gRPC's default 1-120 s, so that the test is
// short.
func TestBackendRestart(t *testing.T) {
	fast := grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 200 * time.Millisecond},
		MinConnectTimeout: time.Second,
	})
	r := newRig(t, 2, "epoll", fast)
	echoAll := func(round string, ok func(msg string, rep reply) bool) {
		t.Helper()
		var wg sync.WaitGroup
		for i := range 8 { // 8 client connections: both carriers
			wg.Go(func() {
				msg := fmt.Sprintf("%s-%d", round, i)
				rep, err := r.get("/echo?msg=" + msg + "&timeout=3s")
				if err != nil {
					t.Errorf("%s: %v", msg, err)
				} else if !ok(msg, rep) {
					t.Errorf("%s: %d %s %q after %v", msg, rep.status, rep.code, rep.body, rep.took)
				}
			})
		}
		wg.Wait()
	}
	up := func(msg string, rep reply) bool { return rep.status == 200 && rep.body == msg }
	echoAll("before", up)
	r.mu.Lock()
	before := len(r.dials)
	r.mu.Unlock()

	r.srv.Stop()
	echoAll("down", func(_ string, rep reply) bool {
		return rep.status == http.StatusServiceUnavailable && rep.code == codes.Unavailable.String() && rep.took < 2*time.Second
	})

	r.startBackend(r.baddr) // the same port: gRPC's target does not change
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		rep, err := r.get("/echo?msg=probe&timeout=1s")
		if err == nil && rep.status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer 5 s after the backend's restart: %+v %v", rep, err)
		}
	}
	echoAll("after", up)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.dials) <= before {
		t.Errorf("dials %v: none since the restart", r.dials)
	}
	for _, d := range r.dials {
		if !d.isConn {
			t.Errorf("carrier %d's client dialled a conn that is no *carrier.Conn", d.carrier)
		}
	}
}
