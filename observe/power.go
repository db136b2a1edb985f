package observe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs/sysfs"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
)

// DefaultCalibration is how long a power or frequency source is exercised
// with a busy loop before it is trusted: RAPL counters update about every
// millisecond and cpufreq every few, so 100ms shows any live source moving.
const DefaultCalibration = 100 * time.Millisecond

// Source is a power or frequency source as found on this machine:
// available, or "n/a (reason)".
type Source struct {
	Name      string `json:"name"`             // e.g. "powercap RAPL", "perf power/energy-pkg"
	Available bool   `json:"available"`        // it exists and moved during calibration
	Reason    string `json:"reason,omitempty"` // why not, when not available
}

// String is "available" or "n/a (reason)".
func (s Source) String() string {
	if s.Available {
		return "available"
	}
	return NA(s.Reason)
}

// SourceOptions say where the sources are read and how they are checked.
type SourceOptions struct {
	// SysRoot is the sysfs mount ("" means /sys); tests point it at
	// testdata.
	SysRoot string
	// DevRoot is the device directory ("" means /dev), for /dev/cpu/N/msr.
	DevRoot string
	// Calibrate is the busy calibration's length (0 means
	// DefaultCalibration; < 0 skips the check, for tests).
	Calibrate time.Duration
	// CPUs are the CPUs a frequency meter watches (nil: the process's
	// allowed CPUs).
	CPUs cpu.Set
}

func (o SourceOptions) sys(parts ...string) string {
	root := o.SysRoot
	if root == "" {
		root = "/sys"
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

func (o SourceOptions) calibration() time.Duration {
	if o.Calibrate == 0 {
		return DefaultCalibration
	}
	return o.Calibrate
}

// errFrozen marks a source that exists but did not move during calibration.
var errFrozen = errors.New("frozen")

// Spin keeps the calling thread busy for d: the calibration load.
func Spin(d time.Duration) {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407 // LCG step: keeps the ALU busy
		}
	}
	spinSink = x
}

var spinSink uint64

// EnergyMeter reads a cumulative energy counter of the CPU packages.
type EnergyMeter interface {
	// Name names the source, as in Source.Name.
	Name() string
	// Joules returns the energy used since the meter was opened.
	Joules() (float64, error)
	// Close releases the meter's files.
	Close() error
}

// Watts measures the mean power between two readings of m.
func Watts(j0, j1 float64, elapsed time.Duration) float64 {
	return (j1 - j0) / elapsed.Seconds()
}

// FindPower looks for package power sources in order (powercap RAPL, then
// the perf power/energy-pkg event), checks each with a busy calibration, and
// returns the first that works (nil when none) with every source's status.
func FindPower(o SourceOptions) (EnergyMeter, []Source) {
	return firstSource([]namedSource[EnergyMeter]{
		{raplName, func() (EnergyMeter, error) { return openRAPL(o) }},
		{perfEnergyName, func() (EnergyMeter, error) { return openPerfEnergy(o) }},
	}, func(m EnergyMeter) error { return calibrateEnergy(m, o.calibration()) })
}

// namedSource is a meter source: its name and how to open it.
type namedSource[M io.Closer] struct {
	name string
	open func() (M, error)
}

// firstSource opens every source in order and checks each that opens with
// check (nil: none); it returns the first that passes (the zero M when none
// does), closes the others, and lists each source as available or n/a with
// the reason.
func firstSource[M io.Closer](sources []namedSource[M], check func(M) error) (M, []Source) {
	var found M
	have := false
	var srcs []Source
	for _, src := range sources {
		m, err := src.open()
		if err == nil && check != nil {
			if err = check(m); err != nil {
				_ = m.Close()
			}
		}
		if err != nil {
			srcs = append(srcs, Source{Name: src.name, Reason: reasonOf(err)})
			continue
		}
		srcs = append(srcs, Source{Name: src.name, Available: true})
		if !have {
			found, have = m, true
		} else {
			_ = m.Close()
		}
	}
	return found, srcs
}

func reasonOf(err error) string {
	var pe *os.PathError
	switch {
	case errors.As(err, &pe) && errors.Is(err, os.ErrNotExist):
		return "no " + pe.Path
	case errors.As(err, &pe) && errors.Is(err, os.ErrPermission):
		return "permission denied: " + pe.Path
	}
	return err.Error()
}

func calibrateEnergy(m EnergyMeter, d time.Duration) error {
	if d < 0 {
		return nil
	}
	j0, err := m.Joules()
	if err != nil {
		return err
	}
	Spin(d)
	j1, err := m.Joules()
	if err != nil {
		return err
	}
	if j1 <= j0 {
		return fmt.Errorf("%w: counter did not move during a %v busy calibration", errFrozen, d)
	}
	return nil
}

// raplName is the powercap RAPL source's name.
const raplName = "powercap RAPL"

// raplZone is one package's energy counter: it wraps at its
// MaxMicrojoules.
type raplZone struct {
	sysfs.RaplZone
	last  uint64
	total uint64 // µJ accumulated since opening
}

type raplMeter struct{ zones []*raplZone }

func (*raplMeter) Name() string { return raplName }
func (*raplMeter) Close() error { return nil }

func (m *raplMeter) Joules() (float64, error) {
	var sum uint64
	for _, z := range m.zones {
		v, err := z.GetEnergyMicrojoules()
		if err != nil {
			return 0, err
		}
		z.total += wrapDelta(z.last, v, z.MaxMicrojoules)
		z.last = v
		sum += z.total
	}
	return float64(sum) / 1e6, nil
}

// wrapDelta is the increase of a counter from a to b that wraps after max.
func wrapDelta(a, b, max uint64) uint64 {
	if b >= a {
		return b - a
	}
	return max - a + b
}

// openRAPL finds the package zones class/powercap/intel-rapl:N through
// procfs's sysfs reader (their name file says "package-N"; sub-zones
// intel-rapl:N:M are cores or DRAM, and intel-rapl-mmio:N repeats a
// package's counter through another interface).
func openRAPL(o SourceOptions) (EnergyMeter, error) {
	fs, err := sysfs.NewFS(o.sys())
	if err != nil {
		return nil, err
	}
	zones, err := sysfs.GetRaplZones(fs)
	if err != nil {
		return nil, err
	}
	m := &raplMeter{}
	for _, rz := range zones {
		n := filepath.Base(rz.Path)
		if rz.Name != "package" || !strings.HasPrefix(n, "intel-rapl:") || strings.Count(n, ":") != 1 {
			continue
		}
		z := &raplZone{RaplZone: rz}
		if z.last, err = z.GetEnergyMicrojoules(); err != nil {
			return nil, err
		}
		m.zones = append(m.zones, z)
	}
	if len(m.zones) == 0 {
		return nil, fmt.Errorf("no package zone under %s", o.sys("class", "powercap"))
	}
	return m, nil
}

// readUint reads a file holding one decimal number.
func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := parseUint(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// parseUint parses one decimal number with surrounding white space, as
// sysfs files hold.
func parseUint(b []byte) (uint64, error) {
	return strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
}

// perfEnergyName is the perf source's name.
const perfEnergyName = "perf power/energy-pkg"

// parsePerfEventConfig parses a sysfs event description such as
// "event=0x02" (the power PMU uses only the event field).
func parsePerfEventConfig(b []byte) (uint64, error) {
	s := strings.TrimSpace(string(b))
	for _, term := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(term, "=")
		if !ok || k != "event" {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
		if err != nil {
			return 0, fmt.Errorf("bad event value %q", v)
		}
		return n, nil
	}
	return 0, fmt.Errorf("no event= term in %q", s)
}

// parseScale parses an event's .scale file, a positive decimal.
func parseScale(b []byte) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("bad scale %q", bytes.TrimSpace(b))
	}
	return v, nil
}

type perfEnergy struct {
	fds   []int
	scale float64
	first []uint64
}

func (*perfEnergy) Name() string { return perfEnergyName }

func (m *perfEnergy) Joules() (float64, error) {
	var sum uint64
	for i, fd := range m.fds {
		v, err := unix.ReadCounter(fd)
		if err != nil {
			return 0, err
		}
		sum += v - m.first[i]
	}
	return float64(sum) * m.scale, nil
}

func (m *perfEnergy) Close() error {
	var errs []error
	for _, fd := range m.fds {
		errs = append(errs, unix.Close(fd))
	}
	return errors.Join(errs...)
}

// openPerfEnergy opens bus/event_source/devices/power/events/energy-pkg on
// each CPU of the PMU's cpumask (one per package).
func openPerfEnergy(o SourceOptions) (EnergyMeter, error) {
	dir := o.sys("bus", "event_source", "devices", "power")
	typ, err := readUint(filepath.Join(dir, "type"))
	if err != nil {
		return nil, err
	}
	desc, err := os.ReadFile(filepath.Join(dir, "events", "energy-pkg"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the power PMU has no energy-pkg event%s", otherEvents(dir))
	}
	if err != nil {
		return nil, err
	}
	config, err := parsePerfEventConfig(desc)
	if err != nil {
		return nil, err
	}
	sb, err := os.ReadFile(filepath.Join(dir, "events", "energy-pkg.scale"))
	if err != nil {
		return nil, err
	}
	scale, err := parseScale(sb)
	if err != nil {
		return nil, err
	}
	mask, err := os.ReadFile(filepath.Join(dir, "cpumask"))
	if err != nil {
		return nil, err
	}
	cpus, err := cpu.ParseList(string(mask))
	if err != nil || len(cpus) == 0 {
		return nil, fmt.Errorf("bad cpumask %q", bytes.TrimSpace(mask))
	}
	m := &perfEnergy{scale: scale}
	for _, c := range cpus {
		fd, err := unix.PerfOpenCounter(uint32(typ), config, c)
		if err != nil {
			_ = m.Close()
			return nil, err
		}
		v, err := unix.ReadCounter(fd)
		if err != nil {
			_ = unix.Close(fd)
			_ = m.Close()
			return nil, err
		}
		m.fds, m.first = append(m.fds, fd), append(m.first, v)
	}
	return m, nil
}

// otherEvents lists the PMU's other events, for the reason text.
func otherEvents(dir string) string {
	ents, _ := os.ReadDir(filepath.Join(dir, "events"))
	var names []string
	for _, e := range ents {
		if !strings.Contains(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return " (it offers " + strings.Join(names, ", ") + ")"
}
