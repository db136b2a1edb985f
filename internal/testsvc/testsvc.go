// Package testsvc starts throwaway PostgreSQL and Redis servers for tests
// and benchmarks of code that uses their drivers: the project tests
// drivers against the real servers, never a mock of a database. Each is
// started (internal/tempserver) once per test binary, at the first call of
// Postgres or Redis, on a free port of 127.0.0.1 with its files in a
// temporary directory, and stopped by Main when the binary's tests have
// run; should the binary die first, the kernel signals the server
// (Pdeathsig), so that no server outlives its test binary. Where a
// server's programs are missing the callers skip, naming the Debian
// package to install.
//
// It is for tests only, a normal package so that several packages' tests
// can share it:
//
//	func TestMain(m *testing.M) { os.Exit(testsvc.Main(m)) }
//
//	func TestOrders(t *testing.T) {
//		pool, err := pgxpool.New(ctx, testsvc.Postgres(t))
//		...
//	}
//
// A server's first start leaves a goroutine and a descriptor (its process's
// wait) for the binary's life: tests that check for leaks should call
// Postgres or Redis before they count (leakcheck.Register).
package testsvc

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/spindle-lab/spindle/internal/tempserver"
)

// errStopped is what Postgres and Redis fail with after Stop.
var errStopped = errors.New("stopped (after the tests, by Stop)")

// service is one kind of server, started at most once per binary.
type service struct {
	once  sync.Once
	start func(tempserver.Options) (*tempserver.Server, error)
	srv   *tempserver.Server
	addr  string // what Postgres or Redis returns: a DSN, an address
	err   error
}

var (
	postgres = &service{start: tempserver.Postgres}
	redis    = &service{start: tempserver.Redis}
)

// get starts s at its first call and returns its address; tb skips where
// the server cannot run here and fails where it did not start.
func (s *service) get(tb testing.TB) string {
	tb.Helper()
	s.once.Do(func() {
		if s.srv, s.err = s.start(tempserver.Options{}); s.err == nil {
			s.addr = s.srv.Addr()
		}
	})
	var missing *tempserver.MissingError
	if errors.As(s.err, &missing) {
		tb.Skipf("testsvc: %v", s.err)
	}
	if s.err != nil {
		tb.Fatalf("testsvc: %v", s.err)
	}
	return s.addr
}

// Postgres returns the DSN of this binary's PostgreSQL server
// ("postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable": the
// superuser, trusted, on the database postgres), starting it at the first
// call. The server runs with fsync off and small buffers: its data is
// throwaway, shared by the binary's tests, so a test names its tables so
// that others' do not collide with them. It skips tb where the server
// cannot run here (no PostgreSQL binaries, or running as root without a
// postgres user: initdb refuses root).
func Postgres(tb testing.TB) (dsn string) {
	tb.Helper()
	return postgres.get(tb)
}

// Redis returns the address (127.0.0.1:PORT) of this binary's Redis
// server, starting it at the first call. It saves nothing to disk; its
// keys are shared by the binary's tests. It skips tb where redis-server is
// not installed.
func Redis(tb testing.TB) (addr string) {
	tb.Helper()
	return redis.get(tb)
}

// Stop stops the servers this binary started and removes their
// directories. Main calls it; Postgres and Redis fail after it.
func Stop() error {
	var errs []error
	for _, s := range []*service{postgres, redis} {
		s.once.Do(func() {}) // no start after Stop
		if s.srv != nil {
			errs = append(errs, s.srv.Stop())
			s.srv = nil
		}
		if s.err == nil {
			s.err = errStopped
		}
	}
	return errors.Join(errs...)
}

// Main runs m's tests, stops the servers and returns the exit code for
// os.Exit: m.Run's, or 1 when a server did not stop cleanly, which it
// reports on standard error as the testing package reports a failure.
func Main(m *testing.M) int {
	code := m.Run()
	if err := Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testsvc: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
