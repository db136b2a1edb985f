package cpu

import (
	"slices"
	"testing"
)

func mustList(t *testing.T, s string) Set {
	t.Helper()
	set, err := ParseList(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestCoresOf(t *testing.T) {
	smt := fixture(t, "2s-16c-smt")
	// The first core of the 2-socket fixture has two SMT siblings; with
	// CPU 1 and CPU 400 (which the topology does not know) allowed too,
	// the siblings make one core and the others one each.
	sib := smt.Cores()[0]
	if len(sib) != 2 {
		t.Fatalf("fixture core 0 = %v, want two SMT siblings", sib)
	}
	for _, tc := range []struct {
		name    string
		allowed Set
		topo    *Topology
		want    []Set
	}{
		{"siblings together, unknown CPU alone", Set{sib[0], 1, sib[1], 400}, smt, []Set{{sib[0], sib[1]}, {1}, {400}}},
		{"no topology: one core per CPU", Set{3, 1}, nil, []Set{{1}, {3}}},
		{"nothing allowed", nil, smt, nil},
		{"the development VM", Set{0, 1}, fixture(t, "vm2"), []Set{{0}, {1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CoresOf(tc.allowed, tc.topo)
			if !slices.EqualFunc(got, tc.want, func(a, b Set) bool { return slices.Equal(a, b) }) {
				t.Errorf("CoresOf(%v) = %v, want %v", tc.allowed, got, tc.want)
			}
		})
	}
}
