// Command grpc shows a Go service on carriers calling a gRPC backend from
// its handlers: the recipe of docs/carrier.md ("Dialers"), run and checked.
//
//   - The backend is grpc-go's server with grpc-go's interop TestService
//     (generated code that ships in the grpc module, so no protoc), on
//     ordinary goroutines, as a backend in another process would be.
//   - The front end is carrierhttp.Server on a carrier group. Its handlers
//     call the backend through one *grpc.ClientConn per carrier
//     (carrier.PerCarrier), each dialling with its carrier's DialContext,
//     and pass the request's context on (deadline, cancellation when the
//     client hangs up).
//
// The front end's API:
//
//	GET /echo?msg=TEXT[&timeout=DURATION]
//	    UnaryCall with TEXT as payload, within DURATION (default 2s);
//	    200 TEXT. The backend answers msg=hang only when the call's
//	    context ends: a slow backend, to watch a deadline expire.
//	GET /stream?n=N&size=S
//	    StreamingOutputCall asking for N messages of S bytes (message i
//	    is S times the letter 'a'+i%26); 200, one line per message,
//	    flushed as it arrives.
//
// Every answer names the carrier that ran the handler (X-Carrier; not on
// net/http). A failed call is answered with the gRPC code in X-Grpc-Code:
// 504 DeadlineExceeded, 499 Canceled (the client went away, nginx's code),
// 503 Unavailable, 502 otherwise.
//
// See README.md for what runs where: gRPC's own goroutines (its transport's
// reader and writer) do the conns' I/O, as foreign callers of the carrier
// conns.
//
// -server nethttp serves the same handlers on net/http's server with one
// client; -dialer default has the per-carrier clients dial with gRPC's own
// dialer (plain Go conns); -backend ADDRESS calls a backend elsewhere and
// -backend-only serves only the backend: bench.sh runs them as separate
// processes (docs/PERFORMANCE.md). With -check it starts everything on free
// loopback ports, for the recipe (carrierhttp, carrier dialer), the default
// dialer and net/http (or those -server and -dialer name), sends requests,
// checks the answers and exits 0, or 1 with one line saying what failed:
// what CI runs.
//
// The module's go.mod points at the checkout with "replace
// github.com/spindle-lab/spindle => ../..", as a module using spindle from a
// local clone would; grpc is a dependency of this example only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrierhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// serverNames and dialerNames are the -server and -dialer values; the
// dialer is carrierhttp's only.
var (
	serverNames = []string{"carrierhttp", "nethttp"}
	dialerNames = []string{"carrier", "default"}
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen `ADDRESS` (host:port; port 0: a free one)")
	server := flag.String("server", "carrierhttp", "front end: "+strings.Join(serverNames, ", "))
	dialer := flag.String("dialer", "carrier", "how carrierhttp's gRPC clients dial: carrier (Carrier.DialContext), default (gRPC's own dialer)")
	carriers := flag.Int("carriers", 2, "carriers (event loops, each on its own OS thread; carrierhttp only)")
	park := flag.Bool("park-idle", true, "idle carriers park, giving their P to goroutines (gRPC's among them) and the GC, rather than block in their poller")
	backendAddr := flag.String("backend", "", "call the gRPC backend at `ADDRESS` rather than start one on a free loopback port")
	backendOnly := flag.Bool("backend-only", false, "serve only the gRPC backend, on -addr")
	check := flag.Bool("check", false, "start everything on free loopback ports, check the answers and exit")
	flag.Parse()
	if flag.NArg() > 0 || !slices.Contains(serverNames, *server) || !slices.Contains(dialerNames, *dialer) || *carriers < 1 {
		fmt.Fprintf(os.Stderr, "grpc: want -server one of %s, -dialer one of %s, -carriers >= 1 and no arguments\n",
			strings.Join(serverNames, ", "), strings.Join(dialerNames, ", "))
		os.Exit(2)
	}
	o := carrier.Options{Carriers: *carriers, ParkIdle: *park}
	var err error
	switch {
	case *check:
		err = checkAll(*server, *dialer, o)
	case *backendOnly:
		err = serveBackendUntilInterrupt(*addr)
	default:
		err = serveUntilInterrupt(*server, *dialer, *addr, *backendAddr, o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpc:", err)
		os.Exit(1)
	}
}

// hang is the payload the backend answers only when the call's context
// ends.
const hang = "hang"

// backend is the gRPC service the front end calls. It counts the calls
// that wait now, so that a test sees a call reach it.
type backend struct {
	testpb.UnimplementedTestServiceServer
	waiting chan struct{} // one token per waiting "hang" call; nil: not counted
}

// UnaryCall answers the payload back; "hang" when the call's context ends
// (the caller's deadline or cancellation, which gRPC carries to the
// server).
func (b *backend) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	body := req.GetPayload().GetBody()
	if string(body) == hang {
		if b.waiting != nil {
			b.waiting <- struct{}{}
			defer func() { <-b.waiting }()
		}
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: body}}, nil
}

// StreamingOutputCall sends a message per ResponseParameters: message i is
// Size times the letter 'a'+i%26, after IntervalUs.
func (b *backend) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	for i, p := range req.GetResponseParameters() {
		if d := time.Duration(p.GetIntervalUs()) * time.Microsecond; d > 0 {
			time.Sleep(d)
		}
		body := []byte(strings.Repeat(string(rune('a'+i%26)), int(p.GetSize())))
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: body}}); err != nil {
			return err
		}
	}
	return nil
}

// startBackend serves a backend with grpc-go's server on addr; the server's
// goroutines are ordinary ones. opts are more server options (a test's
// interceptor).
func startBackend(addr string, b *backend, opts ...grpc.ServerOption) (*grpc.Server, net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	s := grpc.NewServer(opts...)
	testpb.RegisterTestServiceServer(s, b)
	go s.Serve(l)
	return s, l.Addr(), nil
}

// dialFunc is what grpc.WithContextDialer takes.
type dialFunc = func(ctx context.Context, addr string) (net.Conn, error)

// carrierDialer dials on carrier c: the conns of the client it is given to
// are carrier conns of c.
func carrierDialer(c *carrier.Carrier) dialFunc {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		return c.DialContext(ctx, "tcp", addr)
	}
}

// newClients makes one gRPC client per carrier of g for target, each
// dialling with dial(c) (carrierDialer in this program; nil: gRPC's own
// dialer), with opts added (a test's backoff).
func newClients(g *carrier.Group, target string, dial func(c *carrier.Carrier) dialFunc, opts ...grpc.DialOption) (*carrier.PerCarrier[*grpc.ClientConn], error) {
	return carrier.NewPerCarrier(g, func(c *carrier.Carrier) (*grpc.ClientConn, error) {
		o := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
		if dial != nil {
			o = append(o, grpc.WithContextDialer(dial(c)))
		}
		return grpc.NewClient(target, o...)
	}, func(cc *grpc.ClientConn) { cc.Close() })
}

// frontend is the HTTP API. Its handlers call the backend with the client
// that client returns for the request's context: on carriers, the one of
// the carrier that runs the handler (PerCarrier.Get).
type frontend struct {
	client func(ctx context.Context) *grpc.ClientConn
	// done, when set, is told how each backend call of a handler ended
	// (a test's window on calls whose client has gone).
	done func(path string, err error, took time.Duration)
	// errorLog is the carrierhttp Server's ErrorLog (nil: the standard
	// logger's).
	errorLog *log.Logger
}

func (f *frontend) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /echo", f.echo)
	mux.HandleFunc("GET /stream", f.stream)
	return mux
}

// defaultTimeout bounds a backend call whose request names no timeout.
const defaultTimeout = 2 * time.Second

func (f *frontend) echo(w http.ResponseWriter, r *http.Request) {
	named(w, r)
	timeout := defaultTimeout
	if s := r.FormValue("timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			http.Error(w, "timeout: want a positive duration such as 50ms", http.StatusBadRequest)
			return
		}
		timeout = d
	}
	// The request's context carries the task, the client's hang-up and,
	// with the timeout, the call's deadline: gRPC ends the call at either.
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	start := time.Now()
	resp, err := testpb.NewTestServiceClient(f.client(ctx)).UnaryCall(ctx, &testpb.SimpleRequest{
		Payload: &testpb.Payload{Body: []byte(r.FormValue("msg"))},
	})
	if f.done != nil {
		f.done(r.URL.Path, err, time.Since(start))
	}
	if err != nil {
		grpcError(w, err, time.Since(start))
		return
	}
	w.Write(resp.GetPayload().GetBody())
}

func (f *frontend) stream(w http.ResponseWriter, r *http.Request) {
	named(w, r)
	n, err1 := strconv.Atoi(r.FormValue("n"))
	size, err2 := strconv.Atoi(r.FormValue("size"))
	if err1 != nil || err2 != nil || n < 0 || n > 1000 || size < 0 || size > 1<<20 {
		http.Error(w, "want n in [0, 1000] and size in [0, 1 MiB]", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), defaultTimeout)
	defer cancel()
	req := &testpb.StreamingOutputCallRequest{}
	for range n {
		req.ResponseParameters = append(req.ResponseParameters, &testpb.ResponseParameters{Size: int32(size)})
	}
	start := time.Now()
	stream, err := testpb.NewTestServiceClient(f.client(ctx)).StreamingOutputCall(ctx, req)
	sent := false
	for err == nil {
		var m *testpb.StreamingOutputCallResponse
		if m, err = stream.Recv(); err == nil {
			sent = true
			w.Write(append(m.GetPayload().GetBody(), '\n'))
			http.NewResponseController(w).Flush()
		}
	}
	if err == io.EOF {
		err = nil
	}
	if f.done != nil {
		f.done(r.URL.Path, err, time.Since(start))
	}
	if err != nil && !sent {
		grpcError(w, err, time.Since(start))
	} else if err != nil {
		panic(http.ErrAbortHandler) // the head went out: drop the connection, as a proxy does
	}
}

// named sets X-Carrier to the carrier that runs the handler.
func named(w http.ResponseWriter, r *http.Request) {
	if t := carrier.TaskFromContext(r.Context()); t != nil {
		w.Header().Set("X-Carrier", strconv.Itoa(t.Carrier().ID()))
	}
}

// grpcError answers a failed call with its gRPC code.
func grpcError(w http.ResponseWriter, err error, took time.Duration) {
	code := status.Code(err)
	httpCode := http.StatusBadGateway
	switch code {
	case codes.DeadlineExceeded:
		httpCode = http.StatusGatewayTimeout
	case codes.Canceled:
		httpCode = 499 // the client went away: nobody reads this
	case codes.Unavailable:
		httpCode = http.StatusServiceUnavailable
	}
	w.Header().Set("X-Grpc-Code", code.String())
	http.Error(w, fmt.Sprintf("backend: %v (after %v)", err, took.Round(time.Millisecond)), httpCode)
}

// front is a front end listening on Addr, calling a backend, until Close.
type front struct {
	Addr  string
	Close func()
}

// startFront serves the API with server ("carrierhttp": on a group made
// with o, with one client per carrier dialling with dial) on addr, calling
// the backend at target. f's client is set here.
func startFront(server string, f *frontend, addr, target string, dial func(*carrier.Carrier) dialFunc, o carrier.Options, opts ...grpc.DialOption) (*front, error) {
	if server == "nethttp" {
		cc, err := grpc.NewClient(target, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
		if err != nil {
			return nil, err
		}
		f.client = func(context.Context) *grpc.ClientConn { return cc }
		l, err := net.Listen("tcp", addr)
		if err != nil {
			cc.Close()
			return nil, err
		}
		srv := &http.Server{Handler: f.routes(), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(l)
		return &front{Addr: l.Addr().String(), Close: func() {
			srv.Close()
			cc.Close()
		}}, nil
	}
	// The recipe: a group, one client per carrier, handlers that pick
	// their carrier's client with the request's context.
	g, err := carrier.New(o)
	if err != nil {
		return nil, err
	}
	clients, err := newClients(g, target, dial, opts...)
	if err != nil {
		g.Close()
		return nil, err
	}
	f.client = clients.Get
	srv := &carrierhttp.Server{Handler: f.routes(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: f.errorLog}
	l, err := srv.Listen(g, addr, carrier.ListenOptions{})
	if err != nil {
		closeClients(clients)
		g.Close()
		return nil, err
	}
	return &front{Addr: l.Addr().String(), Close: func() {
		// Shutdown waits for requests in flight; it runs from a goroutine
		// (here the caller's), never from a task of the group. The clients
		// close before the group, which would close their conns under them.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		l.Close()
		closeClients(clients)
		g.Close()
	}}, nil
}

func closeClients(clients *carrier.PerCarrier[*grpc.ClientConn]) {
	for _, cc := range clients.All() {
		cc.Close()
	}
}

// dialerFor is the dial of -dialer name.
func dialerFor(name string) func(*carrier.Carrier) dialFunc {
	if name == "default" {
		return nil
	}
	return carrierDialer
}

func serveUntilInterrupt(server, dialer, addr, backendAddr string, o carrier.Options) error {
	if backendAddr == "" {
		s, a, err := startBackend("127.0.0.1:0", &backend{})
		if err != nil {
			return err
		}
		defer s.Stop()
		backendAddr = a.String()
	}
	fe, err := startFront(server, &frontend{}, addr, backendAddr, dialerFor(dialer), o)
	if err != nil {
		return err
	}
	defer fe.Close()
	fmt.Printf("grpc: %s (%s dialer) serving on http://%s/echo?msg=hi, calling gRPC at %s (Ctrl-C stops)\n", server, dialer, fe.Addr, backendAddr)
	return waitInterrupt()
}

func serveBackendUntilInterrupt(addr string) error {
	s, a, err := startBackend(addr, &backend{})
	if err != nil {
		return err
	}
	defer s.Stop()
	fmt.Printf("grpc: backend serving gRPC on %s (Ctrl-C stops)\n", a)
	return waitInterrupt()
}

func waitInterrupt() error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
	return nil
}

// checkAll runs checkOne for each front end that -server and -dialer
// leave in (flags not given: all).
func checkAll(server, dialer string, o carrier.Options) error {
	type side struct{ server, dialer string }
	sides := []side{{"carrierhttp", "carrier"}, {"carrierhttp", "default"}, {"nethttp", "default"}}
	var errs []error
	for _, s := range sides {
		if flagGiven("server") && s.server != server || flagGiven("dialer") && s.dialer != dialer {
			continue
		}
		err := checkOne(s.server, s.dialer, o)
		if err == nil {
			fmt.Printf("grpc: %s with the %s dialer answered every check right\n", s.server, s.dialer)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func flagGiven(name string) (given bool) {
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// checkOne starts a backend and a front end on free loopback ports and
// checks an echo, a stream and a deadline, and on carriers that the
// handlers ran on carriers and, with the carrier dialer, that the clients
// dialled carrier conns.
func checkOne(server, dialer string, o carrier.Options) error {
	s, baddr, err := startBackend("127.0.0.1:0", &backend{})
	if err != nil {
		return err
	}
	defer s.Stop()
	dialed := make(chan bool, 100) // per dial: the conn is a carrier conn
	dial := dialerFor(dialer)
	if dial != nil {
		dial = func(c *carrier.Carrier) dialFunc {
			d := carrierDialer(c)
			return func(ctx context.Context, addr string) (net.Conn, error) {
				cn, err := d(ctx, addr)
				if err == nil {
					_, ok := cn.(*carrier.Conn)
					select {
					case dialed <- ok:
					default:
					}
				}
				return cn, err
			}
		}
	}
	// A call that waits on the backend blocks its task the Go way, and
	// carriers hand such runs off (docs/carrier.md, "Hand-off"), logging
	// each with its stack, and the watchdog reports those over 20 ms (the
	// 50 ms deadline below): expected here, so not logged, and -check
	// prints one line per front end.
	o.OnHandoff = func(carrier.Handoff) {}
	fe, err := startFront(server, &frontend{errorLog: log.New(io.Discard, "", 0)}, "127.0.0.1:0", baddr.String(), dial, o)
	if err != nil {
		return err
	}
	defer fe.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	onCarriers := server == "carrierhttp"
	checks := []struct {
		path, want string
		status     int
		within     time.Duration // 0: not timed
	}{
		{"/echo?msg=hello", "hello", 200, 0},
		{"/stream?n=3&size=4", "aaaa\nbbbb\ncccc\n", 200, 0},
		{"/echo?msg=" + hang + "&timeout=50ms", "", http.StatusGatewayTimeout, time.Second},
		{"/echo?msg=again", "again", 200, 0},
	}
	for _, c := range checks {
		start := time.Now()
		resp, err := client.Get("http://" + fe.Addr + c.path)
		if err != nil {
			return fmt.Errorf("%s, %s dialer: GET %s: %w", server, dialer, c.path, err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		took := time.Since(start)
		switch {
		case err != nil:
			return fmt.Errorf("%s, %s dialer: GET %s: %w", server, dialer, c.path, err)
		case resp.StatusCode != c.status || c.want != "" && string(b) != c.want:
			return fmt.Errorf("%s, %s dialer: GET %s: %s %q; want %d %q", server, dialer, c.path, resp.Status, b, c.status, c.want)
		case c.within > 0 && took > c.within:
			return fmt.Errorf("%s, %s dialer: GET %s took %v; want under %v", server, dialer, c.path, took, c.within)
		case onCarriers && resp.Header.Get("X-Carrier") == "":
			return fmt.Errorf("%s, %s dialer: GET %s: no X-Carrier: the handler ran on no carrier", server, dialer, c.path)
		}
	}
	if dial != nil {
		select {
		case ok := <-dialed:
			if !ok {
				return fmt.Errorf("%s, %s dialer: the gRPC client's conn is no *carrier.Conn", server, dialer)
			}
		default:
			return fmt.Errorf("%s, %s dialer: the gRPC client never called the carrier dialer", server, dialer)
		}
	}
	return nil
}
