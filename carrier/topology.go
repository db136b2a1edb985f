package carrier

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spindle-lab/spindle/cpu"
)

// ErrTooFewCPUs is wrapped by New's error when the CPUs cannot hold the
// pinned carriers (plus the reserved one with NPlusOne).
var ErrTooFewCPUs = errors.New("too few CPUs")

// placement is where a group's carriers run.
type placement struct {
	n        int
	affinity []cpu.Set // per carrier: CPUs its thread is restricted to (empty: unchanged)
	cpus     []int     // per carrier: pinned CPU or -1
	cluster  []int     // per carrier: L3 cluster id (the cluster's lowest CPU), -1 unknown
	reserved cpu.Set   // the CPUs for everything else, with NPlusOne
}

// CheckPlacement reports whether New can place o's carriers (o.Carriers,
// o.Pin, o.NPlusOne on o.CPUs or the allowed CPUs) without starting
// anything: New's placement error, wrapping ErrTooFewCPUs when the CPUs
// cannot hold the pinned carriers (and the reserved CPU).
func CheckPlacement(o Options) error {
	_, err := plan(o)
	return err
}

// plan places the carriers with planCarriers on o.CPUs (or the allowed
// CPUs), reading the topology under o.SysRoot. Unpinned carriers may
// outnumber the CPUs; pinned ones may not.
func plan(o Options) (placement, error) {
	var p placement
	set := o.CPUs
	if len(set) == 0 {
		var err error
		if set, err = cpu.ProcessAllowed(); err != nil {
			return p, err
		}
	}
	topo, err := cpu.ReadTopology(o.SysRoot)
	if err != nil {
		topo = nil // no sysfs (a sandbox): every CPU is its own core and cluster
	}
	mode := PinOff
	if o.Pin == PinCPU || o.Pin == PinSkipSMT {
		mode = o.Pin
	}
	req := carrierRequest{Carriers: o.Carriers, Pin: mode, Reserve: o.NPlusOne}
	if mode == PinOff {
		req.Carriers = 0 // count the units only; any number of unpinned carriers fits
	}
	cp, err := planCarriers(set, topo, req)
	if err != nil {
		return p, err
	}
	p.reserved = cp.Reserved
	p.n = o.Carriers
	if p.n <= 0 {
		p.n = len(cp.Carriers)
	}
	var unpinned cpu.Set // unpinned carriers: restricted only when the user narrowed the set
	if len(o.CPUs) > 0 || o.NPlusOne {
		unpinned = set.Minus(p.reserved)
	}
	for i := 0; i < p.n; i++ {
		if mode == PinOff {
			p.affinity = append(p.affinity, unpinned)
			p.cpus = append(p.cpus, -1)
			p.cluster = append(p.cluster, -1) // unpinned: one cluster
			continue
		}
		c := cp.Carriers[i]
		p.affinity = append(p.affinity, cpu.Set{c})
		p.cpus = append(p.cpus, c)
		cl := -1
		if topo != nil {
			if s := topo.ClusterOf(c); len(s) > 0 {
				cl = s[0]
			}
		}
		p.cluster = append(p.cluster, cl)
	}
	return p, nil
}

// carrierRequest is what planCarriers places.
type carrierRequest struct {
	// Carriers is how many carriers to place; 0 means as many as the mode
	// allows (one per allowed CPU, or per core with PinSkipSMT), less the
	// reserved one.
	Carriers int
	// Pin is how carriers map to CPUs. With PinOff the plan still counts
	// units as PinCPU does but the carriers are not pinned.
	Pin Pinning
	// Reserve is "N+1": set one unit (a CPU, or a whole core with
	// PinSkipSMT) aside for everything that is not a carrier (the Go
	// runtime's GC workers and sysmon, offloaded goroutines).
	Reserve bool
}

// carrierPlan is where carriers and everything else run.
type carrierPlan struct {
	// Carriers[i] is carrier i's CPU; -1 for every carrier with PinOff.
	Carriers []int
	// Reserved are the CPUs for everything that is not a carrier: with
	// Reserve, the allowed CPUs no carrier's unit uses (at least the
	// reserved unit); without it, nil (everything else may run anywhere).
	Reserved cpu.Set
}

// planCarriers places carriers on the allowed CPUs. The reserved unit is the
// first (lowest-numbered) one: CPU 0 and its core usually take the most
// interrupts and kernel housekeeping, which is what the reserve is for.
// topo may be nil: every CPU is then its own core.
func planCarriers(allowed cpu.Set, topo *cpu.Topology, req carrierRequest) (carrierPlan, error) {
	if req.Carriers < 0 {
		return carrierPlan{}, fmt.Errorf("%d carriers", req.Carriers)
	}
	byCore := req.Pin == PinSkipSMT
	var units []cpu.Set // one per allowed CPU, or per core with PinSkipSMT
	if byCore {
		units = cpu.CoresOf(allowed, topo)
	} else {
		for _, c := range allowed {
			units = append(units, cpu.Set{c})
		}
	}
	var reserved cpu.Set
	if req.Reserve && len(units) > 0 {
		reserved = units[0]
		units = units[1:]
	}
	n := req.Carriers
	if n == 0 {
		n = len(units)
	}
	if n == 0 || n > len(units) {
		what := "CPUs"
		if byCore {
			what = "cores"
		}
		extra, need, have := "", max(n, 1), len(units)
		if req.Reserve {
			extra = " plus one reserved"
			need++
		}
		if len(reserved) > 0 {
			have++
		}
		return carrierPlan{}, fmt.Errorf("%d carriers%s need %d %s, the allowed CPUs %q have %d: %w",
			max(n, 1), extra, need, what, allowed, have, ErrTooFewCPUs)
	}
	p := carrierPlan{Carriers: make([]int, n)}
	used := cpu.Set{}
	for i := range n {
		p.Carriers[i] = units[i][0]
		used = append(used, units[i]...)
		if req.Pin == PinOff {
			p.Carriers[i] = -1
		}
	}
	if req.Reserve {
		slices.Sort(used)
		p.Reserved = allowed.Minus(used)
	}
	return p, nil
}
