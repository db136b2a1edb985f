// Package cputest holds the CPU topologies and list parsing that tests of
// cpu's consumers (carrier, spectrum, bench) plan on, and the process's CPU
// time that benchmarks report per operation. It is for tests only.
package cputest

import (
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/spindle-lab/spindle/cpu"
)

// Topologies returns the machines placements are tested on, by name: two
// generated layouts, a two-socket SMT Xeon ("2s-16c-smt", an L3 per
// package) and a 12-CCD EPYC 9654 ("epyc-9654"), and the captured 2-CPU
// development VM ("vm2", cpu/testdata/vm2).
func Topologies(t testing.TB) map[string]*cpu.Topology {
	t.Helper()
	out := map[string]*cpu.Topology{}
	for name, l := range map[string]cpu.Layout{
		"2s-16c-smt": {Packages: 2, DiesPerPackage: 1, CoresPerDie: 16, Threads: 2, L3PerPackage: true},
		"epyc-9654":  {Packages: 1, DiesPerPackage: 12, CoresPerDie: 8, Threads: 2},
	} {
		topo, err := l.Topology()
		if err != nil {
			t.Fatal(err)
		}
		out[name] = topo
	}
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cputest: no source path for the vm2 fixture")
	}
	vm, err := cpu.ReadTopology(filepath.Join(filepath.Dir(self), "..", "..", "cpu", "testdata", "vm2"))
	if err != nil {
		t.Fatal(err)
	}
	out["vm2"] = vm
	return out
}

// MustList parses a CPU list ("0-3,8") or fails the test.
func MustList(t testing.TB, s string) cpu.Set {
	t.Helper()
	set, err := cpu.ParseList(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// ProcessNs returns the CPU time the process used so far (user and
// system, all its threads), in ns: a benchmark reports its difference over
// b.N as CPU per operation.
func ProcessNs(t testing.TB) int64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
