package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/procfs"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/tempserver"
	"github.com/spindle-lab/spindle/observe"
	"github.com/spindle-lab/spindle/tfb"
)

// DB is the PostgreSQL server a run of the tfb app uses: started by the
// runner (StartDB) in a temporary directory on a free loopback port, its
// tables loaded, and stopped at the end (Stop).
type DB struct {
	// DSN is how the server under test reaches it.
	DSN string
	// Version is the server's version() string ("PostgreSQL 15.10 ...").
	Version string
	srv     *tempserver.Server
}

// ErrNoPostgres marks StartDB's failure where PostgreSQL cannot run on
// this machine (its programs are missing); the error says which Debian
// package to install.
var ErrNoPostgres = errors.New("PostgreSQL is not installed")

// dbSetupTimeout bounds loading the tables (tfb.Setup): under a second
// here.
const dbSetupTimeout = time.Minute

// StartDB starts a throwaway PostgreSQL server on cpus (empty: anywhere)
// with internal/tempserver, the tests' code, and loads tfb's tables
// (tfb.Setup). The caller stops it (Stop), also when a run fails or is
// interrupted; should this process die first, the kernel ends the server
// (its temporary directory then stays behind).
func StartDB(ctx context.Context, cpus cpu.Set) (*DB, error) {
	srv, err := tempserver.Postgres(tempserver.Options{CPUs: cpus})
	var missing *tempserver.MissingError
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("%w: %v", ErrNoPostgres, err)
	}
	if err != nil {
		return nil, fmt.Errorf("start PostgreSQL: %w", err)
	}
	d := &DB{DSN: srv.Addr(), srv: srv}
	if err := d.load(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("PostgreSQL: %w", err), d.Stop())
	}
	return d, nil
}

// load makes tfb's tables and reads the server's version.
func (d *DB) load(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, dbSetupTimeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, d.DSN)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := tfb.Setup(ctx, pool); err != nil {
		return err
	}
	return pool.QueryRow(ctx, "SELECT version()").Scan(&d.Version)
}

// String describes the server for config.json: its version, where it
// listens, and that the runner started it.
func (d *DB) String() string {
	v, _, _ := strings.Cut(d.Version, " on ") // "PostgreSQL 15.10 (Debian 15.10-0+deb12u1)"
	return fmt.Sprintf("%s at %s, started by the runner for the run (tables World and Fortune loaded by tfb.Setup)", v, d.srv.HostPort())
}

// PIDs are the server's processes now, read from procRoot ("": /proc):
// the postmaster and its children (a backend per connection, the
// background workers), whose CPU time is the run's own, not other load.
// The children are found by their parent pid in each process's stat, with
// procfs (/proc/PID/task/TID/children needs a kernel option that not
// every kernel has).
func (d *DB) PIDs(procRoot string) []int {
	pid := d.srv.Pid()
	pids := []int{pid}
	if procRoot == "" {
		procRoot = observe.DefaultProcRoot
	}
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return pids
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return pids
	}
	for _, p := range procs {
		if st, err := p.Stat(); err == nil && st.PPID == pid {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// Stop stops the server and removes its directory.
func (d *DB) Stop() error { return d.srv.Stop() }
