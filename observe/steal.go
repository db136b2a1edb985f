package observe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

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
	d, err := Between(a, b, cpus)
	if err != nil {
		return 0, err
	}
	return 100 * d.Steal / d.Total, nil
}

// BusyShare is the share of time the given CPUs (nil: all) ran something
// between two readings, 0 to 1 (steal counts as busy: the CPU wanted to
// run); the error says why there is no figure.
func BusyShare(a, b StatTimes, cpus []int) (float64, error) {
	d, err := Between(a, b, cpus)
	if err != nil {
		return 0, err
	}
	return d.Busy / d.Total, nil
}

// Between sums the counters of the given CPUs (nil: all) from reading a to
// reading b; an error where a CPU has no line in either reading or no tick
// passed between them.
func Between(a, b StatTimes, cpus []int) (CPUTimes, error) {
	da, db := a.All, b.All
	if cpus != nil {
		da, db = CPUTimes{}, CPUTimes{}
		for _, c := range cpus {
			x, ok1 := a.PerCPU[c]
			y, ok2 := b.PerCPU[c]
			if !ok1 || !ok2 {
				return CPUTimes{}, fmt.Errorf("no cpu%d line in /proc/stat", c)
			}
			da, db = da.plus(x), db.plus(y)
		}
	}
	if db.Total <= da.Total {
		return CPUTimes{}, errors.New("no clock ticks between the readings (window shorter than 10ms)")
	}
	return CPUTimes{Total: db.Total - da.Total, Busy: db.Busy - da.Busy, Steal: db.Steal - da.Steal}, nil
}

func (t CPUTimes) plus(u CPUTimes) CPUTimes {
	return CPUTimes{Total: t.Total + u.Total, Busy: t.Busy + u.Busy, Steal: t.Steal + u.Steal}
}

// StealText renders StealPercent's result as "x.y%" or "n/a (reason)".
func StealText(p float64, err error) string {
	if err != nil {
		return NA(err.Error())
	}
	return fmt.Sprintf("%.1f%%", p)
}

// UserHZ is the unit of /proc/stat's counters: USER_HZ ticks a second, 100
// on every architecture Go runs Linux on (procfs assumes it too).
const UserHZ = 100

// maxStealCPU bounds the CPU numbers parseSteal takes (the kernel's
// NR_CPUS is at most 8192), so that a malformed line cannot make it grow
// a slice without end.
const maxStealCPU = 1 << 16

// StealReader reads the per-CPU steal counters of /proc/stat again and
// again, allocating nothing once its buffers have grown to the file: for a
// sampler beside a load generator whose own threads allocate nothing per
// request (ReadStatTimes, through procfs, allocates about 90 times and
// 26 kB a read on 2 CPUs). Not for concurrent use.
type StealReader struct {
	f     *os.File
	buf   []byte
	steal []int64
}

// OpenStealReader opens procRoot/stat ("" means /proc).
func OpenStealReader(procRoot string) (*StealReader, error) {
	if procRoot == "" {
		procRoot = DefaultProcRoot
	}
	f, err := os.Open(filepath.Join(procRoot, "stat"))
	if err != nil {
		return nil, err
	}
	return &StealReader{f: f, buf: make([]byte, 4096)}, nil
}

// Read reads the file again (from its start: procfs makes it anew) and
// returns each CPU's steal counter in UserHZ ticks, indexed by CPU number,
// -1 for a number without a "cpuN" line (an offline CPU). The slice is
// valid until the next Read.
func (r *StealReader) Read() ([]int64, error) {
	for {
		n, err := r.f.ReadAt(r.buf, 0)
		if err == nil { // the buffer is full: the file may be longer
			r.buf = make([]byte, 2*len(r.buf))
			continue
		}
		if !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read %s: %w", r.f.Name(), err)
		}
		if r.steal, err = parseSteal(r.buf[:n], r.steal); err != nil {
			return nil, fmt.Errorf("%s: %w", r.f.Name(), err)
		}
		return r.steal, nil
	}
}

// Close closes the file.
func (r *StealReader) Close() error { return r.f.Close() }

// parseSteal parses the steal counter, the eighth number, of the "cpuN"
// lines of /proc/stat b into out (reused: its contents are replaced),
// indexed by CPU number, -1 where no line has the number. It fails on a
// "cpuN" line with fewer than eight numbers, a number that is not one, and
// a CPU listed twice; other lines are skipped.
func parseSteal(b []byte, out []int64) ([]int64, error) {
	out = out[:0]
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(line) < 4 || string(line[:3]) != "cpu" || line[3] < '0' || line[3] > '9' {
			continue // the "cpu" total, intr, ctxt, ...
		}
		rest := line[3:]
		cpu, rest, ok := statNumber(rest)
		if !ok || cpu >= maxStealCPU || (len(rest) > 0 && rest[0] != ' ') {
			return out, fmt.Errorf("bad CPU number in %q", line)
		}
		var steal int64
		for i := range 8 {
			rest = bytes.TrimLeft(rest, " ")
			if steal, rest, ok = statNumber(rest); !ok {
				return out, fmt.Errorf("%q: field %d is not a counter (want user nice system idle iowait irq softirq steal)", line, i+1)
			}
		}
		for int64(len(out)) <= cpu {
			out = append(out, -1)
		}
		if out[cpu] >= 0 {
			return out, fmt.Errorf("cpu%d is listed twice", cpu)
		}
		out[cpu] = steal
	}
	return out, nil
}

// statNumber parses the decimal number at the start of b, ending at a
// space or b's end, and returns the rest.
func statNumber(b []byte) (int64, []byte, bool) {
	var n int64
	i := 0
	for ; i < len(b) && b[i] != ' '; i++ {
		c := b[i]
		if c < '0' || c > '9' || n > (math.MaxInt64-int64(c-'0'))/10 {
			return 0, b, false
		}
		n = 10*n + int64(c-'0')
	}
	return n, b[i:], i > 0
}
