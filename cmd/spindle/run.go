package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// command is one subcommand. Each lives in its own file and registers itself
// from an init function, so adding one touches no shared table.
type command struct {
	name    string
	summary string // one line for "spindle help"
	// run executes the subcommand with its arguments (the name removed).
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// flags builds the command's flag set for "spindle help NAME" (may be nil).
	flags func() *flagSet
	// hidden leaves the command out of "spindle help": it is spindle's
	// own, run by spindle on other hosts.
	hidden bool
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("spindle: command registered twice: " + c.name) // programming error at init
	}
	commands[c.name] = c
}

// run is the whole program: it dispatches args to a subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 { // one line, as every bad input: the list is spindle help's
		return badInput("no command; spindle help lists them")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return help(rest, stdout)
	}
	c, ok := commands[name]
	if !ok {
		return badInput("unknown command %q (try \"spindle help\")", name)
	}
	return withCommand(name, c.run(ctx, rest, stdout, stderr))
}

// withCommand makes err's message start with the command's name once
// ("load: ..."), so that main prints "spindle: load: ...". Errors keep
// their kind (errors.Is: bad input, slo failed, help).
func withCommand(name string, err error) error {
	if err == nil || errors.Is(err, errHelp) {
		return err
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "spindle "+name+": "); ok { // as the flag set names itself
		return &commandError{msg: name + ": " + rest, err: err}
	}
	if strings.HasPrefix(msg, name+": ") || strings.HasPrefix(msg, name+" ") {
		return err
	}
	return &commandError{msg: name + ": " + msg, err: err}
}

// commandError is an error with the command's name before its message.
type commandError struct {
	msg string
	err error
}

func (e *commandError) Error() string { return e.msg }
func (e *commandError) Unwrap() error { return e.err }

func usage(w io.Writer) {
	fmt.Fprintln(w, "spindle: a runtime and a laboratory for latency-critical Go network services")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: spindle COMMAND [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if c.hidden {
			continue
		}
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "help", "show this list, or a command's flags: spindle help COMMAND")
}

func help(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		usage(stdout)
		return nil
	}
	if len(args) > 1 {
		return badInput("help takes one command, got %q after %s", args[1:], args[0])
	}
	c, ok := commands[args[0]]
	if !ok {
		return badInput("unknown command %q (try \"spindle help\")", args[0])
	}
	if c.flags == nil {
		fmt.Fprintf(stdout, "spindle %s: %s\n", c.name, c.summary)
		return nil
	}
	fs := c.flags()
	fs.SetOutput(stdout)
	fs.Usage()
	return nil
}
