// Package cliflag holds the flag values and flag groups that spindle's
// roles (mock, serve, load) share, so that each role can own its flag set
// and its argv (the inverse of parsing) in its own package while the
// command line and its help stay those of cmd/spindle.
//
// A value that names its kind in help implements Placeholder; cmd/spindle
// prints "--cpuset CPUS", "--think-time DURATION" from it.
package cliflag

import (
	"flag"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/http1"
)

// DefaultHost is the address servers listen on unless --host says
// otherwise: loopback, so that a laboratory server is not reachable from
// other machines by default.
const DefaultHost = "127.0.0.1"

// Placeholder is a flag.Value that names its kind of value in help
// ("CPUS", "DURATION").
type Placeholder interface {
	flag.Value
	Placeholder() string
}

// Duration is a duration flag that needs a unit ("10s", "500ms"; "0" alone
// may go without), so that no flag reads a bare number in a unit of its
// own.
type Duration struct{ D *time.Duration }

// Placeholder names the value in help.
func (f Duration) Placeholder() string { return "DURATION" }

// String is the duration as time.Duration writes it, "" without one.
func (f Duration) String() string {
	if f.D == nil {
		return ""
	}
	return f.D.String()
}

// Set parses s, refusing a bare number other than 0.
func (f Duration) Set(s string) error {
	if _, err := strconv.ParseFloat(s, 64); err == nil && s != "0" {
		return fmt.Errorf("%q needs a unit: %ss, %sms or %sus", s, s, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (10s, 500ms, 2m)", s)
	}
	*f.D = d
	return nil
}

// DurationVar defines a Duration flag on fs with value as its default.
func DurationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(Duration{p}, name, usage)
}

// CPUs is a flag.Value holding a CPU list such as "0-3,8".
type CPUs struct{ P *cpu.Set }

// Placeholder names the value in help.
func (f CPUs) Placeholder() string { return "CPUS" }

// String is the list as cpu.Set writes it.
func (f CPUs) String() string {
	if f.P == nil {
		return ""
	}
	return f.P.String()
}

// Set parses a CPU list.
func (f CPUs) Set(s string) error {
	set, err := cpu.ParseList(s)
	if err != nil {
		return err
	}
	*f.P = set
	return nil
}

// CPUsVar defines a CPU list flag on fs; its default is the empty set.
func CPUsVar(fs *flag.FlagSet, p *cpu.Set, name, usage string) {
	*p = nil
	fs.Var(CPUs{p}, name, usage)
}

// Conn are the connection limits and timeouts the servers (serve, mock)
// share: --max-conns and the http1 timeouts.
type Conn struct {
	// HTTP holds the timeouts, each > 0.
	HTTP http1.Options
	// MaxConns bounds the client connections open at once; 0: no bound.
	MaxConns int
}

// Register adds --max-conns and the timeout flags to fs, with http1's
// defaults.
func (c *Conn) Register(fs *flag.FlagSet) {
	fs.IntVar(&c.MaxConns, "max-conns", 0, "client connections open at once; one beyond is accepted and closed at once (0: no bound)")
	DurationVar(fs, &c.HTTP.ReadHeaderTimeout, "read-header-timeout", http1.DefaultReadHeaderTimeout,
		"time from a request's first byte (a new connection's accept) to the end of its head")
	DurationVar(fs, &c.HTTP.ReadTimeout, "read-timeout", http1.DefaultReadTimeout,
		"time from the same start to the end of the whole request, body included")
	DurationVar(fs, &c.HTTP.WriteTimeout, "write-timeout", http1.DefaultWriteTimeout,
		"time one write of answers may take (a client that does not read is closed)")
	DurationVar(fs, &c.HTTP.IdleTimeout, "idle-timeout", http1.DefaultIdleTimeout,
		"time a keep-alive connection may wait for its next request")
}

// Args is the inverse of Register: the flags that set c's values.
func (c Conn) Args() []string { return Args(c, (*Conn).Register) }

// Repeated is a flag.Value that a flag given several times adds to (-H
// "A: b" -H "C: d"): Args gives it once per value.
type Repeated interface {
	flag.Value
	Values() []string
}

// Args is the inverse of parsing: the command-line arguments that give v
// when parsed by a flag set that register fills (register sets each
// field's default, as flag.IntVar does). Only the flags whose value
// differs from its default appear, each once under its longest name,
// in name order: "--name value", a true boolean as "--name" alone, a
// Repeated value once per value.
func Args[T any](v T, register func(*T, *flag.FlagSet)) []string {
	var p T
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	register(&p, fs)
	p = v // the flag values point into p: they now read v
	// Aliases share one Value: a flag is known by its Value where the
	// Value's type can be a map key (every pointer can), else by its name,
	// so that a value type holding a slice or a func cannot panic here.
	key := func(f *flag.Flag) any {
		if reflect.TypeOf(f.Value).Comparable() {
			return f.Value
		}
		return f.Name
	}
	long := map[any]*flag.Flag{}
	var order []any
	fs.VisitAll(func(f *flag.Flag) {
		k := key(f)
		if g, ok := long[k]; !ok {
			order = append(order, k)
			long[k] = f
		} else if len(f.Name) > len(g.Name) {
			long[k] = f
		}
	})
	var a []string
	for _, k := range order {
		f := long[k]
		val := f.Value
		s := val.String()
		if r, ok := val.(Repeated); ok {
			for _, x := range r.Values() {
				a = append(a, dashes(f.Name), x)
			}
			continue
		}
		if s == f.DefValue {
			continue
		}
		if b, ok := val.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if s == "true" {
				a = append(a, dashes(f.Name))
			} else {
				a = append(a, dashes(f.Name)+"="+s)
			}
			continue
		}
		a = append(a, dashes(f.Name), s)
	}
	return a
}

// dashes writes a flag name as typed: -c for one letter, --connections.
func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// Defaults are the values register gives every field: those of a command
// line without flags.
func Defaults[T any](register func(*T, *flag.FlagSet)) T {
	var v T
	register(&v, flag.NewFlagSet("", flag.ContinueOnError))
	return v
}

// Strings is a repeatable string flag (-H "A: b" -H "C: d"): each use adds
// a value. It is a Repeated, so Args gives it once per value.
type Strings []string

// Placeholder names the value in help.
func (f *Strings) Placeholder() string { return "TEXT" }

// String is the values joined by ", ".
func (f *Strings) String() string {
	if f == nil {
		return ""
	}
	return strings.Join(*f, ", ")
}

// Set adds s.
func (f *Strings) Set(s string) error { *f = append(*f, s); return nil }

// Values are the values given, in order.
func (f *Strings) Values() []string { return *f }

// parseMetric parses a number with an optional k, M or G suffix (wrk's
// scan_metric: "20k" is 20000).
func parseMetric(s string) (float64, error) {
	mult := 1.0
	t := strings.TrimSpace(s)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult, t = 1e3, t[:n-1]
		case 'm', 'M':
			mult, t = 1e6, t[:n-1]
		case 'g', 'G':
			mult, t = 1e9, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a number (k, M, G suffixes allowed)", s)
	}
	return v * mult, nil
}

// Metric is a number flag with an optional k/M/G suffix ("20k") that
// records whether it was given, so that a command can refuse an explicit
// value (-R 0) that the flag's absence would allow. Its default is "not
// given": String is "" until Set.
type Metric struct {
	P     *float64
	Given *bool
}

// Placeholder names the value in help.
func (f Metric) Placeholder() string { return "N" }

// String is the value, "" when not given.
func (f Metric) String() string {
	if f.P == nil || f.Given == nil || !*f.Given {
		return ""
	}
	return strconv.FormatFloat(*f.P, 'f', -1, 64)
}

// Set parses s (k, M, G suffixes) and marks the flag given.
func (f Metric) Set(s string) error {
	v, err := parseMetric(s)
	if err != nil {
		return err
	}
	*f.P, *f.Given = v, true
	return nil
}

// MetricVar defines a Metric flag on fs under each of names; it starts
// not given, at 0.
func MetricVar(fs *flag.FlagSet, p *float64, given *bool, names []string, usage string) {
	*p, *given = 0, false
	for _, n := range names {
		fs.Var(Metric{p, given}, n, usage)
	}
}

// Count is a whole-count flag with an optional k/M/G suffix ("-c 10k"). It
// refuses values that are not whole ("-t 2.5") or beyond an int32, which a
// conversion would otherwise change silently.
type Count struct{ P *int }

// Placeholder names the value in help.
func (f Count) Placeholder() string { return "N" }

// String is the count in decimal.
func (f Count) String() string {
	if f.P == nil {
		return ""
	}
	return strconv.Itoa(*f.P)
}

// Set parses s (k, M, G suffixes), refusing a fraction or a count beyond
// an int32.
func (f Count) Set(s string) error {
	v, err := parseMetric(s)
	if err != nil {
		return err
	}
	if v != math.Trunc(v) || math.Abs(v) > math.MaxInt32 {
		return fmt.Errorf("%q is not a whole count", s)
	}
	*f.P = int(v)
	return nil
}

// CountVar defines a Count flag on fs under each of names with value as
// its default.
func CountVar(fs *flag.FlagSet, p *int, names []string, value int, usage string) {
	*p = value
	for _, n := range names {
		fs.Var(Count{p}, n, usage)
	}
}
