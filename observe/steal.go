package observe

import (
	"errors"
	"fmt"

	"github.com/prometheus/procfs"
)

// CPUTimes are one /proc/stat "cpu" line's counters, in seconds.
type CPUTimes struct {
	// Total sums the counters up to steal; guest and guest_nice, which
	// follow, are already counted in user and nice.
	Total float64
	// Busy is Total less idle and iowait: time the CPU ran something.
	Busy  float64
	Steal float64 // time a hypervisor ran something else while this CPU wanted to run
}

// StatTimes are the counters of /proc/stat: All for the "cpu" line, PerCPU
// by CPU number.
type StatTimes struct {
	All    CPUTimes
	PerCPU map[int]CPUTimes
}

func cpuTimes(c procfs.CPUStat) CPUTimes {
	busy := c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
	return CPUTimes{Total: busy + c.Idle + c.Iowait, Busy: busy, Steal: c.Steal}
}

// ReadStatTimes reads procRoot/stat ("" means /proc) with procfs. Every
// kernel Go runs on (3.2 and later) has the steal counter.
func ReadStatTimes(procRoot string) (StatTimes, error) {
	if procRoot == "" {
		procRoot = DefaultProcRoot
	}
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return StatTimes{}, err
	}
	st, err := fs.Stat()
	if err != nil {
		return StatTimes{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	out := StatTimes{All: cpuTimes(st.CPUTotal), PerCPU: make(map[int]CPUTimes, len(st.CPU))}
	for n, c := range st.CPU {
		out.PerCPU[int(n)] = cpuTimes(c)
	}
	return out, nil
}

// StealPercent is the share of time stolen by the hypervisor between two
// readings, over the given CPUs (nil: all), in percent; the error says why
// there is no figure.
func StealPercent(a, b StatTimes, cpus []int) (float64, error) {
	da, db := a.All, b.All
	if cpus != nil {
		da, db = CPUTimes{}, CPUTimes{}
		for _, c := range cpus {
			x, ok1 := a.PerCPU[c]
			y, ok2 := b.PerCPU[c]
			if !ok1 || !ok2 {
				return 0, fmt.Errorf("no cpu%d line in /proc/stat", c)
			}
			da.Total, da.Steal = da.Total+x.Total, da.Steal+x.Steal
			db.Total, db.Steal = db.Total+y.Total, db.Steal+y.Steal
		}
	}
	if db.Total <= da.Total {
		return 0, errors.New("no clock ticks between the readings (window shorter than 10ms)")
	}
	return 100 * (db.Steal - da.Steal) / (db.Total - da.Total), nil
}

// StealText renders StealPercent's result as "x.y%" or "n/a (reason)".
func StealText(p float64, err error) string {
	if err != nil {
		return NA(err.Error())
	}
	return fmt.Sprintf("%.1f%%", p)
}
