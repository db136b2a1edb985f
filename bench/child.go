package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/remote"
)

// sshFailed is ssh's exit status when ssh itself fails (the connection),
// as opposed to the remote command's own status.
const sshFailed = 255

// DefaultStopGrace is how long a child has between SIGTERM and SIGKILL:
// the same on this machine as under "remote exec" on another host.
const DefaultStopGrace = remote.DefaultGrace

// child is one process of a run, leader of its own process group: a
// spindle child on this machine, or the ssh session of a role on another
// host (stdin set: closing it stops the remote process group), or a group
// of load generators on several hosts (parts set).
type child struct {
	name  string
	cmd   *exec.Cmd
	log   *os.File
	stdin io.WriteCloser // a remote role's session input
	done  chan struct{}  // closed when the process has exited
	err   error          // Wait's result, valid after done
	// parts are a group's children; failed is the one whose failure
	// ended the group.
	parts  []*child
	failed *child
}

// startChild starts exe args in a new process group with its standard
// error in logPath and its standard output in outPath ("" means logPath). It is started from a thread pinned to cpus, so that the child
// and every thread it creates inherit the CPU set even before it pins
// itself (its --cpuset flag).
func startChild(name, exe string, args []string, cpus cpu.Set, logPath, outPath string) (*child, error) {
	cmd := exec.Command(exe, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// Backstop: the kernel kills the child if this process dies
		// without stopping it (its start thread exiting counts too, and
		// that thread is locked below only for the start).
		Pdeathsig: syscall.SIGKILL,
	}
	return launch(name, cmd, logPath, outPath, func() error { return startPinned(cmd, cpus) })
}

// launch starts cmd with start, its standard error in logPath and its
// standard output in outPath ("" means logPath).
func launch(name string, cmd *exec.Cmd, logPath, outPath string, start func() error) (*child, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	var out *os.File
	if outPath != "" {
		if out, err = os.Create(outPath); err != nil {
			log.Close()
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		cmd.Stdout = out
	}
	closeAll := func() {
		log.Close()
		if out != nil {
			out.Close()
		}
	}
	if err := start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		closeAll()
		close(c.done)
	}()
	return c, nil
}

// group is one child standing for parts: done when every part has exited
// cleanly, or as soon as one fails (failure then describes that one).
func group(name string, parts []*child) *child {
	g := &child{name: name, parts: parts, done: make(chan struct{})}
	ended := make(chan *child, len(parts))
	for _, p := range parts {
		go func() {
			<-p.done
			ended <- p
		}()
	}
	go func() {
		defer close(g.done)
		for range parts {
			if p := <-ended; p.err != nil {
				g.failed, g.err = p, p.err
				return
			}
		}
	}()
	return g
}

// startPinned starts cmd from an OS thread whose affinity is cpus, then
// restores the thread's affinity. The thread stays alive afterwards (it is
// unlocked, not retired), which Pdeathsig needs.
func startPinned(cmd *exec.Cmd, cpus cpu.Set) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev, err := cpu.Allowed()
	if err != nil {
		return err
	}
	if err := cpu.Pin(cpus); err != nil {
		return err
	}
	startErr := cmd.Start()
	// Should restoring fail, this thread keeps the child's narrower set,
	// which only costs the runner some scheduling freedom.
	_ = cpu.Pin(prev)
	return startErr
}

// local says whether the child is one process on this machine.
func (c *child) local() bool { return c.stdin == nil && c.parts == nil }

// pids are the child's processes on this machine (a remote role's is its
// ssh).
func (c *child) pids() []int {
	if c.parts == nil {
		return []int{c.cmd.Process.Pid}
	}
	var out []int
	for _, p := range c.parts {
		out = append(out, p.pids()...)
	}
	return out
}

// exited reports whether the child has exited.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// failure describes how the child ended, with the last line of its log.
func (c *child) failure() error {
	if c.failed != nil {
		return c.failed.failure()
	}
	msg := "exited"
	if c.err != nil {
		msg = c.err.Error()
	}
	var ee *exec.ExitError
	if c.stdin != nil && errors.As(c.err, &ee) && ee.ExitCode() == sshFailed {
		// ssh's own failure: the host or the connection went away.
		return fmt.Errorf("%s lost its ssh session (ssh exit %d: the host dropped or the connection broke)", c.name, sshFailed)
	}
	if c.log != nil {
		if last := lastLine(c.log.Name()); last != "" {
			msg += ": " + last
		}
	}
	return fmt.Errorf("%s %s", c.name, msg)
}

// lastLine returns the last non-empty line of a file, at most 200 bytes.
func lastLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return remote.LastLine(data)
}

// stop ends the child's process group: SIGTERM, then SIGKILL after grace.
// A remote role's session input is closed instead, which makes its remote
// wrapper do the same there; its ssh is killed here if the session has not
// ended shortly after. A group stops its parts at once. It returns when
// the child has exited.
func (c *child) stop(grace time.Duration) {
	if c.parts != nil {
		var wg sync.WaitGroup
		for _, p := range c.parts {
			wg.Go(func() { p.stop(grace) })
		}
		wg.Wait()
		<-c.done
		return
	}
	pid := c.cmd.Process.Pid
	if c.stdin != nil {
		c.stdin.Close()
		select {
		case <-c.done:
		case <-time.After(grace + remoteStopMargin):
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-c.done
		return
	}
	if c.exited() {
		// The leader is gone; kill what may remain of its group.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-c.done
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL) // stragglers in the group
}

// waitHealthy polls url until it answers 200, the child exits, ctx ends or
// timeout passes.
func waitHealthy(ctx context.Context, c *child, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if c.exited() {
			return c.failure()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy after %v: %s: %w", c.name, timeout, url, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return c.failure()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ErrPortBusy is returned when a port asked for is already in use.
var ErrPortBusy = errors.New("port busy")

// claimPorts replaces each 0 in ports by a free port of 127.0.0.1 and
// checks the others are free. The listeners are held until all are chosen,
// so the free ports differ; they are closed on return, so another process
// could take a port before the child binds it: the child's failure then
// says so.
func claimPorts(ports ...*int) error {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for _, p := range ports {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*p)))
		if err != nil {
			if *p != 0 {
				return fmt.Errorf("%w: 127.0.0.1:%d: %w", ErrPortBusy, *p, err)
			}
			return fmt.Errorf("find a free port: %w", err)
		}
		lns = append(lns, ln)
		*p = ln.Addr().(*net.TCPAddr).Port
	}
	return nil
}
