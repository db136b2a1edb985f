package mock

import (
	"flag"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
)

// Flags are the mock role's options as "spindle mock" spells them: the
// one definition of its flags (Register) and of its argv (Args), which
// the spindle command parses and the bench runner writes for its child.
type Flags struct {
	// Host is the address to listen on; "" means every address.
	Host string
	// Port is the TCP port to listen on.
	Port int
	// ThinkTime is how long /fruits takes before answering; ThinkJitter
	// adds a uniform draw from [0, ThinkJitter).
	ThinkTime, ThinkJitter time.Duration
	// Threads is the number of carriers.
	Threads int
	// CPUs are the CPUs the carriers may run on; empty: all allowed.
	CPUs cpu.Set
	// FailRate and CloseRate are the fractions (0 to 1) of /fruits
	// answered 500 and closed without an answer.
	FailRate, CloseRate float64
	// Seed seeds the fault and jitter draws.
	Seed uint64
	// Conn are the connection limit and timeouts.
	Conn cliflag.Conn
}

// DefaultSeed is the seed of the fault and jitter draws unless --seed says
// otherwise.
const DefaultSeed = 1

// Register defines the mock's flags on fs, each field set to its default.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Host, "host", cliflag.DefaultHost, "address to listen on (\"\": every address)")
	cliflag.Within(&f.Port, 0, cliflag.MaxPort).Var(fs, "port", DefaultPort, "TCP port to listen on")
	cliflag.AtLeast(&f.ThinkTime, 0).Var(fs, "think-time", DefaultThinkTime, "time /fruits takes before answering (a timer on the carrier)")
	cliflag.AtLeast(&f.ThinkJitter, 0).Var(fs, "think-jitter", 0, "extra think time drawn uniformly from [0, jitter)")
	cliflag.AtLeast(&f.Threads, 1).Var(fs, "threads", DefaultThreads, "number of carriers")
	cliflag.CPUsVar(fs, &f.CPUs, "cpuset", "CPUs the carriers may run on, e.g. \"0\" or \"4-7\" (default: all allowed)")
	cliflag.Within(&f.FailRate, 0, 1).Var(fs, "fail-rate", 0, "fraction of /fruits requests answered 500 (0 to 1; with --close-rate at most 1 in all)")
	cliflag.Within(&f.CloseRate, 0, 1).Var(fs, "close-rate", 0, "fraction of /fruits requests whose connection is closed without an answer (0 to 1; with --fail-rate at most 1 in all)")
	cliflag.Any(&f.Seed).Var(fs, "seed", DefaultSeed, "seed of the fault and jitter draws")
	f.Conn.Register(fs)
}

// DefaultFlags are the flags' defaults: those of "spindle mock" alone.
func DefaultFlags() Flags { return cliflag.Defaults((*Flags).Register) }

// Args is the inverse of Register: the arguments of "spindle mock" that
// give f (the flags that differ from their defaults).
func (f Flags) Args() []string { return cliflag.Args(f, (*Flags).Register) }

// Options are the library options of f, to listen on addr (Host and Port
// joined and checked by the caller).
func (f Flags) Options(addr string) Options {
	return Options{
		Addr: addr, Threads: f.Threads, CPUs: f.CPUs,
		ThinkTime: f.ThinkTime, ThinkJitter: f.ThinkJitter, FailRate: f.FailRate, CloseRate: f.CloseRate, Seed: f.Seed,
		HTTP: f.Conn.HTTP, MaxConns: f.Conn.MaxConns,
	}
}
