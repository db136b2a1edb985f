package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults of Options, reused as flag defaults.
const (
	// DefaultCacheDir is where binaries are copied, relative to the remote
	// user's home: DIR/<sha256>/spindle.
	DefaultCacheDir = ".cache/spindle"
	// DefaultConnectTimeout bounds reaching a host (ssh's ConnectTimeout).
	DefaultConnectTimeout = 10 * time.Second
	// DefaultAliveInterval and DefaultAliveCount make ssh notice a host
	// that stopped answering within about 5 s (ServerAliveInterval x
	// ServerAliveCountMax), so a dropped host ends the run promptly.
	DefaultAliveInterval = time.Second
	DefaultAliveCount    = 5
	// controlPersist is how long a master connection outlives its last
	// session: Close ends it at once, and should this process be killed
	// first, the master still goes away on its own a minute later.
	controlPersist = "60s"
)

// outputDrain bounds the wait for an exited ssh's output (Output).
const outputDrain = time.Second

// EnvRun tags every process of a run on a remote host (its value is the
// run's tag): the cleanup pass finds what is left by it.
const EnvRun = "SPINDLE_RUN"

// Options configure the SSH client.
type Options struct {
	// SSH is the ssh program; "" means "ssh" from PATH.
	SSH string
	// ConfigFile replaces ~/.ssh/config (ssh -F); "" keeps the user's.
	ConfigFile string
	// SSHOptions ("K=V") are passed as -o K=V before spindle's own: ssh
	// keeps the first value it is given for an option, so the user's win
	// (ConnectTimeout, ServerAliveCountMax...).
	SSHOptions []string
	// CacheDir is where binaries are copied on the hosts; relative to the
	// remote home unless absolute; "" means DefaultCacheDir.
	CacheDir string
	// ConnectTimeout bounds reaching a host; 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
}

// Session is the SSH state of one run: a control socket directory shared
// by its hosts' master connections. Close ends the masters.
type Session struct {
	opt   Options
	dir   string
	mu    sync.Mutex
	hosts []*Host
}

// NewSession checks the options and makes the control socket directory.
func NewSession(opt Options) (*Session, error) {
	if opt.SSH == "" {
		opt.SSH = "ssh"
	}
	if _, err := exec.LookPath(opt.SSH); err != nil {
		return nil, fmt.Errorf("ssh client: %w", err)
	}
	if opt.ConfigFile != "" {
		if _, err := os.Stat(opt.ConfigFile); err != nil {
			return nil, fmt.Errorf("ssh config: %w", err)
		}
	}
	for _, o := range opt.SSHOptions {
		if k, _, ok := strings.Cut(o, "="); !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("ssh option %q: want KEY=VALUE", o)
		}
	}
	if opt.CacheDir == "" {
		opt.CacheDir = DefaultCacheDir
	}
	if opt.ConnectTimeout <= 0 {
		opt.ConnectTimeout = DefaultConnectTimeout
	}
	// A short path: a Unix socket's path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "spindle-ssh-")
	if err != nil {
		return nil, fmt.Errorf("ssh control directory: %w", err)
	}
	return &Session{opt: opt, dir: dir}, nil
}

// Host returns the session's host for d (the same one each time).
func (s *Session) Host(d Dest) *Host {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.hosts {
		if h.Dest == d {
			return h
		}
	}
	h := &Host{Dest: d, s: s}
	s.hosts = append(s.hosts, h)
	return h
}

// Close ends every host's master connection and removes the control
// directory.
func (s *Session) Close() error {
	s.mu.Lock()
	hosts := s.hosts
	s.mu.Unlock()
	for _, h := range hosts {
		h.closeMaster()
	}
	return os.RemoveAll(s.dir)
}

// Host is one remote host of a session.
type Host struct {
	// Dest is how ssh reaches the host.
	Dest Dest
	// Info is what Prepare found; Exe the binary's path on the host.
	Info Info
	Exe  string
	s    *Session

	mu     sync.Mutex
	master bool // a master connection was started
}

// sshArgs are ssh's options for this host, before the destination.
func (h *Host) sshArgs() []string {
	o := h.s.opt
	var a []string
	if o.ConfigFile != "" {
		a = append(a, "-F", o.ConfigFile)
	}
	// ssh keeps the first value it sees for an option: the user's
	// --ssh-option come first so they win over spindle's choices.
	for _, kv := range o.SSHOptions {
		a = append(a, "-o", kv)
	}
	return append(a,
		"-o", "BatchMode=yes",
		"-o", fmt.Sprintf("ConnectTimeout=%d", int(o.ConnectTimeout.Seconds()+0.5)),
		"-o", fmt.Sprintf("ServerAliveInterval=%d", int(DefaultAliveInterval.Seconds())),
		"-o", fmt.Sprintf("ServerAliveCountMax=%d", DefaultAliveCount),
		"-o", "ControlPath="+filepath.Join(h.s.dir, "%C"),
		"-T", // no terminal: the remote side sees EOF, not a hang-up
	)
}

// Command returns an ssh command running script (a POSIX shell command
// line) on the host over the shared connection. Its process is the leader
// of its own group and dies with this process (Pdeathsig).
func (h *Host) Command(script string) *exec.Cmd {
	args := append(h.sshArgs(), "-o", "ControlMaster=auto")
	args = append(args, h.Dest.args()...)
	cmd := exec.Command(h.s.opt.SSH, append(args, "--", script)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Output runs script on the host with stdin (nil: none) and returns its
// standard output; a failure names the host and ssh's or the script's last
// line of standard error.
func (h *Host) Output(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	cmd := h.Command(script)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	// A session over a master connection hands its descriptors to the
	// master, which keeps them until the remote command ends: once ssh
	// here has exited (or been killed), its output is not waited for
	// longer than this.
	cmd.WaitDelay = outputDrain
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: ssh: %w", h.Dest, err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", h.Dest, ctx.Err())
		}
		return nil, fmt.Errorf("%s: %s", h.Dest, failure(err, errb.Bytes()))
	}
	return out.Bytes(), nil
}

// failure is an ssh failure in one line: its last line of standard error,
// else how it exited.
func failure(err error, stderr []byte) string {
	if l := LastLine(stderr); l != "" {
		return l
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 255 {
		return "ssh failed (exit 255) without a message"
	}
	return err.Error()
}

// LastLine is the last non-empty line of b, at most 200 bytes.
func LastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// connect starts the host's master connection: ssh -M -N -f goes to the
// background once authenticated and keeps the control socket until
// closeMaster. Its standard error is a file, not a pipe, so that the
// backgrounded master holds nothing this process waits on.
func (h *Host) connect(ctx context.Context) error {
	errf, err := os.CreateTemp(h.s.dir, "master-*.log")
	if err != nil {
		return err
	}
	defer os.Remove(errf.Name())
	defer errf.Close()
	args := append(h.sshArgs(), "-o", "ControlMaster=yes", "-o", "ControlPersist="+controlPersist, "-N", "-f")
	cmd := exec.CommandContext(ctx, h.s.opt.SSH, append(args, h.Dest.args()...)...)
	cmd.Stdout, cmd.Stderr = errf, errf
	h.mu.Lock()
	h.master = true
	h.mu.Unlock()
	if err := cmd.Run(); err != nil {
		msg, _ := os.ReadFile(errf.Name())
		return fmt.Errorf("%s: %s", h.Dest, failure(err, msg))
	}
	return nil
}

// closeMaster ends the master connection, if one was started.
func (h *Host) closeMaster() {
	h.mu.Lock()
	started := h.master
	h.master = false
	h.mu.Unlock()
	if !started {
		return
	}
	args := append(h.sshArgs(), "-O", "exit")
	cmd := exec.Command(h.s.opt.SSH, append(args, h.Dest.args()...)...)
	_ = cmd.Run() // an error means no master is left to end
}

// Quote quotes s for a POSIX shell.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// QuoteArgs quotes every argument and joins them with spaces.
func QuoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
