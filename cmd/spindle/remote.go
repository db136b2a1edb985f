package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/spindle-lab/spindle/bench"
	"github.com/spindle-lab/spindle/remote"
)

func init() {
	register(command{
		name:    "remote",
		summary: "spindle's side on another host: exec (a role that dies with its SSH session), clock, cleanup TAG",
		run:     runRemote,
		hidden:  true,
	})
}

// runRemote is run by spindle over SSH on the hosts of a multi-host bench
// (docs/bench.md): "remote exec [--grace D] [--limit D] [--cpuset CPUS] --
// ARGS" runs spindle ARGS until its standard input closes; "remote clock"
// answers each line with the clock; "remote cleanup TAG" kills what is
// left of a run after --wait, removes its files, and prints how many
// processes that was; "remote observe
// --tag TAG --role ROLE [--also ROLE] --window D [--threads] [--perf-stat]" observes the
// role's process and prints bench.RemoteObservation as JSON.
func runRemote(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return badInput("remote: want exec, clock, cleanup or observe")
	}
	switch args[0] {
	case "clock":
		return remote.ServeClock(os.Stdin, stdout, time.Now)
	case "cleanup":
		fs := newFlagSet("remote cleanup", "TAG", "")
		var f remote.CleanupFlags
		f.Register(fs.FlagSet)
		pos, err := fs.parse(args[1:], stderr)
		if err != nil {
			return err
		}
		if len(pos) != 1 || pos[0] == "" {
			return badInput("remote cleanup: want one run tag")
		}
		n, err := remote.KillLeftovers("", pos[0], f.Wait)
		if err != nil {
			return err
		}
		if err := remote.RemoveRunFiles(pos[0]); err != nil {
			return err
		}
		fmt.Fprintln(stdout, n)
		return nil
	case "exec":
		return remoteExec(args[1:], stderr)
	case "observe":
		return remoteObserve(ctx, args[1:], stdout, stderr)
	}
	return badInput("remote: unknown action %q: want exec, clock, cleanup or observe", args[0])
}

func remoteExec(args []string, stderr io.Writer) error {
	fs := newFlagSet("remote exec", "-- ARGS", "")
	var f remote.ExecFlags
	f.Register(fs.FlagSet)
	pos, err := fs.parse(args, stderr)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return badInput("remote exec: no command")
	}
	if err := checkCPUs("cpuset", f.CPUs); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if len(f.CPUs) > 0 {
		// Every thread of this wrapper, so the child starts on the set
		// before it pins itself.
		if err := bench.PinRunner(f.CPUs); err != nil {
			return err
		}
	}
	// The session's end is noticed on stdin; SIGHUP and SIGPIPE must not
	// kill this wrapper first (handled, not ignored: the child gets the
	// default actions back at exec).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGPIPE)
	cmd := exec.Command(exe, pos...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if f.Role != "" {
		cmd.Env = append(os.Environ(), remote.EnvRole+"="+f.Role)
	}
	err = remote.Exec(cmd, os.Stdin, f.ExecOptions)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if code < 0 { // killed by a signal: say so, the child could not
			fmt.Fprintf(stderr, "spindle remote exec: %s: %v\n", pos[0], err)
			code = 1
		}
		return &exitStatus{code: code, err: err}
	}
	return err
}

// exitStatus passes a child's exit status through "remote exec": the
// process exits with code and prints nothing more.
type exitStatus struct {
	code int
	err  error
}

func (e *exitStatus) Error() string { return e.err.Error() }
func (e *exitStatus) Unwrap() error { return e.err }

func remoteObserve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("remote observe", "", "")
	var o bench.ObserveOptions
	o.Register(fs.FlagSet)
	pos, err := fs.parse(args, stderr)
	if err != nil {
		return err
	}
	if len(pos) > 0 || o.Tag == "" || o.Role == "" || o.Window <= 0 {
		return badInput("remote observe: want --tag, --role and a positive --window, no arguments")
	}
	obs, err := bench.ObserveHere(ctx, o)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(obs)
}
