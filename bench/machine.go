package bench

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/prometheus/procfs"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/observe"
)

// cpuSnap is one reading of the machine's busy CPU time and of the run's
// own processes' CPU time (by pid), in seconds.
type cpuSnap struct {
	at   time.Time
	busy float64
	own  map[int]float64
	stat observe.StatTimes
}

// readCPU reads /proc/stat and the CPU time of pids (the children and this
// runner). A pid that has exited counts 0, which only makes "other"
// smaller.
func readCPU(procRoot string, pids []int) (cpuSnap, error) {
	if procRoot == "" {
		procRoot = observe.DefaultProcRoot
	}
	st, err := observe.ReadStatTimes(procRoot)
	if err != nil {
		return cpuSnap{}, err
	}
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return cpuSnap{}, err
	}
	s := cpuSnap{at: time.Now(), busy: st.All.Busy, own: map[int]float64{}, stat: st}
	for _, pid := range pids {
		p, err := fs.Proc(pid)
		if err != nil {
			continue
		}
		ps, err := p.Stat()
		if err != nil {
			continue
		}
		s.own[pid] = ps.CPUTime()
	}
	return s, nil
}

// otherCPUs is the CPU time, in CPUs, the machine spent on everything but
// the run's processes between two readings: other tenants' work, the
// kernel's, the hypervisor's (steal). NaN when the readings are unusable.
// The run's time is summed per process seen at the end: one that exited in
// between (a child that ended early) would otherwise take its whole
// lifetime's CPU time out of the difference and count it as other load
// (what it used in the window then counts as other, an overestimate of at
// most that); one started in between used all of its time in the window.
func otherCPUs(a, b cpuSnap) float64 {
	d := b.at.Sub(a.at).Seconds()
	if d <= 0 {
		return math.NaN()
	}
	own := 0.0
	for pid, t := range b.own {
		own += t - a.own[pid] // a process started in between used all of its time in the window
	}
	// /proc counts in 10ms ticks: a small negative difference is rounding.
	return max(0, (b.busy-a.busy)-own) / d
}

// ownPIDs are the run's processes whose CPU time is not "other".
func (r *runner) ownPIDs() []int {
	pids := []int{os.Getpid()}
	for _, c := range []*child{r.mock, r.server, r.load} {
		if c != nil {
			pids = append(pids, c.pids()...)
		}
	}
	if r.opt.DB != nil {
		pids = append(pids, r.opt.DB.PIDs(r.opt.ProcRoot)...)
	}
	return pids
}

// PinRunner restricts every thread of this process to cpus, and so every
// thread it creates later and every process it starts (perf, children
// before they pin themselves): the runner's sampling and perf then stay off
// the server's CPUs. Give it the load generator's CPUs.
func PinRunner(cpus cpu.Set) error {
	if len(cpus) == 0 {
		return fmt.Errorf("pin runner: empty CPU set")
	}
	if err := cpu.PinProcess(cpus); err != nil {
		return fmt.Errorf("pin runner: %w", err)
	}
	return nil
}

// Machine returns the CPUs this process may use and, where sysfs has it,
// their topology (nil when it cannot be read: a layout then ignores SMT).
func Machine() (cpu.Set, *cpu.Topology, error) {
	all, err := cpu.Allowed()
	if err != nil {
		return nil, nil, err
	}
	topo, err := cpu.ReadTopology(cpu.DefaultSysRoot)
	if err != nil {
		topo = nil
	}
	return all, topo, nil
}

// backendBusy records how busy the backend's CPUs (the mock's, which the
// tfb app's database shares) were between two readings, where the backend
// runs on this machine on CPUs of its own set; otherwise it says why there
// is no figure.
func (r *runner) backendBusy(h *Hosts, a, b cpuSnap) {
	var err error
	switch {
	case h.mockReached():
		err = errors.New("the backend runs on another host")
	case len(r.cfg.MockCPUs) == 0:
		err = errors.New("the backend has no CPU set of its own")
	default:
		var f float64
		if f, err = observe.BusyShare(a.stat, b.stat, r.cfg.MockCPUs); err == nil {
			r.sum.BackendBusy = &f
			return
		}
	}
	r.na["backend-busy"] = err.Error()
}
