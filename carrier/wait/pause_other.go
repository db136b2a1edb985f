//go:build !amd64

package wait

// hasPause: no PAUSE instruction here.
const hasPause = false

// pause is a no-op where spindle has no spin-loop hint in assembly; the
// pause strategy then behaves like busy with fewer polls.
func pause() {}

// pauseN is a no-op loop where spindle has no PAUSE in assembly.
func pauseN(n uint64) {
	for ; n > 0; n-- {
		pause()
	}
}

// The WAITPKG instructions exist only on amd64; waitpkgSupported keeps
// these from being reached elsewhere.
func rdtsc() uint64                           { return 0 }
func tpause(deadline uint64, ctl uint32) bool { return false }
func umonitor(addr *uint32)                   {}
func umwait(deadline uint64, ctl uint32) bool { return false }
