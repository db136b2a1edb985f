package cpu

import "slices"

// CoresOf lists the allowed CPUs core by core, in order of each core's
// first allowed CPU: each element is one core's allowed CPUs. CPUs the
// topology does not know (or all of them, when topo is nil) are cores of
// their own.
func CoresOf(allowed Set, topo *Topology) []Set {
	var out []Set
	var known Set
	if topo != nil {
		for _, core := range topo.Cores() {
			if s := core.Intersect(allowed); len(s) > 0 {
				out = append(out, s)
			}
		}
		known = topo.CPUs()
	}
	for _, c := range allowed.Minus(known) {
		out = append(out, Set{c})
	}
	slices.SortFunc(out, func(a, b Set) int { return a[0] - b[0] })
	return out
}
