// Package mock is the backend of the system under test: an HTTP/1.1 server on
// carriers that answers /health at once and /fruits (and /) after a think
// time with a fixed pretty-printed JSON list of ten fruits, with optional
// faults (500 answers, connections closed without an answer, jittered think
// times) for tests. The think time is a timer on the carrier, never a
// sleeping thread, so one carrier serves any number of waiting requests.
package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/http1"
	"github.com/spindle-lab/spindle/internal/memrelease"
)

// Fruit is one element of the mock's JSON list.
type Fruit struct {
	Name   string  `json:"name"`
	Colour string  `json:"colour"`
	Price  float64 `json:"price"` // per kilogram, in an unnamed currency
}

// Fruits is the list the mock serves.
var Fruits = []Fruit{
	{"Apple", "red", 2.49},
	{"Banana", "yellow", 1.19},
	{"Cherry", "dark red", 7.95},
	{"Grape", "green", 3.5},
	{"Kiwi", "brown", 4.2},
	{"Lemon", "yellow", 2.99},
	{"Mango", "orange", 5.75},
	{"Orange", "orange", 1.89},
	{"Pear", "green", 2.65},
	{"Plum", "purple", 3.1},
}

// Body is the /fruits answer: Fruits as JSON indented with tabs (636 bytes).
var Body = func() []byte {
	b, err := json.MarshalIndent(Fruits, "", "\t")
	if err != nil {
		panic(err) // static data: cannot fail
	}
	return append(b, '\n')
}()

// Fixed answers.
var (
	healthBody   = []byte("OK")
	notFoundBody = []byte("Not Found")
	failBody     = []byte("injected failure")
	// methodNotAllowedBody answers CONNECT.
	methodNotAllowedBody = []byte("Method Not Allowed")
)

// Defaults for Options; the spindle command reuses them as flag defaults.
const (
	DefaultPort      = 8080
	DefaultThinkTime = time.Millisecond
	DefaultThreads   = 1
)

// Options configure the mock.
type Options struct {
	// Addr is the listen address, "ip:port" or ":port"; port 0 picks one.
	Addr string
	// Threads is the number of carriers; 0: DefaultThreads.
	Threads int
	// CPUs are the CPUs the carriers may run on; empty: any allowed CPU.
	CPUs cpu.Set
	// ThinkTime is how long /fruits takes before answering; 0: answer at once.
	ThinkTime time.Duration
	// ThinkJitter adds a uniformly random extra think time in [0, ThinkJitter).
	ThinkJitter time.Duration
	// FailRate is the fraction (0 to 1) of /fruits requests answered 500.
	FailRate float64
	// CloseRate is the fraction (0 to 1) of /fruits requests whose
	// connection is closed, after the think time, without an answer. The
	// two are shares of the same requests: together at most 1.
	CloseRate float64
	// Seed seeds the fault and jitter draws (carrier i uses Seed+i).
	Seed uint64
	// HTTP are the request limits and timeouts. Request bodies are dropped
	// as they arrive whatever its DiscardBody says: nothing reads them.
	HTTP http1.Options
	// MaxConns bounds the connections open at once; one beyond it is
	// accepted and closed at once, and counted (Server.Rejected). 0: no
	// bound.
	MaxConns int
}

// ErrBadOptions is wrapped by Start's errors for invalid Options.
var ErrBadOptions = errors.New("mock: bad options")

// Server is a running mock.
type Server struct {
	o     Options
	g     *carrier.Group
	ln    *carrier.Listener
	rngs  []*rand.Rand // one per carrier, used only by its tasks
	close sync.Once
	done  chan struct{}
	err   error

	open, rejected atomic.Int64 // connections open, connections refused for MaxConns
}

// Start starts the mock; it stops when ctx is cancelled or Close is called.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Threads == 0 {
		o.Threads = DefaultThreads
	}
	switch {
	case o.Threads < 0:
		return nil, fmt.Errorf("%w: threads %d: must be positive", ErrBadOptions, o.Threads)
	case o.ThinkTime < 0 || o.ThinkJitter < 0:
		return nil, fmt.Errorf("%w: think time %v and jitter %v must not be negative", ErrBadOptions, o.ThinkTime, o.ThinkJitter)
	case !(o.FailRate >= 0 && o.FailRate <= 1) || !(o.CloseRate >= 0 && o.CloseRate <= 1):
		return nil, fmt.Errorf("%w: fail rate %v and close rate %v must be within 0 and 1", ErrBadOptions, o.FailRate, o.CloseRate)
	case o.FailRate+o.CloseRate > 1:
		return nil, fmt.Errorf("%w: fail rate %v and close rate %v add up to more than 1 (each is a share of the requests)", ErrBadOptions, o.FailRate, o.CloseRate)
	case o.MaxConns < 0:
		return nil, fmt.Errorf("%w: max conns %d: must not be negative", ErrBadOptions, o.MaxConns)
	}
	o.HTTP.DiscardBody = true
	// No hand-off: the mock's handlers park on timers and conns and never
	// block the Go way, so a hand-off could only be of a run preempted past
	// the threshold (on a CPU shared with the load and the server, often):
	// cost, and noise in the backend's think time. It also keeps the mock
	// out of the path of a rare stall of the end-to-end tests not yet
	// explained (docs/carrier.md, "Hand-off").
	g, err := carrier.New(carrier.Options{Carriers: o.Threads, CPUs: o.CPUs, HandoffThreshold: -1})
	if err != nil {
		return nil, fmt.Errorf("mock: %w", err)
	}
	s := &Server{o: o, g: g, done: make(chan struct{})}
	for i := range g.Len() {
		s.rngs = append(s.rngs, rand.New(rand.NewPCG(o.Seed+uint64(i), o.Seed^0x9e3779b97f4a7c15)))
	}
	s.ln, err = g.Listen(o.Addr, s.serve, carrier.ListenOptions{ReusePort: g.Len() > 1})
	if err != nil {
		g.Close()
		return nil, fmt.Errorf("mock: %w", err)
	}
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	// Memory a burst of connections used goes back to the OS once it ends
	// (package memrelease says why a server has to ask).
	go memrelease.New(s.open.Load, memrelease.Options{}).Run(s.done)
	return s, nil
}

// Addr returns the address the mock listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Open returns the number of client connections open now.
func (s *Server) Open() int64 { return s.open.Load() }

// Rejected returns the number of connections closed as soon as accepted
// because MaxConns were open.
func (s *Server) Rejected() int64 { return s.rejected.Load() }

// Close stops the mock: listener, connections and carriers.
func (s *Server) Close() error {
	s.close.Do(func() {
		s.err = errors.Join(s.ln.Close(), s.g.Close())
		close(s.done)
	})
	return s.err
}

// serve answers one client connection.
func (s *Server) serve(t *carrier.Task, c *carrier.Conn) {
	if n := s.open.Add(1); s.o.MaxConns > 0 && n > int64(s.o.MaxConns) {
		s.open.Add(-1)
		s.rejected.Add(1)
		c.Close()
		return
	}
	defer s.open.Add(-1)
	rng := s.rngs[t.Carrier().ID()]
	http1.ServeConn(c, s.o.HTTP, func(req *http1.Request, rep *http1.Reply) {
		if string(req.Method) == "CONNECT" { // not a proxy: a 2xx would make the connection a tunnel (RFC 9110 §9.3.6)
			rep.Status, rep.ContentType, rep.Body, rep.Allow, rep.Close = 405, "text/plain; charset=utf-8", methodNotAllowedBody, "GET, HEAD", true
			return
		}
		switch string(req.Path()) { // origin or absolute form
		case "/health":
			rep.ContentType, rep.Body = "text/plain; charset=utf-8", healthBody
		case "/fruits", "/":
			think := s.o.ThinkTime
			if s.o.ThinkJitter > 0 {
				think += time.Duration(rng.Int64N(int64(s.o.ThinkJitter)))
			}
			if think > 0 {
				t.Sleep(think)
			}
			// One draw for both faults, so that each is its own share of
			// the requests: [0, close) closes, [close, close+fail) fails.
			u := 1.0
			if s.o.CloseRate > 0 || s.o.FailRate > 0 {
				u = rng.Float64()
			}
			switch {
			case u < s.o.CloseRate:
				rep.Abort = true
			case u < s.o.CloseRate+s.o.FailRate:
				rep.Status, rep.ContentType, rep.Body = 500, "text/plain; charset=utf-8", failBody
			default:
				rep.ContentType, rep.Body = "application/json", Body
			}
		default:
			rep.Status, rep.ContentType, rep.Body = 404, "text/plain; charset=utf-8", notFoundBody
		}
	}, nil)
}
