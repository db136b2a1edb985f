package carrier

import (
	"github.com/spindle-lab/spindle/cpu"
)

// placement is where a group's carriers run.
type placement struct {
	n        int
	affinity []cpu.Set // per carrier: CPUs its thread is restricted to (empty: unchanged)
	cpus     []int     // per carrier: pinned CPU or -1
	cluster  []int     // per carrier: L3 cluster id (the cluster's lowest CPU), -1 unknown
	reserved cpu.Set   // the CPUs for everything else, with NPlusOne
}

var pinModes = [...]cpu.PinMode{PinOff: cpu.PinOff, PinCPU: cpu.PinCPU, PinSkipSMT: cpu.PinCore}

// plan places the carriers with cpu.PlanCarriers on o.CPUs (or the allowed
// CPUs), reading the topology under o.SysRoot. Unpinned carriers may
// outnumber the CPUs; pinned ones may not.
func plan(o Options) (placement, error) {
	var p placement
	set := o.CPUs
	if len(set) == 0 {
		var err error
		if set, err = cpu.Allowed(); err != nil {
			return p, err
		}
	}
	topo, err := cpu.ReadTopology(o.SysRoot)
	if err != nil {
		topo = nil // no sysfs (a sandbox): every CPU is its own core and cluster
	}
	mode := cpu.PinOff
	if o.Pin >= 0 && int(o.Pin) < len(pinModes) {
		mode = pinModes[o.Pin]
	}
	req := cpu.CarrierRequest{Carriers: o.Carriers, Mode: mode, Reserve: o.NPlusOne}
	if mode == cpu.PinOff {
		req.Carriers = 0 // count the units only; any number of unpinned carriers fits
	}
	cp, err := cpu.PlanCarriers(set, topo, req)
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
		if mode == cpu.PinOff {
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
