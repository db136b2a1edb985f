package observe

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPUTimes are one /proc/stat "cpu" line's counters, in USER_HZ ticks.
type CPUTimes struct {
	// Total sums the counters up to steal; guest and guest_nice, which
	// follow, are already counted in user and nice.
	Total uint64
	Steal uint64 // time a hypervisor ran something else while this CPU wanted to run
}

// StatTimes are the counters of /proc/stat: All for the "cpu" line, PerCPU
// by CPU number. HasSteal is false on kernels too old to report steal.
type StatTimes struct {
	All      CPUTimes
	PerCPU   map[int]CPUTimes
	HasSteal bool
}

// stealField is steal's position among a cpu line's counters (user nice
// system idle iowait irq softirq steal guest guest_nice).
const stealField = 7

// parseStatTimes parses the cpu lines of /proc/stat.
func parseStatTimes(data []byte) (StatTimes, error) {
	st := StatTimes{PerCPU: map[int]CPUTimes{}, HasSteal: true}
	seen := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		vals := f[1:]
		if len(vals) < 4 {
			return StatTimes{}, fmt.Errorf("proc stat: %q has %d counters, want at least 4", f[0], len(vals))
		}
		var t CPUTimes
		for i, v := range vals {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return StatTimes{}, fmt.Errorf("proc stat: %s counter %d: %w", f[0], i+1, err)
			}
			if i <= stealField {
				t.Total += n
			}
			if i == stealField {
				t.Steal = n
			}
		}
		if len(vals) <= stealField {
			st.HasSteal = false
		}
		if f[0] == "cpu" {
			st.All, seen = t, true
			continue
		}
		c, err := strconv.Atoi(f[0][3:])
		if err != nil || c < 0 {
			return StatTimes{}, fmt.Errorf("proc stat: bad cpu line %q", f[0])
		}
		st.PerCPU[c] = t
	}
	if !seen {
		return StatTimes{}, fmt.Errorf("proc stat: no cpu line")
	}
	return st, nil
}

// ReadStatTimes reads procRoot/stat ("" means /proc).
func ReadStatTimes(procRoot string) (StatTimes, error) {
	if procRoot == "" {
		procRoot = DefaultProcRoot
	}
	b, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return StatTimes{}, err
	}
	return parseStatTimes(b)
}

// StealPercent is the share of time stolen by the hypervisor between two
// readings, over the given CPUs (nil: all), in percent; the error says why
// there is no figure.
func StealPercent(a, b StatTimes, cpus []int) (float64, error) {
	if !a.HasSteal || !b.HasSteal {
		return 0, errors.New("this kernel's /proc/stat has no steal field")
	}
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
	return 100 * float64(db.Steal-da.Steal) / float64(db.Total-da.Total), nil
}

// StealText renders StealPercent's result as "x.y%" or "n/a (reason)".
func StealText(p float64, err error) string {
	if err != nil {
		return NA(err.Error())
	}
	return fmt.Sprintf("%.1f%%", p)
}
