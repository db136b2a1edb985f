package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/http1"
	"github.com/spindle-lab/spindle/tfb"
)

// dbPingTimeout bounds Start's check that the database answers: a
// PostgreSQL on loopback answers in milliseconds, one across a network in
// well under a second; a DSN that names an address nobody answers at fails
// at once (refused) or after this long (dropped).
const dbPingTimeout = 5 * time.Second

// dbSetupTimeout bounds tfb.Setup at Start: making World's 10,000 rows
// takes well under a second here.
const dbSetupTimeout = 30 * time.Second

// CheckDB reports whether dsn is a database address pgx can read (a
// PostgreSQL URL or key=value string) and size a pool size Start accepts,
// so that a command refuses a bad one as bad input before starting
// anything.
func CheckDB(dsn string, size int) error {
	if dsn == "" {
		return errors.New("app tfb needs a database (a postgres:// URL)")
	}
	if size < 0 || size > maxPoolSize {
		return fmt.Errorf("pool size %d: want 0 (the default, %d) to %d", size, tfb.DefaultPoolSize, maxPoolSize)
	}
	_, err := tfb.PoolConfig(dsn, int32(size))
	return err
}

// maxPoolSize bounds Options.DBPool: PostgreSQL's own default
// max_connections is 100, and one pool per carrier multiplies it.
const maxPoolSize = 1 << 16

// tfbPools opens AppTFB's pools and returns the function that picks a
// request's pool from its context: one pool (g nil: nethttp; or
// Options.DBGoConns) or one pool per carrier of g, each dialling its
// connections on its carrier (nethttp-carrier and carrier), checked to
// answer (a ping each), the tables made where missing (tfb.Setup).
// closeDB closes the pools.
func (s *Server) tfbPools(g *carrier.Group) (func(context.Context) *pgxpool.Pool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dbPingTimeout)
	defer cancel()
	size := int32(s.o.DBPool)
	var poolFor func(context.Context) *pgxpool.Pool
	var pools []*pgxpool.Pool
	if g == nil || s.o.DBGoConns {
		cfg, err := tfb.PoolConfig(s.o.DB, size)
		if err != nil {
			return nil, err
		}
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			return nil, err
		}
		poolFor, pools = func(context.Context) *pgxpool.Pool { return pool }, []*pgxpool.Pool{pool}
	} else {
		per, err := tfb.NewCarrierPools(context.Background(), g, s.o.DB, size)
		if err != nil {
			return nil, err
		}
		poolFor, pools = per.Get, per.All()
	}
	s.dbPools = pools
	s.closeDB = func() {
		for _, p := range pools {
			p.Close()
		}
	}
	for _, p := range pools {
		if err := p.Ping(ctx); err != nil {
			cc := p.Config().ConnConfig
			return nil, fmt.Errorf("database at %s: %w", net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))), err)
		}
	}
	setupCtx, cancelSetup := context.WithTimeout(context.Background(), dbSetupTimeout)
	defer cancelSetup()
	if err := tfb.Setup(setupCtx, pools[0]); err != nil { // the tables, where missing
		return nil, err
	}
	return poolFor, nil
}

// tfbHandler is the handler of AppTFB in the net/http modes: package
// tfb's on tfbPools', with /health answered by the server and every
// answer counted as the study's are.
func (s *Server) tfbHandler(g *carrier.Group) (http.Handler, error) {
	poolFor, err := s.tfbPools(g)
	if err != nil {
		return nil, err
	}
	h := tfb.NewPools(poolFor)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.netHTTPRequestOK(w, r) {
			return
		}
		start := wait.Now()
		code := http.StatusOK
		if r.URL.Path == "/health" {
			s.write(w, code, textPlain, healthBody, false)
		} else {
			sw := &statusWriter{ResponseWriter: w, code: code}
			h.ServeHTTP(sw, r)
			code = sw.code
			s.m.request(code)
		}
		s.m.handledCtx(r.Context(), code, time.Duration(wait.Now()-start))
	}), nil
}

// statusWriter remembers the status a handler answers.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveTFB answers one client connection of AppTFB in carrier mode,
// entirely on its carrier: package tfb's answers (Answers) from spindle's
// own HTTP/1 handler, the database's conns of the carrier's own pool polled
// by the carrier, which parks the connection's task while a query waits.
// Every answer has the Server header the rules want; /health is the
// server's.
func (s *Server) serveTFB(t *carrier.Task, c *carrier.Conn) {
	ctx := carrier.ContextWithTask(context.Background(), t) // picks the carrier's pool
	o := s.o.HTTP
	o.Server = tfb.ServerName
	s.serveTimed(t, c, o, func(req *http1.Request, rep *http1.Reply) {
		path, query, _ := strings.Cut(string(req.Target), "?")
		if path == "/health" {
			rep.ContentType, rep.Body = textPlain, healthBody
			return
		}
		s.tfb.Answer(ctx, string(req.Method), path, query).Fill(rep)
	})
}
