// Command routers shows the two most used Go routers, gin and chi, served
// unchanged on spindle's carriers: the same small JSON API (a users store)
// written once for each router (-router), served by the standard library's
// http.Server or by carrierhttp.Server on carriers (-server).
//
// The API, the same under both routers:
//
//	GET  /health       200 "ok"
//	GET  /users/{id}   200 {"id":ID,"name":"..."}; 400 when ID is not a
//	                   positive integer; 404 when no such user
//	POST /users        201 {"id":ID,"name":NAME} from a body {"name":NAME};
//	                   400 on a body that is not that JSON or has no name
//	GET  /metrics      the process's metrics (promhttp: the Go and process
//	                   collectors, gathered on goroutines of promhttp's own
//	                   and gzipped where the client accepts it)
//	any other method on a route: 405; any other path: 404
//
// Every answer carries X-Router (the router's name), set by a middleware, as
// real services set request IDs or CORS headers. The store is a map behind
// a sync.Mutex: a lock taken the Go way, which is safe on carriers.
//
// With -check it serves every router on every server (or those -router and
// -server name) on a free loopback port, sends each the requests of checks
// and exits 0 when every answer is right: what CI runs. routers_test.go
// runs the same table and measures each pair (BenchmarkRouters;
// docs/PERFORMANCE.md).
//
// The module's go.mod points at the checkout with "replace
// github.com/spindle-lab/spindle => ../..", as a module using spindle from a
// local clone would; gin and chi are dependencies of this example only, not
// of spindle.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrierhttp"
)

// routerNames and serverNames are the -router and -server values, in the
// order -check tries them.
var (
	routerNames = []string{"gin", "chi"}
	serverNames = []string{"nethttp", "carrierhttp"}
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen `ADDRESS` (host:port; port 0: a free one)")
	router := flag.String("router", "gin", "router: "+strings.Join(routerNames, ", "))
	server := flag.String("server", "carrierhttp", "server: "+strings.Join(serverNames, ", "))
	carriers := flag.Int("carriers", 2, "carriers (event loops, each on its own OS thread; carrierhttp only)")
	park := flag.Bool("park-idle", true, "idle carriers park, giving their P to goroutines and the GC, rather than block in their poller (carrierhttp only)")
	check := flag.Bool("check", false, "serve on a free loopback port, check the answers and exit, for every router and server unless -router or -server is given")
	flag.Parse()
	if flag.NArg() > 0 || !slices.Contains(routerNames, *router) || !slices.Contains(serverNames, *server) || *carriers < 1 {
		fmt.Fprintf(os.Stderr, "routers: want -router one of %s, -server one of %s, -carriers >= 1 and no arguments\n",
			strings.Join(routerNames, ", "), strings.Join(serverNames, ", "))
		os.Exit(2)
	}
	if !*check {
		if err := serveUntilInterrupt(*router, *server, *addr, carrierOptions(*carriers, *park)); err != nil {
			fmt.Fprintln(os.Stderr, "routers:", err)
			os.Exit(1)
		}
		return
	}
	var errs []error
	for _, r := range routerNames {
		for _, s := range serverNames {
			if flagGiven("router") && r != *router || flagGiven("server") && s != *server {
				continue
			}
			err := checkPair(r, s, carrierOptions(*carriers, *park))
			if err == nil {
				fmt.Printf("routers: %s on %s answered all %d checks right\n", r, s, len(checks))
			}
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "routers:", err)
		os.Exit(1)
	}
}

func flagGiven(name string) (given bool) {
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// user is the API's one resource.
type user struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// store holds the users, behind a mutex.
type store struct {
	mu    sync.Mutex
	users map[int64]user
	next  int64
}

// newStore returns a store holding users 1 to 100, named "user-ID".
func newStore() *store {
	s := &store{users: make(map[int64]user)}
	for range 100 {
		s.add("")
	}
	return s
}

// add stores a user called name ("user-ID" when empty) and returns it.
func (s *store) add(name string) user {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	if name == "" {
		name = "user-" + strconv.FormatInt(s.next, 10)
	}
	u := user{ID: s.next, Name: name}
	s.users[u.ID] = u
	return u
}

func (s *store) get(id int64) (user, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	return u, ok
}

// parseID is the {id} of /users/{id}: a positive integer.
func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, fmt.Errorf("user id %q: want a positive integer", s)
	}
	return id, nil
}

// decodeUser reads POST /users's body: {"name": NAME}, NAME not empty,
// at most 1 KiB.
func decodeUser(body io.Reader) (string, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(io.LimitReader(body, 1<<10)).Decode(&in); err != nil {
		return "", fmt.Errorf("body: %v", err)
	}
	if in.Name == "" {
		return "", errors.New(`body: want {"name": NAME} with a name`)
	}
	return in.Name, nil
}

// routerHeader is the header the middleware sets on every answer.
const routerHeader = "X-Router"

// metricsHandler is /metrics: promhttp over a registry of the Go and
// process collectors, as most services expose theirs.
func metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// newRouter returns the API served by the router called name, over s.
func newRouter(name string, s *store) http.Handler {
	if name == "gin" {
		return ginRouter(s)
	}
	return chiRouter(s)
}

// ginRouter is the API as a gin engine, written as gin's users write it.
func ginRouter(s *store) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true // 405 rather than gin's default 404, as chi answers
	r.Use(gin.Recovery(), func(c *gin.Context) {
		c.Header(routerHeader, "gin")
		c.Next()
	})
	r.GET("/health", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	r.GET("/metrics", gin.WrapH(metricsHandler()))
	r.GET("/users/:id", func(c *gin.Context) {
		id, err := parseID(c.Param("id"))
		if err != nil {
			c.String(http.StatusBadRequest, err.Error())
			return
		}
		u, ok := s.get(id)
		if !ok {
			c.String(http.StatusNotFound, "no user %d", id)
			return
		}
		c.JSON(http.StatusOK, u)
	})
	r.POST("/users", func(c *gin.Context) {
		name, err := decodeUser(c.Request.Body)
		if err != nil {
			c.String(http.StatusBadRequest, err.Error())
			return
		}
		c.JSON(http.StatusCreated, s.add(name))
	})
	return r
}

// chiRouter is the API as a chi router, written as chi's users write it.
func chiRouter(s *store) http.Handler {
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(routerHeader, "chi")
			next.ServeHTTP(w, r)
		})
	})
	r.Get("/health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	r.Method(http.MethodGet, "/metrics", metricsHandler())
	r.Get("/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID(chi.URLParam(r, "id"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		u, ok := s.get(id)
		if !ok {
			http.Error(w, fmt.Sprintf("no user %d", id), http.StatusNotFound)
			return
		}
		writeJSON(w, http.StatusOK, u)
	})
	r.Post("/users", func(w http.ResponseWriter, r *http.Request) {
		name, err := decodeUser(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, http.StatusCreated, s.add(name))
	})
	return r
}

// writeJSON answers status with u as JSON, as gin's c.JSON does.
func writeJSON(w http.ResponseWriter, status int, u user) {
	b, err := json.Marshal(u)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}

// served is a server listening on Addr until Close.
type served struct {
	Addr  string
	Close func()
}

// carrierOptions is how carrierhttp's carriers run here: by default idle
// carriers park, giving their P to the handlers' goroutines and the GC, as
// docs/carrierhttp.md advises for net/http handlers.
func carrierOptions(carriers int, park bool) carrier.Options {
	return carrier.Options{Carriers: carriers, ParkIdle: park}
}

// serve serves h with the server called server on addr (carrierhttp: on a
// group made with o).
func serve(server string, h http.Handler, addr string, o carrier.Options) (*served, error) {
	if server == "nethttp" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(l)
		return &served{Addr: l.Addr().String(), Close: func() { srv.Close() }}, nil
	}
	g, err := carrier.New(o)
	if err != nil {
		return nil, err
	}
	srv := &carrierhttp.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	l, err := srv.Listen(g, addr, carrier.ListenOptions{})
	if err != nil {
		g.Close()
		return nil, err
	}
	return &served{Addr: l.Addr().String(), Close: func() {
		// Shutdown waits for requests in flight; it runs from a goroutine
		// (here the caller's), never from a task of the group.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		l.Close()
		g.Close()
	}}, nil
}

func serveUntilInterrupt(router, server, addr string, o carrier.Options) error {
	s, err := serve(server, newRouter(router, newStore()), addr, o)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Printf("routers: %s on %s serving on http://%s/ (Ctrl-C stops)\n", router, server, s.Addr)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
	return nil
}

// A check is one request and the answer it wants.
type check struct {
	method, path, body string
	status             int
	// want is the whole body wanted, when not empty; for 4xx answers only
	// the status is checked (the routers word their errors differently).
	want string
	// contains, when not empty, is a metric the body must have a line of
	// ("NAME VALUE").
	contains string
}

// checks are the requests -check and TestRouters send, in order (the POST
// makes user 101).
var checks = []check{
	{method: "GET", path: "/health", status: 200, want: "ok"},
	{method: "GET", path: "/users/42", status: 200, want: `{"id":42,"name":"user-42"}`},
	{method: "GET", path: "/users/0", status: 400},
	{method: "GET", path: "/users/x", status: 400},
	{method: "GET", path: "/users/99999999999999999999", status: 400},
	{method: "GET", path: "/users/500", status: 404},
	{method: "POST", path: "/users", body: `{"name":"ada"}`, status: 201, want: `{"id":101,"name":"ada"}`},
	{method: "GET", path: "/users/101", status: 200, want: `{"id":101,"name":"ada"}`},
	{method: "POST", path: "/users", body: `{"name":`, status: 400},
	{method: "POST", path: "/users", body: `{}`, status: 400},
	{method: "DELETE", path: "/users/42", status: 405},
	{method: "GET", path: "/nowhere", status: 404},
	{method: "GET", path: "/metrics", status: 200, contains: "go_goroutines"},
	{method: "POST", path: "/metrics", status: 405},
}

// checkPair serves router on server on a free loopback port and sends it
// checks.
func checkPair(router, server string, o carrier.Options) error {
	s, err := serve(server, newRouter(router, newStore()), "127.0.0.1:0", o)
	if err != nil {
		return err
	}
	defer s.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for _, c := range checks {
		if err := c.do(client, s.Addr, router); err != nil {
			return fmt.Errorf("%s on %s: %w", router, server, err)
		}
	}
	return nil
}

// do sends c to addr and checks the answer of the router called router.
func (c check) do(client *http.Client, addr, router string) error {
	req, err := http.NewRequest(c.method, "http://"+addr+c.path, strings.NewReader(c.body))
	if err != nil {
		return err
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20)) // /metrics is some 10 KiB; 1 MiB bounds a wrong answer
	if err != nil {
		return err
	}
	if c.contains != "" && !strings.Contains(string(b), "\n"+c.contains+" ") {
		return fmt.Errorf("%s %s: %s, no line %q in %d bytes", c.method, c.path, resp.Status, c.contains, len(b))
	}
	if resp.StatusCode != c.status || c.want != "" && string(b) != c.want {
		return fmt.Errorf("%s %s: %s %q; want %d %q", c.method, c.path, resp.Status, b, c.status, c.want)
	}
	if got := resp.Header.Get(routerHeader); got != router {
		return fmt.Errorf("%s %s: %s %q; want %q", c.method, c.path, routerHeader, got, router)
	}
	return nil
}
