package observe

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ErrPerfNotInstalled is returned when the perf command cannot be found.
var ErrPerfNotInstalled = errors.New("perf not installed")

// LookPath finds a command by name, like exec.LookPath (which is the
// default); tests inject one that fails to exercise the "not installed" path.
type LookPath func(file string) (string, error)

// Perf runs the perf command.
type Perf struct {
	// LookPath finds "perf"; nil means exec.LookPath.
	LookPath LookPath
}

// path returns perf's path or ErrPerfNotInstalled.
func (p Perf) path() (string, error) {
	look := p.LookPath
	if look == nil {
		look = exec.LookPath
	}
	path, err := look("perf")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrPerfNotInstalled, err)
	}
	return path, nil
}

// NA renders a figure that cannot be had: "n/a (reason)".
func NA(reason string) string { return "n/a (" + reason + ")" }

// Reason is the short reason NA shows for err: "perf not installed" for
// ErrPerfNotInstalled, else the error's text.
func Reason(err error) string {
	if errors.Is(err, ErrPerfNotInstalled) {
		return ErrPerfNotInstalled.Error()
	}
	return err.Error()
}

// pidList renders pids as perf's -p argument ("12,34").
func pidList(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

// perfWaitDelay bounds the wait for perf's output once ctx has ended.
const perfWaitDelay = 500 * time.Millisecond

// run runs perf with args and returns its combined output; the error
// carries the output's last line.
func (p Perf) run(ctx context.Context, args ...string) ([]byte, error) {
	path, err := p.path()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	// When ctx ends perf is killed, but a command it runs ("perf sched
	// record -- sleep N") may live on holding the output pipe: stop
	// waiting for the pipe this long after the kill.
	cmd.WaitDelay = perfWaitDelay
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return out, fmt.Errorf("perf %s: %w: %s", args[0], err, msg)
	}
	return out, nil
}
