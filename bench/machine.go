package bench

import (
	"fmt"
	"math"
	"os"
	"time"

	"github.com/prometheus/procfs"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/observe"
)

// cpuSnap is one reading of the machine's busy CPU time and of the run's
// own processes' CPU time, in seconds.
type cpuSnap struct {
	at        time.Time
	busy, own float64
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
	s := cpuSnap{at: time.Now(), busy: st.All.Busy}
	for _, pid := range pids {
		p, err := fs.Proc(pid)
		if err != nil {
			continue
		}
		ps, err := p.Stat()
		if err != nil {
			continue
		}
		s.own += ps.CPUTime()
	}
	return s, nil
}

// otherCPUs is the CPU time, in CPUs, the machine spent on everything but
// the run's processes between two readings: other tenants' work, the
// kernel's, the hypervisor's (steal). NaN when the readings are unusable.
func otherCPUs(a, b cpuSnap) float64 {
	d := b.at.Sub(a.at).Seconds()
	if d <= 0 {
		return math.NaN()
	}
	// /proc counts in 10ms ticks: a small negative difference is rounding.
	return max(0, (b.busy-a.busy)-(b.own-a.own)) / d
}

// ownPIDs are the run's processes whose CPU time is not "other".
func (r *runner) ownPIDs() []int {
	pids := []int{os.Getpid()}
	for _, c := range []*child{r.mock, r.server, r.load} {
		if c != nil {
			pids = append(pids, c.pids()...)
		}
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
