package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
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
// parse failures into one-line bad-input errors. Its help lists each flag
// once, the long name with its short alias ("-c, --connections N"), a typed
// placeholder, the default once, and examples at the end.
type flagSet struct {
	*flag.FlagSet
	args     string   // positional arguments, for the usage line
	doc      string   // paragraph printed under the usage line
	examples []string // command lines printed at the end of the help
}

func newFlagSet(name, args, doc string) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet("spindle "+name, flag.ContinueOnError), args: args, doc: doc}
	fs.FlagSet.Usage = func() { fs.printHelp(fs.Output()) }
	return fs
}

// given reports whether the flag name was set on the command line (a
// value equal to the default included).
func (fs *flagSet) given(name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// example adds command lines to the help's examples.
func (fs *flagSet) example(lines ...string) { fs.examples = append(fs.examples, lines...) }

// durationVar defines a duration flag that needs a unit and is not
// negative (cliflag.DurationVar).
func (fs *flagSet) durationVar(p *time.Duration, name string, value time.Duration, usage string) {
	cliflag.AtLeast(p, 0).Var(fs.FlagSet, name, value, usage)
}

// placeholderer is a flag.Value that names its kind of value in help.
type placeholderer interface{ Placeholder() string }

// printHelp writes the usage line, the paragraph, every flag and the
// examples.
func (fs *flagSet) printHelp(w io.Writer) {
	usage := fs.Name()
	if hasFlags := func() (any bool) { fs.VisitAll(func(*flag.Flag) { any = true }); return }(); hasFlags {
		usage += " [flags]"
	}
	if fs.args != "" {
		usage += " " + fs.args
	}
	fmt.Fprintf(w, "usage: %s\n", usage)
	if fs.doc != "" {
		fmt.Fprintf(w, "\n%s\n", fs.doc)
	}
	var groups [][]*flag.Flag // flags sharing one value: a name and its aliases
	index := map[flag.Value]int{}
	fs.VisitAll(func(f *flag.Flag) {
		if i, ok := index[f.Value]; ok {
			groups[i] = append(groups[i], f)
			return
		}
		index[f.Value] = len(groups)
		groups = append(groups, []*flag.Flag{f})
	})
	if len(groups) > 0 {
		fmt.Fprintln(w, "\nflags:")
	}
	slices.SortFunc(groups, func(a, b []*flag.Flag) int { return strings.Compare(longName(a), longName(b)) })
	for _, g := range groups {
		slices.SortFunc(g, func(a, b *flag.Flag) int { return cmp.Compare(len(a.Name), len(b.Name)) }) // short first
		names := make([]string, len(g))
		for i, f := range g {
			names[i] = dashes(f.Name)
		}
		f := g[0]
		ph, text := flagPlaceholder(f)
		line := "  " + strings.Join(names, ", ")
		if ph != "" {
			line += " " + ph
		}
		if d := defaultText(f); d != "" && !strings.Contains(text, "(default") {
			text += " (default " + d + ")"
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, strings.ReplaceAll(text, "\n", "\n      "))
	}
	if len(fs.examples) > 0 {
		fmt.Fprintln(w, "\nexamples:")
		for _, e := range fs.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// longName is the longest name of a flag group, its sort key.
func longName(g []*flag.Flag) string {
	n := g[0].Name
	for _, f := range g {
		if len(f.Name) > len(n) {
			n = f.Name
		}
	}
	return n
}

// dashes writes a flag name as typed: -c for one letter, --connections.
func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagPlaceholder returns the placeholder of f's value (from a
// `BACKQUOTED` word in its usage, else its type: N, DURATION, CPUS...) and
// its usage with the backquotes removed; "" for a boolean.
func flagPlaceholder(f *flag.Flag) (ph, usage string) {
	name, usage := flag.UnquoteUsage(f)
	if strings.Contains(f.Usage, "`") {
		return name, usage
	}
	if p, ok := textPlaceholders[f.Name]; ok {
		return p, usage
	}
	if p, ok := f.Value.(placeholderer); ok {
		return p.Placeholder(), usage
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "", usage
	}
	switch name {
	case "int", "uint", "int64", "uint64":
		return "N", usage
	case "float":
		return "NUMBER", usage
	case "duration":
		return "DURATION", usage
	case "string":
		return "TEXT", usage
	}
	return "VALUE", usage
}

// textPlaceholders name the values of text flags, which share a name, and
// so a meaning, across commands.
var textPlaceholders = map[string]string{
	"mode": "MODE", "name": "NAME", "output-dir": "DIR", "out": "DIR", "poller": "POLLER",
	"topology": "PINNING", "wait": "STRATEGY", "only": "NAMES", "rates": "RATES", "header": "HEADER",
	"H": "HEADER", "method": "METHOD", "host": "ADDRESS", "backend": "URL", "ws-scope": "SCOPE",
	"kernel": "KERNELS", "modes": "MODES", "scales": "SCALES",
}

// defaultText is f's default as help shows it, "" for a zero default; a
// duration without time.Duration's zero tails ("1m", not "1m0s").
func defaultText(f *flag.Flag) string {
	switch f.DefValue {
	case "", "0", "0s", "false", "[]":
		return ""
	}
	if _, err := time.ParseDuration(f.DefValue); err != nil {
		return f.DefValue
	}
	d, ok := strings.CutSuffix(f.DefValue, "m0s") // 1m0s, 1h0m0s
	if !ok {
		return f.DefValue
	}
	if h, ok := strings.CutSuffix(d, "h0"); ok {
		return h + "h"
	}
	return d + "m"
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
			return nil, badInput("%s", flagError(err, args))
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

// flagNameRE finds the flag package's "-name" in its parse errors.
var flagNameRE = regexp.MustCompile(`(flag|defined:|argument:) -([A-Za-z0-9_-]+)`)

// invalidValueRE matches the flag package's error for a value a flag
// refused: `invalid value "abc" for flag -threads: REASON`, or
// `invalid boolean value "x" for -ws: parse error`.
var invalidValueRE = regexp.MustCompile(`^invalid (boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-([A-Za-z0-9_-]+): (.*)$`)

// flagError rewrites a flag package parse error with flags as they are
// typed, as one line: a refused value as `--threads "abc": REASON`, where
// REASON says what the flag accepts (cliflag's values say it; a boolean
// is true or false), the others as `flag provided but not defined: --x`.
// args are the arguments parsed: a flag that is not defined is named as
// it was typed there (--x, not the one-letter -x).
func flagError(err error, args []string) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if m := invalidValueRE.FindStringSubmatch(msg); m != nil {
		reason := m[4]
		if m[1] != "" && reason == "parse error" { // a plain boolean's; a cliflag.Switch says what it takes
			reason = "want true or false (or the flag alone for true)"
		}
		return dashes(m[3]) + " " + m[2] + ": " + reason
	}
	return flagNameRE.ReplaceAllStringFunc(msg, func(m string) string {
		sub := flagNameRE.FindStringSubmatch(m)
		word := sub[1]
		if word == "flag" {
			word = "" // "for flag -x" reads "for --x"
		} else {
			word += " "
		}
		return word + typedFlag(sub[2], args)
	})
}

// typedFlag is the flag name as args typed it ("--x" or "-x", without
// a value after "="), else as dashes writes it.
func typedFlag(name string, args []string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		typed, _, _ := strings.Cut(a, "=")
		if (typed == "-"+name || typed == "--"+name) && name != "" {
			return typed
		}
	}
	return dashes(name)
}

// cpuSetFlag is a flag.Value holding a CPU list such as "0-3,8"
// (cliflag.CPUs over its own set).
type cpuSetFlag struct{ set cpu.Set }

func (f *cpuSetFlag) Placeholder() string { return "CPUS" }
func (f *cpuSetFlag) String() string      { return cliflag.CPUs{P: &f.set}.String() }
func (f *cpuSetFlag) Set(s string) error  { return cliflag.CPUs{P: &f.set}.Set(s) }

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
// otherwise: loopback (cliflag.DefaultHost).
const DefaultHost = cliflag.DefaultHost

// listenAddr joins --host and a port (its flag bounds it: cliflag.MaxPort)
// into a listen address, checking the host: an IP address (or empty: every
// address), since the carriers' listener resolves no names.
func listenAddr(host string, port int) (string, error) {
	return listenAddrOf("host", host, port)
}

// listenAddrOf is listenAddr for a host flag other than --host.
func listenAddrOf(hostFlag, host string, port int) (string, error) {
	if host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			return "", badInput("--%s %q: want an IP address such as 127.0.0.1 or ::1, or \"\" for every address", hostFlag, host)
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// outputDir returns the directory a run writes into, never one that holds
// an earlier run: given (an --output-dir flag) is refused when it exists
// and is not empty; without it, def (a default such as
// results/bench-NAME-TIME) is made unique with "-2", "-3"... when taken.
func outputDir(flagName, given, def string) (string, error) {
	if given != "" {
		es, err := os.ReadDir(given)
		switch {
		case err == nil && len(es) > 0:
			return "", badInput("--%s %s: exists and is not empty (choose another directory or remove it)", flagName, given)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return "", badInput("--%s %s: %v", flagName, given, err)
		}
		return given, nil
	}
	for i := 1; ; i++ {
		dir := def
		if i > 1 {
			dir = fmt.Sprintf("%s-%d", def, i)
		}
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			return dir, nil
		}
	}
}

// listenFailure marks a failure to listen on an address that is taken or
// not this machine's as bad input (exit 2), as bench does for its ports.
func listenFailure(err error) error {
	if errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EADDRNOTAVAIL) {
		return asBadInput(err)
	}
	return err
}

// jsonOutput checks --json's path before anything runs and returns where
// the JSON goes and where the rest of the command's output goes: with "-"
// stdout carries the JSON alone and the rest goes to stderr.
func jsonOutput(path string, stdout, stderr io.Writer) (jsonOut, text io.Writer, err error) {
	if err := checkOutFile("json", path); err != nil {
		return nil, nil, err
	}
	if path == "-" {
		return stdout, stderr, nil
	}
	return stdout, stdout, nil
}

// checkOutFile refuses, before anything runs, an output file flag whose
// directory does not exist: the file is written at the end of a run that
// may take minutes. "" (no file) and "-" (stdout) pass.
func checkOutFile(flagName, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return badInput("--%s %s: directory %s does not exist", flagName, path, dir)
	}
	return nil
}
