package spectrum

import (
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/observe"
)

// ProbeOptions say where the probe reads the machine and how long it
// calibrates.
type ProbeOptions struct {
	SysRoot   string        // sysfs ("" means /sys)
	DevRoot   string        // device files ("" means /dev)
	ProcRoot  string        // procfs ("" means /proc)
	Calibrate time.Duration // busy calibration of each source (0: observe.DefaultCalibration)
}

// TopologyReport is the topology as probe prints it.
type TopologyReport struct {
	Summary  string    `json:"summary"`
	CPUs     cpu.Set   `json:"cpus"`
	Allowed  cpu.Set   `json:"allowed"`
	Cores    []cpu.Set `json:"smt_siblings"` // one set per physical core
	Dies     []cpu.Set `json:"dies"`
	Clusters []cpu.Set `json:"l3_clusters"`
	Packages []cpu.Set `json:"packages"`
	Error    string    `json:"error,omitempty"`
}

// ProbeReport is what this machine offers the waiting spectrum.
type ProbeReport struct {
	Model    string           `json:"model"`
	Vendor   string           `json:"vendor"`
	Arch     string           `json:"arch"`
	Caps     map[string]bool  `json:"capabilities"` // PAUSE, WAITPKG, MONITORX, AVX512F, InvariantTSC
	CapsNote string           `json:"capabilities_note,omitempty"`
	Topology TopologyReport   `json:"topology"`
	Power    []observe.Source `json:"power_sources"`
	Freq     []observe.Source `json:"frequency_sources"`
	// Strategies maps each wait strategy to "available" or "n/a (reason)".
	Strategies map[string]string `json:"wait_strategies"`
	Kernels    map[string]string `json:"kernels"`
	// BlockWakeUs is B in µs: the median cost of one block-and-wake after
	// the sleeper's CPU idled briefly; BlockWakeHotUs the same with no idle.
	BlockWakeUs    float64 `json:"block_wake_us"`
	BlockWakeHotUs float64 `json:"block_wake_hot_us"`
	BlockWakeNA    string  `json:"block_wake_na,omitempty"`
	// BlockWakeCrossUs is B between two pinned threads on the first and
	// last allowed CPUs (BlockWakeCPUs), through the spectrum's futex line;
	// n/a on a one-CPU machine.
	BlockWakeCrossUs float64 `json:"block_wake_cross_cpu_us"`
	BlockWakeCPUs    [2]int  `json:"block_wake_cpus"`
	BlockWakeCrossNA string  `json:"block_wake_cross_cpu_na,omitempty"`
	// Idle is how the kernel idles a CPU (cpuidle, a KVM guest's
	// halt-polling): what sets B where the sleeper's CPU goes idle.
	Idle    observe.Idle `json:"cpuidle"`
	PauseNs float64      `json:"pause_ns"`
	PauseNA string       `json:"pause_na,omitempty"`
	// StealBoot is the share of CPU time stolen since boot, StealNow during
	// the calibrations, as "x.y%" or "n/a (reason)".
	StealBoot string `json:"steal_since_boot"`
	StealNow  string `json:"steal_during_probe"`
}

// Meters are the power and frequency meters a probe found, for the
// spectrum runs; nil where none works.
type Meters struct {
	Power   observe.EnergyMeter
	PowerNA string
	Freq    observe.FreqMeter
	FreqNA  string
}

// Close releases the meters.
func (m Meters) Close() {
	if m.Power != nil {
		_ = m.Power.Close()
	}
	if m.Freq != nil {
		_ = m.Freq.Close()
	}
}

// pauseSamples is how many PAUSEs one timing of MeasurePause executes:
// about 100µs on a CPU where PAUSE takes ~40 cycles.
const pauseSamples = 10000

// Probe describes the machine: CPU capabilities, topology, power and
// frequency sources (each calibrated), wait strategies, B and the cost of
// one PAUSE, and steal time.
func Probe(o ProbeOptions) (*ProbeReport, Meters, error) {
	caps := cpu.Capabilities()
	r := &ProbeReport{
		Model: caps.Model, Vendor: caps.Vendor, Arch: caps.Arch, CapsNote: caps.Note,
		Caps: map[string]bool{"PAUSE": caps.Pause, "WAITPKG": caps.WaitPKG, "MONITORX": caps.MonitorX,
			"AVX512F": caps.AVX512F, "InvariantTSC": caps.InvariantTSC},
		Strategies: map[string]string{}, Kernels: map[string]string{},
	}
	allowed, err := cpu.Allowed()
	if err != nil {
		return nil, Meters{}, err
	}
	r.Topology.Allowed = allowed
	sys := o.SysRoot
	if sys == "" {
		sys = cpu.DefaultSysRoot
	}
	if topo, err := cpu.ReadTopology(sys); err != nil {
		r.Topology.Error = err.Error()
	} else {
		r.Topology.Summary, r.Topology.CPUs = topo.Summary(), topo.CPUs()
		r.Topology.Cores, r.Topology.Dies = topo.Cores(), topo.Dies()
		r.Topology.Clusters, r.Topology.Packages = topo.Clusters(), topo.Packages()
	}
	st0, stErr := observe.ReadStatTimes(o.ProcRoot)
	so := observe.SourceOptions{SysRoot: o.SysRoot, DevRoot: o.DevRoot, Calibrate: o.Calibrate}
	var m Meters
	m.Power, r.Power = observe.FindPower(so)
	m.Freq, r.Freq = observe.FindFreq(so)
	m.PowerNA, m.FreqNA = naOf(r.Power), naOf(r.Freq)
	for name, err := range wait.Available() {
		r.Strategies[name] = availability(err)
	}
	for _, k := range []string{"scalar", "avx512"} {
		_, err := KernelByName(k)
		r.Kernels[k] = availability(err)
	}
	if b, err := wait.MeasureBlockWakeAfter(wait.DefaultMeasureRounds, wait.DefaultMeasureIdle); err != nil {
		r.BlockWakeNA = observe.NA(err.Error())
	} else {
		r.BlockWakeUs = float64(b) / 1e3
	}
	if b, err := wait.MeasureBlockWake(wait.DefaultMeasureRounds); err == nil {
		r.BlockWakeHotUs = float64(b) / 1e3
	}
	r.Idle = observe.ReadIdle(o.SysRoot)
	r.BlockWakeCrossNA = observe.NA("one allowed CPU")
	if len(allowed) > 1 {
		x, y := allowed[0], allowed[len(allowed)-1]
		if b, err := MeasureLineWake(x, y, wait.DefaultMeasureRounds, wait.DefaultMeasureIdle); err != nil {
			r.BlockWakeCrossNA = observe.NA(err.Error())
		} else {
			r.BlockWakeCrossUs, r.BlockWakeCPUs, r.BlockWakeCrossNA = float64(b)/1e3, [2]int{x, y}, ""
		}
	}
	if p, err := wait.MeasurePause(pauseSamples); err != nil {
		r.PauseNA = observe.NA(err.Error())
	} else {
		r.PauseNs = p
	}
	if stErr != nil {
		r.StealBoot = observe.NA(stErr.Error())
		r.StealNow = r.StealBoot
	} else {
		// Since boot: from all-zero counters to the first reading.
		r.StealBoot = observe.StealText(observe.StealPercent(observe.StatTimes{}, st0, nil))
		st1, err := observe.ReadStatTimes(o.ProcRoot)
		if err != nil {
			r.StealNow = observe.NA(err.Error())
		} else {
			r.StealNow = observe.StealText(observe.StealPercent(st0, st1, nil))
		}
	}
	return r, m, nil
}

func availability(err error) string {
	if err == nil {
		return "available"
	}
	return observe.NA(err.Error())
}

// naOf joins the reasons of unavailable sources, for the n/a of a metric.
func naOf(srcs []observe.Source) string {
	s := ""
	for _, src := range srcs {
		if src.Available {
			return ""
		}
		if s != "" {
			s += "; "
		}
		s += src.Name + ": " + src.Reason
	}
	return s
}
