package carrier

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"spindle/cpu"
)

// placement is where a group's carriers run.
type placement struct {
	n        int
	affinity []cpu.Set // per carrier: CPUs its thread is restricted to (empty: unchanged)
	cpus     []int     // per carrier: pinned CPU or -1
	cluster  []int     // per carrier: L3 cluster id (the cluster's lowest CPU), -1 unknown
	reserved cpu.Set   // the N+1 CPU, when NPlusOne
}

// plan places o.Carriers carriers on o.CPUs (or the allowed CPUs).
func plan(o Options) (placement, error) {
	var p placement
	set := o.CPUs
	if len(set) == 0 {
		var err error
		if set, err = cpu.Allowed(); err != nil {
			return p, err
		}
	}
	if o.NPlusOne {
		if len(set) < 2 {
			return p, fmt.Errorf("n+1 placement needs at least 2 CPUs, have %s", set)
		}
		p.reserved, set = set[:1], set[1:]
	}
	cands := set
	if o.Pin == PinSkipSMT {
		cands = firstOfEachCore(o.SysRoot, set)
	}
	p.n = o.Carriers
	if p.n <= 0 {
		p.n = len(cands)
	}
	for i := 0; i < p.n; i++ {
		switch o.Pin {
		case PinCPU, PinSkipSMT:
			c := cands[i%len(cands)] // more carriers than CPUs: they share, round-robin
			p.affinity = append(p.affinity, cpu.Set{c})
			p.cpus = append(p.cpus, c)
			p.cluster = append(p.cluster, l3Cluster(o.SysRoot, c))
		default:
			var aff cpu.Set
			if len(o.CPUs) > 0 || o.NPlusOne {
				aff = set
			}
			p.affinity = append(p.affinity, aff)
			p.cpus = append(p.cpus, -1)
			p.cluster = append(p.cluster, -1) // unpinned: one cluster
		}
	}
	return p, nil
}

// cpuDir is the sysfs directory of one CPU under root.
func cpuDir(root string, c int) string {
	return filepath.Join(root, "sys/devices/system/cpu", "cpu"+strconv.Itoa(c))
}

// readSet reads a sysfs CPU-list file; nil when it is missing or malformed.
func readSet(path string) cpu.Set {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s, err := cpu.ParseList(strings.TrimSpace(string(b)))
	if err != nil {
		return nil
	}
	return s
}

// firstOfEachCore keeps, of the CPUs in set, the lowest of each core's SMT
// siblings (as sysfs topology/thread_siblings_list tells); a CPU whose
// siblings cannot be read counts as a core of its own.
func firstOfEachCore(root string, set cpu.Set) cpu.Set {
	var out cpu.Set
	for _, c := range set {
		sib := readSet(filepath.Join(cpuDir(root, c), "topology/thread_siblings_list")).Intersect(set)
		if len(sib) == 0 || sib[0] == c {
			out = append(out, c)
		}
	}
	return out
}

// l3Cluster returns the lowest CPU sharing c's L3 cache (cache/index3), or
// -1 when sysfs does not say.
func l3Cluster(root string, c int) int {
	s := readSet(filepath.Join(cpuDir(root, c), "cache/index3/shared_cpu_list"))
	if len(s) == 0 {
		return -1
	}
	return s[0]
}
