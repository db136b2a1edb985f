package observe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Idle is how the kernel idles a CPU, from sysfs: what a wake-up of an
// idle CPU costs its waker. A CPU in a polling idle state (cpuidle's POLL,
// a KVM guest's halt-polling) sees new work without an interrupt; one
// halted needs an IPI, and in a virtual machine that IPI is a VM exit on
// each side. On the 2-vCPU KVM development machine the block-and-wake cost
// B was 30.8 µs with the guest's halt-polling off (guest_halt_poll_ns 0)
// and 3.2 µs with it at 200 µs (docs/PERFORMANCE.md, sixteenth session).
type Idle struct {
	// Driver and Governor are cpuidle's ("none" for a kernel without
	// cpuidle drivers: the architecture's default idle).
	Driver   string `json:"driver"`
	Governor string `json:"governor"`
	// States are cpu0's idle states, shallowest first.
	States []string `json:"states,omitempty"`
	// HaltPollNs is the cpuidle-haltpoll guest driver's longest poll
	// before halting (guest_halt_poll_ns), -1 where that driver is not
	// loaded (not a KVM guest, or a kernel without it).
	HaltPollNs int64 `json:"guest_halt_poll_ns"`
	// NA says why there is no reading ("" when there is one).
	NA string `json:"na,omitempty"`
}

// ReadIdle reads the idle configuration under sysRoot ("" means /sys).
func ReadIdle(sysRoot string) Idle {
	if sysRoot == "" {
		sysRoot = "/sys"
	}
	dir := filepath.Join(sysRoot, "devices/system/cpu/cpuidle")
	driver, err := readTrimmed(filepath.Join(dir, "current_driver"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Idle{HaltPollNs: -1, NA: "no " + dir + "/current_driver: the kernel has no cpuidle"}
		}
		return Idle{HaltPollNs: -1, NA: err.Error()}
	}
	id := Idle{Driver: driver, HaltPollNs: -1}
	for _, f := range []string{"current_governor_ro", "current_governor"} {
		if g, err := readTrimmed(filepath.Join(dir, f)); err == nil {
			id.Governor = g
			break
		}
	}
	for i := 0; ; i++ {
		name, err := readTrimmed(filepath.Join(sysRoot, "devices/system/cpu/cpu0/cpuidle", fmt.Sprintf("state%d", i), "name"))
		if err != nil {
			break
		}
		id.States = append(id.States, name)
	}
	if s, err := readTrimmed(filepath.Join(sysRoot, "module/haltpoll/parameters/guest_halt_poll_ns")); err == nil {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			id.NA = fmt.Sprintf("guest_halt_poll_ns %q is not a count of nanoseconds", s)
			return id
		}
		id.HaltPollNs = n
	}
	return id
}

// String renders the configuration on one line, with what it means for a
// wake-up where that is known.
func (id Idle) String() string {
	if id.Driver == "" {
		return NA(id.NA)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "driver %s, governor %s", id.Driver, orNone(id.Governor))
	if len(id.States) > 0 {
		fmt.Fprintf(&b, ", states %s", strings.Join(id.States, " | "))
	}
	switch {
	case id.NA != "":
		fmt.Fprintf(&b, "; %s", NA(id.NA))
	case id.HaltsAtOnce():
		b.WriteString("; guest halt-polling off (guest_halt_poll_ns 0): a wake-up of an idle vCPU is an IPI and a VM exit")
	case id.HaltPollNs > 0:
		fmt.Fprintf(&b, "; guest halt-polling up to %v (guest_halt_poll_ns): a vCPU idle for less sees new work without an IPI", time.Duration(id.HaltPollNs))
	}
	return b.String()
}

// HaltsAtOnce reports whether the machine is a KVM guest whose idle CPUs
// halt without polling first (guest_halt_poll_ns 0): every wake-up of an
// idle CPU is then an IPI and a VM exit, which a waiter that polls
// through short gaps avoids.
func (id Idle) HaltsAtOnce() bool { return id.NA == "" && id.Driver != "" && id.HaltPollNs == 0 }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func readTrimmed(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
