package remote

import (
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/internal/cliflag/cliflagtest"
)

// ExecFlags -> Args -> parse gives the flags back; defaults give no
// argument.
func TestExecFlagsRoundTrip(t *testing.T) {
	grace := func(d time.Duration) ExecOptions { return ExecOptions{Grace: d} }
	for _, tc := range []struct {
		name string
		f    ExecFlags
		args []string // nil: not checked, only the round trip
	}{
		{"defaults", cliflag.Defaults((*ExecFlags).Register), []string{}},
		{"a role of a run", ExecFlags{ExecOptions{Grace: 5 * time.Second, Limit: 95 * time.Second}, "server", cpu.Set{2, 3}},
			[]string{"--cpuset", "2-3", "--grace", "5s", "--limit", "1m35s", "--role", "server"}},
		{"no grace, an observer", ExecFlags{grace(0), "observer", nil}, []string{"--grace", "0s", "--role", "observer"}},
		{"the default grace", ExecFlags{grace(DefaultGrace), "load", cpu.Set{0}}, []string{"--cpuset", "0", "--role", "load"}},
	} {
		cliflagtest.RoundTrip(t, tc.name, tc.f, (*ExecFlags).Register, tc.args)
	}
}

func TestCleanupFlagsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    CleanupFlags
		args []string
	}{
		{"defaults", CleanupFlags{}, []string{}},
		{"the run's grace", CleanupFlags{Wait: DefaultGrace}, []string{"--wait", "3s"}},
	} {
		cliflagtest.RoundTrip(t, tc.name, tc.f, (*CleanupFlags).Register, tc.args)
	}
}

func FuzzExecFlagsRoundTrip(f *testing.F) {
	f.Add("server", int64(3*time.Second), int64(time.Minute), "0-1")
	f.Add("", int64(0), int64(0), "")
	f.Add("-x", int64(-1), int64(1), "7") // refused: a negative grace
	f.Fuzz(func(t *testing.T, role string, grace, limit int64, cpus string) {
		if grace < 0 || limit < 0 {
			return // outside the flags' bounds: refused at parse time (cliflag's tests)
		}
		set, err := cpu.ParseList(cpus)
		if err != nil || len(set) == 0 {
			set = nil // not a CPU list (cpu's fuzzer), or the empty default
		}
		fl := ExecFlags{ExecOptions: ExecOptions{Grace: time.Duration(grace), Limit: time.Duration(limit)}, Role: role, CPUs: set}
		cliflagtest.RoundTrip(t, "fuzz", fl, (*ExecFlags).Register, nil)
	})
}
