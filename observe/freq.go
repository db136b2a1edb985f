package observe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/spindle-lab/spindle/cpu"
)

// FreqMeter measures the mean core frequency of some CPUs over a window.
type FreqMeter interface {
	// Name names the source, as in Source.Name.
	Name() string
	// Begin starts a window on cpus; the function it returns ends the
	// window and returns the mean frequency in GHz.
	Begin(cpus cpu.Set) (end func() (float64, error), err error)
	// Close releases the meter's files.
	Close() error
}

// FindFreq looks for frequency sources in order (APERF/MPERF through
// /dev/cpu/N/msr, which measures the frequency the cores really ran at,
// then cpufreq's scaling_cur_freq), checks each with a busy calibration, and
// returns the first that works (nil when none) with every source's status.
func FindFreq(o SourceOptions) (FreqMeter, []Source) {
	cpus := o.CPUs
	if len(cpus) == 0 {
		var err error
		if cpus, err = cpu.Allowed(); err != nil || len(cpus) == 0 {
			cpus = cpu.Set{0}
		}
	}
	return firstSource([]namedSource[FreqMeter]{
		{msrName, func() (FreqMeter, error) { return openMSR(o, cpus) }},
		{cpufreqName, func() (FreqMeter, error) { return openCpufreq(o, cpus) }},
	}, nil)
}

// cpufreqName is the cpufreq source's name.
const cpufreqName = "cpufreq scaling_cur_freq"

// calibrationSamples is how many times cpufreq is read during calibration.
const calibrationSamples = 5

type cpufreqMeter struct{ o SourceOptions }

func (cpufreqMeter) Name() string { return cpufreqName }
func (cpufreqMeter) Close() error { return nil }

func (m cpufreqMeter) path(c int) string {
	return m.o.sys("devices", "system", "cpu", "cpu"+strconv.Itoa(c), "cpufreq", "scaling_cur_freq")
}

// read returns the CPUs' current frequencies in kHz.
func (m cpufreqMeter) read(cpus cpu.Set) ([]uint64, error) {
	out := make([]uint64, len(cpus))
	for i, c := range cpus {
		v, err := readUint(m.path(c))
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Begin samples the CPUs now and at the end; the mean of both samples is
// the window's frequency (cpufreq shows only the current value).
func (m cpufreqMeter) Begin(cpus cpu.Set) (func() (float64, error), error) {
	a, err := m.read(cpus)
	if err != nil {
		return nil, err
	}
	return func() (float64, error) {
		b, err := m.read(cpus)
		if err != nil {
			return 0, err
		}
		var sum uint64
		for i := range a {
			sum += a[i] + b[i]
		}
		return float64(sum) / float64(2*len(a)) / 1e6, nil // kHz -> GHz
	}, nil
}

// openCpufreq checks that scaling_cur_freq exists for the CPUs and changes
// during a busy calibration: a value that never changes is a fixed or
// virtualised frequency, which says nothing about the cores.
func openCpufreq(o SourceOptions, cpus cpu.Set) (FreqMeter, error) {
	m := cpufreqMeter{o}
	first, err := m.read(cpus)
	if err != nil {
		return nil, err
	}
	d := o.calibration()
	if d < 0 {
		return m, nil
	}
	for i := 0; i < calibrationSamples; i++ {
		Spin(d / calibrationSamples)
		v, err := m.read(cpus)
		if err != nil {
			return nil, err
		}
		for j := range v {
			if v[j] != first[j] {
				return m, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: frequency never changed during a %v busy calibration (fixed or virtualised)", errFrozen, d)
}

// msrName is the APERF/MPERF source's name.
const msrName = "APERF/MPERF (msr)"

// The architectural MSRs (Intel SDM vol. 4; AMD implements the same): MPERF
// counts at a fixed reference rate and APERF at the actual rate, both only
// while the core runs (C0), so ΔAPERF/ΔMPERF is the mean actual/reference
// frequency ratio.
const (
	msrMPERF = 0xE7
	msrAPERF = 0xE8
)

type msrMeter struct {
	files   map[int]*os.File // CPU -> /dev/cpu/N/msr
	baseGHz float64          // MPERF's rate, from the calibration
}

func (*msrMeter) Name() string { return msrName }

func (m *msrMeter) Close() error {
	var errs []error
	for _, f := range m.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

func (m *msrMeter) read(c int) (aperf, mperf uint64, err error) {
	f, ok := m.files[c]
	if !ok {
		return 0, 0, fmt.Errorf("msr: CPU %d was not opened", c)
	}
	// The msr device reads the register named by the file offset.
	var b [8]byte
	if _, err := f.ReadAt(b[:], msrAPERF); err != nil {
		return 0, 0, err
	}
	aperf = leUint64(b[:])
	if _, err := f.ReadAt(b[:], msrMPERF); err != nil {
		return 0, 0, err
	}
	return aperf, leUint64(b[:]), nil
}

func leUint64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func (m *msrMeter) sum(cpus cpu.Set) (a, p uint64, err error) {
	for _, c := range cpus {
		x, y, err := m.read(c)
		if err != nil {
			return 0, 0, err
		}
		a, p = a+x, p+y
	}
	return a, p, nil
}

func (m *msrMeter) Begin(cpus cpu.Set) (func() (float64, error), error) {
	a0, p0, err := m.sum(cpus)
	if err != nil {
		return nil, err
	}
	return func() (float64, error) {
		a1, p1, err := m.sum(cpus)
		if err != nil {
			return 0, err
		}
		if p1 == p0 {
			return 0, fmt.Errorf("msr: MPERF did not move (the CPUs were idle)")
		}
		return m.baseGHz * float64(a1-a0) / float64(p1-p0), nil
	}, nil
}

// openMSR opens /dev/cpu/N/msr for the CPUs and calibrates MPERF's rate by
// spinning on the first of them.
func openMSR(o SourceOptions, cpus cpu.Set) (FreqMeter, error) {
	dev := o.DevRoot
	if dev == "" {
		dev = "/dev"
	}
	m := &msrMeter{files: map[int]*os.File{}}
	for _, c := range cpus {
		f, err := os.Open(filepath.Join(dev, "cpu", strconv.Itoa(c), "msr"))
		if err != nil {
			_ = m.Close()
			return nil, err
		}
		m.files[c] = f
	}
	d := o.calibration()
	if d < 0 {
		m.baseGHz = 1
		return m, nil
	}
	type res struct {
		a, p uint64
		t    time.Duration
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		// The thread is left locked so it exits with the goroutine,
		// taking the pinning with it.
		runtime.LockOSThread()
		if err := cpu.Pin(cpu.Set{cpus[0]}); err != nil {
			ch <- res{err: err}
			return
		}
		a0, p0, err := m.read(cpus[0])
		start := time.Now()
		Spin(d)
		el := time.Since(start)
		a1, p1, err1 := m.read(cpus[0])
		ch <- res{a1 - a0, p1 - p0, el, errors.Join(err, err1)}
	}()
	r := <-ch
	if r.err != nil {
		_ = m.Close()
		return nil, r.err
	}
	if r.a == 0 || r.p == 0 {
		_ = m.Close()
		return nil, fmt.Errorf("%w: APERF/MPERF did not move during a %v busy calibration", errFrozen, d)
	}
	m.baseGHz = float64(r.p) / float64(r.t.Nanoseconds())
	return m, nil
}
