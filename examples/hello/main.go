// Command hello shows spindle used from another module: an HTTP server
// answering "hello" on every path but /shared, served one of three ways
// (-api):
//
//   - http1: carriers run spindle's own HTTP/1.1 handler (carrier and
//     http1 packages; no *http.Request at all);
//   - carrierhttp: an ordinary net/http handler (an http.HandlerFunc), hosted
//     on the carriers by carrierhttp.Server: the "bring your own net/http
//     service" way;
//   - nethttp: the same handler on the standard library's http.Server, for
//     comparison.
//
// /shared (carrierhttp and nethttp) is the most ordinary Go pattern that
// blocks: concurrent requests share one backend call through
// golang.org/x/sync/singleflight. The leader makes the call (to this same
// server's "/", with carrierhttp.Transport on carriers, so that its carrier
// polls the call's conn); the followers wait for it on a WaitGroup, the Go
// way, blocking their carrier's thread. Without the hand-off of a blocked
// carrier (docs/carrier.md, "Hand-off") a follower on the leader's carrier
// would hang it for ever; here the handler runs unchanged and answers as
// under net/http.
//
// The carrierhttp and nethttp servers run the same handlers, so measuring
// them side by side (docs/PERFORMANCE.md, issue 10) shows what the carrier
// host costs against spindle's own code path and against net/http.
//
// With -check it serves on a free loopback port, asks itself once with the
// standard library's client (and, but for http1, sends 16 concurrent
// requests to /shared) and exits (0 when every answer is right), for every
// API (or only the one -api names), which is what CI runs.
//
// The module's go.mod points at the checkout with
// "replace github.com/spindle-lab/spindle => ../..", as a module using spindle from a local
// clone would.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrierhttp"
	"github.com/spindle-lab/spindle/http1"
	"golang.org/x/sync/singleflight"
)

// apis are the ways hello serves, in the order -check tries them.
var apis = []string{"http1", "carrierhttp", "nethttp"}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen `ADDRESS` (host:port; port 0: a free one)")
	api := flag.String("api", "http1", "how to serve: "+strings.Join(apis, ", ")+" (see the package doc)")
	carriers := flag.Int("carriers", 2, "carriers (event loops, each on its own OS thread; http1 and carrierhttp)")
	check := flag.Bool("check", false, "serve one request to itself on a free loopback port and exit, for every -api unless -api is given")
	flag.Parse()
	if flag.NArg() > 0 || !slices.Contains(apis, *api) || *carriers < 1 {
		fmt.Fprintf(os.Stderr, "hello: want -api one of %s, -carriers >= 1 and no arguments\n", strings.Join(apis, ", "))
		os.Exit(2)
	}
	var err error
	switch {
	case !*check:
		err = serve(*api, *addr, *carriers, nil)
	case flagGiven("api"):
		err = serve(*api, "127.0.0.1:0", *carriers, get)
	default:
		for _, a := range apis {
			if err = serve(a, "127.0.0.1:0", *carriers, get); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

func flagGiven(name string) (given bool) {
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

var body = []byte("hello\n")

// contentType is the answers' Content-Type, as a header value slice so
// that the net/http handler sets it without allocating.
var contentType = []string{"text/plain; charset=utf-8"}

// handle answers every request from the carrier that read it (the http1
// API).
func handle(req *http1.Request, rep *http1.Reply) {
	rep.ContentType = contentType[0]
	rep.Body = body
}

// hello is the net/http handler of the carrierhttp and nethttp APIs: the
// same function on both servers. (w.Header().Set("Content-Type", ...) does
// the same with one allocation more.)
func hello(w http.ResponseWriter, r *http.Request) {
	w.Header()["Content-Type"] = contentType
	w.Write(body)
}

// shared answers /shared with "shared: " and the body of one backend call
// (this server's "/") that concurrent requests share (see the package doc).
type shared struct {
	calls  singleflight.Group
	client *http.Client
	url    atomic.Pointer[string] // the backend's URL, known once the server listens
}

func newShared(rt http.RoundTripper) *shared {
	return &shared{client: &http.Client{Transport: rt}} // deadlines by context: docs/carrierhttp.md, "The Transport"
}

func (s *shared) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The leader's call serves its followers too: its own client going
	// away must not cancel it. The context keeps r's values: on carriers,
	// the task, so that the call is polled by the task's carrier.
	ctx := context.WithoutCancel(r.Context())
	v, err, _ := s.calls.Do("backend", func() (any, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, *s.url.Load(), nil)
		if err != nil {
			return nil, err
		}
		resp, err := s.client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	})
	if err != nil {
		http.Error(w, "backend: "+err.Error(), http.StatusBadGateway)
		return
	}
	w.Header()["Content-Type"] = contentType
	w.Write(append([]byte("shared: "), v.([]byte)...))
}

// mux routes /shared to sh and everything else to hello.
func mux(sh *shared) http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("/", hello)
	m.Handle("/shared", sh)
	return m
}

// serve serves api on addr until Ctrl-C, or, with check set, calls check
// with the address and returns its answer.
func serve(api, addr string, carriers int, check func(api, addr, path, want string) error) error {
	var (
		ln   net.Addr
		stop func()
		sh   *shared
	)
	switch api {
	case "nethttp":
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		sh = newShared(http.DefaultTransport)
		srv := &http.Server{Handler: mux(sh), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(l)
		ln, stop = l.Addr(), func() { srv.Close() }
	default:
		// net/http handlers on carriers: idle carriers give their P to the
		// handlers' goroutines and the GC (as spindle serve's
		// nethttp-carrier mode does); spindle's own API blocks in its poller.
		g, err := carrier.New(carrier.Options{Carriers: carriers, ParkIdle: api == "carrierhttp"})
		if err != nil {
			return err
		}
		defer g.Close()
		var l *carrier.Listener
		if api == "http1" {
			l, err = g.Listen(addr, func(t *carrier.Task, c *carrier.Conn) {
				_ = http1.ServeConn(c, http1.Options{}.WithDefaults(), handle, nil)
			}, carrier.ListenOptions{})
		} else {
			tr := &carrierhttp.Transport{}
			sh = newShared(tr)
			srv := &carrierhttp.Server{Handler: mux(sh), ReadHeaderTimeout: 10 * time.Second}
			l, err = srv.Listen(g, addr, carrier.ListenOptions{})
			// Shutdown waits for requests in flight; it runs from a
			// goroutine (here main's), never from a task of the group.
			stop = func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(ctx)
				tr.CloseIdleConnections()
			}
		}
		if err != nil {
			return err
		}
		defer l.Close()
		ln = l.Addr()
	}
	if stop != nil {
		defer stop()
	}
	if sh != nil {
		u := "http://" + ln.String() + "/"
		sh.url.Store(&u)
	}
	if check != nil {
		if err := check(api, ln.String(), "/", string(body)); err != nil || sh == nil {
			return err
		}
		return checkShared(api, ln.String(), 16)
	}
	fmt.Printf("hello: serving on http://%s/ with %s (Ctrl-C stops)\n", ln, api)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
	return nil
}

// checkShared sends n concurrent requests to /shared on addr and checks
// every answer, within get's bounds: on carriers a hang fails here.
func checkShared(api, addr string, n int) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = get(api, addr, "/shared", "shared: "+string(body)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Printf("hello: %s on %s answered %d concurrent /shared requests right\n", api, addr, n)
	return nil
}

// get sends one request for path to addr with the standard library's
// client side and checks the answer against want.
func get(api, addr, path, want string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10)) // the answer is 6 bytes; 1 KiB bounds a wrong one
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(b) != want || resp.Header.Get("Content-Type") != contentType[0] {
		return errors.New(api + ": " + path + ": unexpected answer: " + resp.Status + " " + resp.Header.Get("Content-Type") + " " + string(b))
	}
	if path == "/" {
		fmt.Printf("hello: %s on %s answered %s %q\n", api, addr, resp.Status, b)
	}
	return nil
}
