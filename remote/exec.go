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
	"strconv"
	"strings"
	"syscall"
	"time"
)

// leftoverPoll is how often KillLeftovers looks again while it waits.
const leftoverPoll = 50 * time.Millisecond

// ErrStopped is returned by Exec when it stopped the child: its standard
// input closed (the SSH session ended) or its time limit passed.
var ErrStopped = errors.New("stopped")

// ExecOptions configure Exec.
type ExecOptions struct {
	// Grace is the time between SIGTERM and SIGKILL to the child's group.
	Grace time.Duration
	// Limit, when positive, stops the child after this long whatever
	// happens: the backstop for a host whose SSH session never notices
	// its client is gone.
	Limit time.Duration
}

// EnvRole names a role's own process on its host (set by remote exec on
// its child only), so that the observers find it.
const EnvRole = "SPINDLE_ROLE"

// Exec runs cmd as the leader of a new process group and waits until it
// exits or stdin ends (EOF or an error: the SSH session is gone) or
// opt.Limit passes; in the latter cases it sends the group SIGTERM, then
// SIGKILL after opt.Grace, and returns an error wrapping ErrStopped. When
// the child exits on its own, what is left of its group is killed and its
// Wait error returned (an *exec.ExitError carries its status).
func Exec(cmd *exec.Cmd, stdin io.Reader, opt ExecOptions) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// Should this wrapper be killed, the child goes with it.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(eof)
	}()
	var limit <-chan time.Time
	if opt.Limit > 0 {
		t := time.NewTimer(opt.Limit)
		defer t.Stop()
		limit = t.C
	}
	var why string
	select {
	case err := <-done:
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // stragglers of the group
		return err
	case <-eof:
		why = "standard input closed"
	case <-limit:
		why = fmt.Sprintf("time limit %v passed", opt.Limit)
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(opt.Grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return fmt.Errorf("%w: %s", ErrStopped, why)
}

// Leftovers lists the processes under procRoot ("" means /proc) whose
// environment holds EnvRun=tag, except this process.
func Leftovers(procRoot, tag string) ([]int, error) { return Tagged(procRoot, tag, "") }

// Tagged lists the processes under procRoot ("" means /proc) whose
// environment holds EnvRun=tag and, when role is not empty, EnvRole=role
// (the role's own process, not its wrapper), except this process.
func Tagged(procRoot, tag, role string) ([]int, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	if tag == "" {
		return nil, errors.New("tagged processes: empty run tag")
	}
	es, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("tagged processes: %w", err)
	}
	want := []byte(EnvRun + "=" + tag)
	wantRole := []byte(EnvRole + "=" + role)
	self := os.Getpid()
	var pids []int
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "environ"))
		if err != nil {
			continue // gone, or not ours to read
		}
		if hasEnv(env, want) && (role == "" || hasEnv(env, wantRole)) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// hasEnv says whether the NUL-separated environment env holds entry.
func hasEnv(env, entry []byte) bool {
	for e := range bytes.SplitSeq(env, []byte{0}) {
		if bytes.Equal(e, entry) {
			return true
		}
	}
	return false
}

// KillLeftovers waits up to wait for the processes Leftovers finds to
// exit (a role whose session just ended is still stopping: its grace),
// then kills (SIGKILL) those still there and returns how many that was.
func KillLeftovers(procRoot, tag string, wait time.Duration) (int, error) {
	deadline := time.Now().Add(wait)
	var pids []int
	for {
		var err error
		if pids, err = Leftovers(procRoot, tag); err != nil {
			return 0, err
		}
		if len(pids) == 0 || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(leftoverPoll)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL) // gone since the listing is fine
	}
	return len(pids), nil
}

// RunFile is where a run's role writes a file or directory on its host
// (the load generator's interval log, perf's output): in /tmp, named for
// the host's tag, so that the cleanup pass removes it too.
func RunFile(tag, name string) string { return "/tmp/spindle-" + tag + "-" + name }

// RemoveRunFiles removes the run's files on this host (RunFile).
func RemoveRunFiles(tag string) error {
	if tag == "" || strings.ContainsAny(tag, "/*?[") {
		return fmt.Errorf("run files: bad tag %q", tag)
	}
	files, err := filepath.Glob(RunFile(tag, "*"))
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		if err := os.RemoveAll(f); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ExecArgs is the remote command line that runs "spindle remote exec"
// with f for args (spindle's own subcommand and flags), with the run's tag
// in the environment of every process it starts.
func ExecArgs(exe, tag string, f ExecFlags, args []string) string {
	a := append([]string{"env", EnvRun + "=" + tag, exe, "remote", "exec"}, f.Args()...)
	a = append(append(a, "--"), args...)
	return "exec " + QuoteArgs(a)
}

// Cleanup runs the cleanup pass on the host: every process still tagged
// with the run after wait is killed; the count is how many were.
func (h *Host) Cleanup(tag string, wait time.Duration) (int, error) {
	// Not the run's context: the pass runs after a cancelled run too. The
	// pass takes wait and a moment to read /proc.
	ctx, cancel := context.WithTimeout(context.Background(), h.s.opt.ConnectTimeout+wait+5*time.Second)
	defer cancel()
	out, err := h.Output(ctx, QuoteArgs(append(append([]string{"env", "-u", EnvRun, h.Exe, "remote", "cleanup"}, CleanupFlags{Wait: wait}.Args()...), tag)), nil)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(out)))
	if err != nil {
		return 0, fmt.Errorf("%s: cleanup: bad answer %q", h.Dest, LastLine(out))
	}
	return n, nil
}
