package cpu

import "sync"

// cpuid executes CPUID with EAX=eaxArg and ECX=ecxArg.
func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

// xgetbv reads XCR0, the extended state the OS saves on context switches.
// Call it only when CPUID reports OSXSAVE.
func xgetbv() (eax, edx uint32)

// Capabilities probes the CPU with CPUID (and XGETBV for OS support), once
// per process: in a virtual machine every CPUID traps to the hypervisor.
func Capabilities() Caps { return probeCaps() }

var probeCaps = sync.OnceValue(func() Caps {
	return capsFromCPUID(func(leaf, sub uint32) [4]uint32 {
		a, b, c, d := cpuid(leaf, sub)
		return [4]uint32{a, b, c, d}
	}, func() uint64 {
		a, d := xgetbv()
		return uint64(d)<<32 | uint64(a)
	})
})
