package wait

// hasPause: pause executes a real PAUSE instruction.
const hasPause = true

// pause executes one PAUSE instruction (spin-loop hint).
func pause()

// pauseN executes n PAUSE instructions back to back.
func pauseN(n uint64)

// rdtsc reads the time-stamp counter.
func rdtsc() uint64

// tpause parks the core until the TSC reaches deadline (ctl 0: C0.2, 1:
// C0.1) and reports whether the OS time limit cut it short. It faults
// without WAITPKG: call it only after waitpkgSupported.
func tpause(deadline uint64, ctl uint32) bool

// umonitor arms monitoring of the cache line holding addr (WAITPKG).
//
//go:noescape
func umonitor(addr *uint32)

// umwait parks the core until the monitored line is written or the TSC
// reaches deadline, like tpause (WAITPKG).
func umwait(deadline uint64, ctl uint32) bool
