package tempserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// postgresBinGlob is where Debian's postgresql packages put the server's
// programs, one directory per major version.
const postgresBinGlob = "/usr/lib/postgresql/*/bin"

// postgresUser is the superuser the cluster is made with, and the
// unprivileged user the server runs as when this process is root (initdb
// refuses root); the Debian package postgresql creates it.
const postgresUser = "postgres"

// Postgres makes a cluster in a temporary directory, starts its server on
// a free loopback port and returns it; its Addr is the DSN. The server runs
// with fsync off and small buffers: its data is throwaway. It fails with a
// *MissingError where the server cannot run here (no PostgreSQL binaries,
// or running as root without a postgres user: initdb refuses root).
func Postgres(o Options) (*Server, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	cred, err := postgresCred()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "spindle-postgres-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if err := initdb(bin, dir, data, cred); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s, port, err := startOnFreePort(dir, program{
		name: "postgres", cred: cred, cpus: o.CPUs,
		stopSig:  syscall.SIGINT,  // fast shutdown: end the sessions, stop
		deathSig: syscall.SIGQUIT, // immediate shutdown: the children are told too
		path:     filepath.Join(bin, "postgres"),
		args: func(port int) []string {
			return []string{"-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(port),
				"-k", dir, // the socket's directory: Debian's default /var/run/postgresql may not be there
				"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
				"-c", "shared_buffers=16MB", // of the default 128MB: the tables are small
			}
		},
		ready: func(port int) error { return pgIsReady(bin, port) },
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.addr = fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", postgresUser, port)
	return s, nil
}

// postgresBin returns the directory of the newest installed PostgreSQL's
// programs.
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob(postgresBinGlob)
	dirs = slices.DeleteFunc(dirs, func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "postgres"))
		return err != nil
	})
	if len(dirs) == 0 {
		return "", &MissingError{"no PostgreSQL server in " + postgresBinGlob + " (install the Debian package postgresql)"}
	}
	version := func(d string) int { // the directory above bin: "15"
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return v
	}
	return slices.MaxFunc(dirs, func(a, b string) int { return version(a) - version(b) }), nil
}

// postgresCred returns the user to run initdb and the server as: nil (this
// process's) unless this process is root, then postgresUser.
func postgresCred() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(postgresUser)
	if err != nil {
		return nil, &MissingError{fmt.Sprintf("initdb refuses to run as root, and there is no user %s to run it as (%v; the Debian package postgresql creates it)", postgresUser, err)}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s: uid %q, gid %q", postgresUser, u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// initdb makes a cluster in data whose superuser is postgresUser, trusted
// on every connection (the server listens on loopback only).
func initdb(bin, dir, data string, cred *syscall.Credential) error {
	// initdbTimeout bounds initdb, which takes about a second here.
	const initdbTimeout = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), initdbTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", postgresUser,
		"-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	// No Pdeathsig: initdb ends by itself within initdbTimeout, and the
	// thread that started it may end sooner (see spawn).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// pgIsReady asks pg_isready whether the server on port accepts
// connections.
func pgIsReady(bin string, port int) error {
	// probeTimeout bounds one probe; waitReady repeats them.
	const probeTimeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "pg_isready"), "-h", "127.0.0.1",
		"-p", strconv.Itoa(port), "-U", postgresUser, "-d", "postgres", "-t", "1").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_isready: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
