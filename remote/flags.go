package remote

import (
	"flag"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
)

// DefaultGrace is the time between SIGTERM and SIGKILL to a role's
// process group unless "remote exec --grace" says otherwise.
const DefaultGrace = 3 * time.Second

// ExecFlags are the options of "spindle remote exec" as it spells them:
// the one definition of its flags (Register) and of its argv (Args),
// which the spindle command parses and ExecArgs writes. The command to
// run follows the flags after "--".
type ExecFlags struct {
	// ExecOptions are the grace and the time limit (Exec).
	ExecOptions
	// Role is the child's role, in its environment (EnvRole) for the
	// observers; "" sets none.
	Role string
	// CPUs are the CPUs the child starts on; empty: the wrapper's.
	CPUs cpu.Set
}

// Register defines the flags of "remote exec" on fs, each field set to
// its default.
func (f *ExecFlags) Register(fs *flag.FlagSet) {
	cliflag.AtLeast(&f.Grace, 0).Var(fs, "grace", DefaultGrace, "time between SIGTERM and SIGKILL")
	cliflag.AtLeast(&f.Limit, 0).Var(fs, "limit", 0, "stop the child after this long (0: no limit)")
	cliflag.CPUsVar(fs, &f.CPUs, "cpuset", "start the child on these CPUs")
	fs.StringVar(&f.Role, "role", "", "the child's role, in its environment for remote observe")
}

// Args is the inverse of Register: the flags of "remote exec" that give
// f (those that differ from their defaults).
func (f ExecFlags) Args() []string { return cliflag.Args(f, (*ExecFlags).Register) }

// CleanupFlags are the options of "spindle remote cleanup" (Register,
// Args as ExecFlags'); the run's tag follows the flags.
type CleanupFlags struct {
	// Wait is how long the run's processes may take to exit before they
	// are killed (KillLeftovers).
	Wait time.Duration
}

// Register defines the flags of "remote cleanup" on fs, each field set to
// its default.
func (f *CleanupFlags) Register(fs *flag.FlagSet) {
	cliflag.AtLeast(&f.Wait, 0).Var(fs, "wait", 0, "how long the run's processes may take to exit before they are killed")
}

// Args is the inverse of Register.
func (f CleanupFlags) Args() []string { return cliflag.Args(f, (*CleanupFlags).Register) }
