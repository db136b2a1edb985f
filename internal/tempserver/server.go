// Package tempserver starts throwaway PostgreSQL and Redis servers: each on
// a free port of 127.0.0.1 with its files in a temporary directory, which
// Stop removes with the process. Should the process that started one die
// first, the kernel signals the server (Pdeathsig), so that no server
// outlives it (its directory stays behind then: nothing is left to remove
// it). Where a server's programs are missing, the error is a *MissingError
// that names the Debian package to install.
//
// internal/testsvc starts them for tests, the bench runner for
// "spindle bench --app tfb": one piece of code for both.
package tempserver

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/spindle-lab/spindle/cpu"
)

// startTimeout bounds how long a server may take from its start to its
// first answer (PostgreSQL answers in about a second here, Redis in a few
// milliseconds; a loaded CI machine gets ten times that and more).
const startTimeout = 15 * time.Second

// MissingError says that a server cannot run on this machine (a program
// or the user to run it as is missing), and how to get it: a test skips.
type MissingError struct{ Reason string }

func (e *MissingError) Error() string { return e.Reason }

// Options are where a server runs.
type Options struct {
	// CPUs, when not empty, are the CPUs the server's processes run on
	// (it is started from a thread pinned to them, and its children
	// inherit the set).
	CPUs cpu.Set
}

// Server is one running server process and its temporary directory.
type Server struct {
	name     string         // the program's name, for messages
	dir      string         // the temporary directory, removed by stop
	log      string         // the file of the process's standard output and error
	stopSig  syscall.Signal // what stop sends first: the server's clean, quick shutdown
	proc     *os.Process
	exited   chan struct{} // closed once the process has exited
	waitErr  error         // the process's end, set before exited is closed
	addr     string        // a DSN or host:port, set once it answers
	hostPort string        // 127.0.0.1:PORT, set once it answers
}

// Addr is how to reach the server: PostgreSQL's DSN
// ("postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable": the
// superuser, trusted, on the database postgres), Redis's 127.0.0.1:PORT.
func (s *Server) Addr() string { return s.addr }

// HostPort is the address the server listens on, 127.0.0.1:PORT.
func (s *Server) HostPort() string { return s.hostPort }

// Pid is the server process's id.
func (s *Server) Pid() int { return s.proc.Pid }

// Dir is the server's temporary directory, which Stop removes.
func (s *Server) Dir() string { return s.dir }

// Exited is closed once the server process has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// spawn starts the program at path with args in dir, as cred's user (nil:
// this process's), on cpus (empty: this process's CPUs), its output
// appended to the file log. The kernel sends
// the process deathSig when the thread that started it ends (Pdeathsig
// belongs to a thread, not to the process), and a Go thread ends when a
// goroutine locked to it exits, which a carrier's does: so the process is
// started, and waited for, by a goroutine locked to its thread for the
// process's whole life, whose thread ends only with the process or with
// the binary.
func spawn(name, dir, log string, cred *syscall.Credential, cpus cpu.Set, stopSig, deathSig syscall.Signal, path string, args ...string) (*Server, error) {
	out, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the process has its own copy
	s := &Server{name: name, dir: dir, log: log, stopSig: stopSig, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		defer close(s.exited)
		if len(cpus) > 0 {
			// This thread is the process's alone: its affinity is
			// what the process inherits.
			if err := cpu.Pin(cpus); err != nil {
				s.waitErr = err
				started <- err
				return
			}
		}
		cmd := exec.Command(path, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: deathSig}
		if err := cmd.Start(); err != nil {
			s.waitErr = err
			started <- err
			return
		}
		s.proc = cmd.Process
		started <- nil
		s.waitErr = cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return s, nil
}

// waitReady polls ready until it succeeds, the process exits, or
// startTimeout passes.
func (s *Server) waitReady(ready func() error) error {
	deadline := time.Now().Add(startTimeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%s %w (%v)%s", s.name, errExited, s.waitErr, s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %v: %w%s", s.name, startTimeout, err, s.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// errExited is waitReady's error when the process ended before it answered.
var errExited = errors.New("exited before answering")

// Stop ends the process (SIGINT for PostgreSQL's fast shutdown, SIGTERM
// for Redis; SIGKILL past 10 s) and removes the directory.
func (s *Server) Stop() error {
	err := s.end()
	if rmErr := os.RemoveAll(s.dir); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("stop %s: %w", s.name, rmErr))
	}
	return err
}

// end ends the process, with stopSig and, past stopTimeout, SIGKILL.
func (s *Server) end() error {
	// stopTimeout bounds the clean shutdown: PostgreSQL's fast shutdown
	// of a throwaway cluster takes tens of milliseconds.
	const stopTimeout = 10 * time.Second
	var err error
	if sigErr := s.proc.Signal(s.stopSig); sigErr != nil && !errors.Is(sigErr, os.ErrProcessDone) {
		err = fmt.Errorf("stop %s: %w", s.name, sigErr)
	}
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		s.proc.Kill()
		<-s.exited
		err = fmt.Errorf("stop %s: still running %v after %v, killed", s.name, s.stopSig, stopTimeout)
	}
	return err
}

// logTail is the end of the process's log, for an error message.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.log)
	if err != nil || len(b) == 0 {
		return ""
	}
	const keep = 2048 // bytes: the last lines say why a server stopped
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return "; the end of " + filepath.Base(s.log) + ":\n" + string(bytes.TrimSpace(b))
}

// startAttempts is how many times a server is started on a fresh port
// when its process exits before answering (errExited): the free port found
// may have been taken by someone else before the server bound it.
const startAttempts = 3

// program is a server to start on a port: its name, the user it runs as
// (nil: this process's), its shutdown and parent-death signals (spawn),
// its path and arguments, and how to tell that it answers.
type program struct {
	name              string
	cred              *syscall.Credential
	cpus              cpu.Set
	stopSig, deathSig syscall.Signal
	path              string
	args              func(port int) []string
	ready             func(port int) error
}

// startOnFreePort starts p in dir on a free loopback port and waits until
// it answers, trying again on another port when it exits before answering
// (errExited), at most startAttempts times; it returns the server and its
// port. The server's log is dir/NAME.log.
func startOnFreePort(dir string, p program) (*Server, int, error) {
	var err error
	for range startAttempts {
		var port int
		if port, err = freePort(); err != nil {
			return nil, 0, err
		}
		var s *Server
		s, err = spawn(p.name, dir, filepath.Join(dir, p.name+".log"), p.cred, p.cpus, p.stopSig, p.deathSig, p.path, p.args(port)...)
		if err != nil {
			return nil, 0, err
		}
		if err = s.waitReady(func() error { return p.ready(port) }); err == nil {
			s.hostPort = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			return s, port, nil
		}
		s.end() // the directory stays, for the next attempt
		if !errors.Is(err, errExited) {
			break
		}
	}
	return nil, 0, err
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
