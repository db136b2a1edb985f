package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"spindle/cpu"
)

var (
	// errBadInput marks errors caused by the user's input: the process exits 2.
	errBadInput = errors.New("bad input")
	// errHelp is returned after -h printed the usage: the process exits 0.
	errHelp = errors.New("help requested")
	// errSLOFailed marks a run that met not every --slo threshold: the
	// process exits 3.
	errSLOFailed = errors.New("slo failed")
)

type sloError struct{ msg string }

func (e *sloError) Error() string        { return e.msg }
func (e *sloError) Is(target error) bool { return target == errSLOFailed }

// badInput formats a one-line error that exits with status 2.
func badInput(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

type inputError struct{ msg string }

func (e *inputError) Error() string        { return e.msg }
func (e *inputError) Is(target error) bool { return target == errBadInput }

// asBadInput marks err as the user's fault (exit 2), keeping its message.
func asBadInput(err error) error {
	if err == nil {
		return nil
	}
	return &wrappedInputError{err}
}

type wrappedInputError struct{ err error }

func (e *wrappedInputError) Error() string        { return e.err.Error() }
func (e *wrappedInputError) Unwrap() error        { return e.err }
func (e *wrappedInputError) Is(target error) bool { return target == errBadInput }

// flagSet is a flag.FlagSet that accepts flags after positional arguments
// ("spindle load URL -d 5s" as well as "spindle load -d 5s URL") and turns
// parse failures into one-line bad-input errors.
type flagSet struct {
	*flag.FlagSet
	args string // positional arguments, for the usage line
	doc  string // paragraph printed under the usage line
}

func newFlagSet(name, args, doc string) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet("spindle "+name, flag.ContinueOnError), args: args, doc: doc}
	fs.FlagSet.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: %s [flags] %s\n", fs.Name(), fs.args)
		if fs.doc != "" {
			fmt.Fprintf(w, "\n%s\n", fs.doc)
		}
		fmt.Fprintln(w, "\nflags:")
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, allowing flags and positionals in any order ("--" ends
// flags), and returns the positionals. "-h" prints the usage to helpOut.
func (fs *flagSet) parse(args []string, helpOut io.Writer) ([]string, error) {
	fs.SetOutput(io.Discard) // errors are returned as one line, not printed with usage
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(helpOut)
				fs.Usage()
				return nil, errHelp
			}
			return nil, badInput("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// cpuSetFlag is a flag.Value holding a CPU list such as "0-3,8".
type cpuSetFlag struct{ set cpu.Set }

func (f *cpuSetFlag) String() string { return f.set.String() }
func (f *cpuSetFlag) Set(s string) error {
	set, err := cpu.ParseList(s)
	if err != nil {
		return err
	}
	f.set = set
	return nil
}

// stringsFlag is a repeatable string flag (-H "A: b" -H "C: d").
type stringsFlag []string

func (f *stringsFlag) String() string     { return strings.Join(*f, ", ") }
func (f *stringsFlag) Set(s string) error { *f = append(*f, s); return nil }

// durationFlag is a duration flag that also takes a bare number counted in
// unit, as the study's runner ("--mock-think-time 1": milliseconds) and wrk
// ("-d 10": seconds) accept.
type durationFlag struct {
	d    *time.Duration
	unit time.Duration
}

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		*f.d = time.Duration(n * float64(f.unit))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (10s, 500ms, 2m) or a number of %s", s, unitName(f.unit))
	}
	*f.d = d
	return nil
}

// unitName names a duration unit in words for error messages.
func unitName(u time.Duration) string {
	switch u {
	case time.Millisecond:
		return "milliseconds"
	case time.Second:
		return "seconds"
	}
	return "units of " + u.String()
}

// checkCPUs verifies that every CPU of s exists on this machine (is in the
// process's allowed set), for flags such as --cpuset.
func checkCPUs(flagName string, s cpu.Set) error {
	if len(s) == 0 {
		return nil
	}
	allowed, err := cpu.Allowed()
	if err != nil {
		return err
	}
	if miss := s.Minus(allowed); len(miss) > 0 {
		return badInput("--%s %s: CPUs %s are not available (this process may use %s)", flagName, s, miss, allowed)
	}
	return nil
}

// DefaultHost is the address servers listen on unless --host says
// otherwise: loopback, so that a laboratory server is not reachable from
// other machines by default.
const DefaultHost = "127.0.0.1"

// listenAddr joins --host and a port flag into a listen address, checking
// both: the host must be an IP address (or empty: every address), since the
// carriers' listener resolves no names.
func listenAddr(host, portFlag string, port int) (string, error) {
	return listenAddrOf("host", host, portFlag, port)
}

// listenAddrOf is listenAddr for a host flag other than --host.
func listenAddrOf(hostFlag, host, portFlag string, port int) (string, error) {
	if port < 0 || port > 65535 {
		return "", badInput("--%s %d: must be within 0 and 65535", portFlag, port)
	}
	if host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			return "", badInput("--%s %q: want an IP address such as 127.0.0.1 or ::1, or \"\" for every address", hostFlag, host)
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}
