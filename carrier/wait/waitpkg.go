package wait

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spindle-lab/spindle/cpu"
)

func init() {
	Register(Spec{Name: "tpause", Order: 50, New: newTpause, Available: func() error { return waitpkgSupported("tpause") }})
	Register(Spec{Name: "umwait", Order: 60, New: newUmwait, Available: func() error { return waitpkgSupported("umwait") }})
}

// umwaitControlDir is where Linux exposes IA32_UMWAIT_CONTROL (only on CPUs
// with WAITPKG), relative to the sysfs root.
const umwaitControlDir = "devices/system/cpu/umwait_control"

// sysRoot is the sysfs root the strategies read; tests point it elsewhere.
var sysRoot = cpu.DefaultSysRoot

// waitpkgSupported returns nil when this CPU can run the tpause and umwait
// strategies, or an error wrapping ErrNotSupported that says why.
func waitpkgSupported(name string) error {
	c := cpu.Capabilities()
	switch {
	case c.Note != "":
		return fmt.Errorf("wait strategy %s: %s: %w", name, c.Note, ErrNotSupported)
	case !c.WaitPKG:
		return fmt.Errorf("wait strategy %s: CPU lacks WAITPKG (CPUID.7.0:ECX[5] clear on %q): %w",
			name, c.Model, ErrNotSupported)
	}
	return nil
}

// umwaitMaxTime reads the kernel's cap on one TPAUSE/UMWAIT in TSC cycles
// (umwait_control/max_time; 0 when absent or unlimited) and whether the OS
// allows C0.2 (umwait_control/enable_c02) under the sysfs root.
func umwaitMaxTime(root string) (maxCycles uint64, c02 bool) {
	dir := filepath.Join(root, umwaitControlDir)
	maxTime, _ := os.ReadFile(filepath.Join(dir, "max_time"))
	enable, _ := os.ReadFile(filepath.Join(dir, "enable_c02"))
	return parseUmwaitControl(maxTime, enable)
}

// parseUmwaitControl parses the contents of umwait_control's max_time and
// enable_c02 files (nil when absent): a malformed or absent max_time means
// no cap (0), and C0.2 is allowed unless enable_c02 says 0.
func parseUmwaitControl(maxTime, enableC02 []byte) (maxCycles uint64, c02 bool) {
	maxCycles, err := strconv.ParseUint(strings.TrimSpace(string(maxTime)), 10, 64)
	if err != nil {
		maxCycles = 0
	}
	return maxCycles, strings.TrimSpace(string(enableC02)) != "0"
}

// Park waits with TPAUSE (tpause) or UMONITOR/UMWAIT on Target.Word
// (umwait): the core sleeps in a light C0 sub-state for at most Cycles TSC
// cycles at a time, re-checking Ready and polling after each park. UMWAIT also ends when the monitored word is written, so a
// producer that bumps the word wakes the waiter at once; a target without a
// word is waited on with TPAUSE.
type Park struct {
	name    string
	monitor bool
	cycles  uint64
	ctl     uint32 // 0: C0.2, 1: C0.1
	word    *uint32
	target  Target
	step    func()
	// Capped counts parks the OS time limit ended early.
	Capped uint64
}

func newTpause(o Options) (Strategy, error) { return newPark("tpause", false, o) }
func newUmwait(o Options) (Strategy, error) { return newPark("umwait", true, o) }

func newPark(name string, monitor bool, o Options) (Strategy, error) {
	if err := waitpkgSupported(name); err != nil {
		return nil, err
	}
	p := &Park{name: name, monitor: monitor, cycles: o.ParkCycles}
	maxCycles, c02 := umwaitMaxTime(sysRoot)
	if maxCycles > 0 && p.cycles > maxCycles {
		p.cycles = maxCycles
	}
	if o.Shallow || !c02 {
		p.ctl = 1
	}
	p.step = p.park
	return p, nil
}

// Name returns "tpause" or "umwait".
func (p *Park) Name() string { return p.name }

// Wait parks until work, an event or the deadline.
func (p *Park) Wait(t Target, deadline int64) Result {
	if t.Ready() {
		return Result{Kind: KindNone}
	}
	p.target, p.word = t, nil
	if p.monitor {
		p.word = t.Word()
	}
	start := Now()
	out, n, end := spin(t, deadline, 1, p.step)
	p.target, p.word = nil, nil
	return spinResult(out, n, start, end)
}

// park is one step of the spin: one bounded TPAUSE or UMONITOR+UMWAIT.
func (p *Park) park() {
	var capped bool
	if p.word != nil {
		umonitor(p.word)
		if p.target.Ready() { // work came between the check and the monitor
			return
		}
		capped = umwait(rdtsc()+p.cycles, p.ctl)
	} else {
		capped = tpause(rdtsc()+p.cycles, p.ctl)
	}
	if capped {
		p.Capped++
	}
}
