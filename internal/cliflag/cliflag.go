// Package cliflag holds the flag values and flag groups that spindle's
// roles (mock, serve, load) share, so that each role can own its flag set
// and its argv (the inverse of parsing) in its own package while the
// command line and its help stay those of cmd/spindle.
//
// A value that names its kind in help implements Placeholder; cmd/spindle
// prints "--cpuset CPUS", "--think-time DURATION" from it. Numeric flags
// are Ranges: a value outside a flag's bounds, or no number at all, is
// refused at parse time with what the flag accepts.
package cliflag

import (
	"flag"
	"fmt"
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

// DurationVar defines a duration flag on fs with value as its default
// (Any(p)): it needs a unit ("10s", "500ms"; "0" alone may go without), so
// that no flag reads a bare number in a unit of its own.
func DurationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	Any(p).Var(fs, name, value, usage)
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

// Set parses a CPU list; a bad one is answered with the syntax and what
// was wrong ("want a CPU list such as 0-3,8 (CPU 99999 is beyond the
// largest possible (8191))"), the flag's value not repeated.
func (f CPUs) Set(s string) error {
	set, err := cpu.ParseList(s)
	if err != nil {
		why := strings.TrimPrefix(err.Error(), fmt.Sprintf("%v %q: ", cpu.ErrBadList, strings.TrimSpace(s)))
		return fmt.Errorf("want a CPU list such as 0-3,8 or 0-15:2 (%s)", why)
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
	// HTTP holds the timeouts, each above 0.
	HTTP http1.Options
	// MaxConns bounds the client connections open at once; 0: no bound.
	MaxConns int
}

// Register adds --max-conns and the timeout flags to fs, with http1's
// defaults; a timeout must be above 0 (0 would mean the default to the
// libraries, which is not what a user who wrote 0 meant).
func (c *Conn) Register(fs *flag.FlagSet) {
	AtLeast(&c.MaxConns, 0).Var(fs, "max-conns", 0, "client connections open at once; one beyond is accepted and closed at once (0: no bound)")
	Positive(&c.HTTP.ReadHeaderTimeout).Var(fs, "read-header-timeout", http1.DefaultReadHeaderTimeout,
		"time from a request's first byte (a new connection's accept) to the end of its head")
	Positive(&c.HTTP.ReadTimeout).Var(fs, "read-timeout", http1.DefaultReadTimeout,
		"time from the same start to the end of the whole request, body included")
	Positive(&c.HTTP.WriteTimeout).Var(fs, "write-timeout", http1.DefaultWriteTimeout,
		"time one write of answers may take (a client that does not read is closed)")
	Positive(&c.HTTP.IdleTimeout).Var(fs, "idle-timeout", http1.DefaultIdleTimeout,
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

// Switch is a boolean flag whose default is decided elsewhere (auto): a
// mode's own, say. "--name" alone is on, "--name=false" off,
// "--name=auto" (the zero value) leaves the choice to Resolve's caller.
// In a JSON document it is "auto", true or false (a bool, as before it
// could be auto, is read as on or off).
type Switch int8

// The values of a Switch.
const (
	SwitchAuto Switch = iota
	SwitchOff
	SwitchOn
)

// String is "auto", "false" or "true".
func (s Switch) String() string {
	switch s {
	case SwitchOff:
		return "false"
	case SwitchOn:
		return "true"
	}
	return "auto"
}

// Set parses "auto" or a boolean (strconv.ParseBool's forms).
func (s *Switch) Set(v string) error {
	if v == "auto" {
		*s = SwitchAuto
		return nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("want true, false or auto, not %q", v)
	}
	*s = SwitchOff
	if b {
		*s = SwitchOn
	}
	return nil
}

// IsBoolFlag lets "--name" alone set it on.
func (s *Switch) IsBoolFlag() bool { return true }

// Resolve is the switch's value, auto where it was not set.
func (s Switch) Resolve(auto bool) bool {
	if s == SwitchAuto {
		return auto
	}
	return s == SwitchOn
}

// MarshalJSON writes auto as "auto", on and off as booleans.
func (s Switch) MarshalJSON() ([]byte, error) {
	if s == SwitchAuto {
		return []byte(`"auto"`), nil
	}
	return strconv.AppendBool(nil, s == SwitchOn), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Switch) UnmarshalJSON(b []byte) error {
	v := string(b)
	if uq, err := strconv.Unquote(v); err == nil {
		v = uq
	}
	return s.Set(v)
}
