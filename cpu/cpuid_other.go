//go:build !amd64

package cpu

import "runtime"

// Capabilities reports nothing beyond the architecture where spindle has no
// CPUID probe: every capability reads as absent, with the reason in Note.
func Capabilities() Caps {
	return Caps{Arch: runtime.GOARCH, Note: "no CPUID probe for " + runtime.GOARCH}
}
