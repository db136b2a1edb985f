package cpu

import (
	"encoding/binary"
	"runtime"
	"strings"
)

// Caps are the CPU capabilities that matter for waiting and for the
// waiting-spectrum suite's compute kernels.
type Caps struct {
	Arch   string // runtime.GOARCH
	Vendor string // CPUID vendor id, e.g. "GenuineIntel", "AuthenticAMD"
	Model  string // the brand string, e.g. "Intel(R) Xeon(R) Platinum 8480+"
	// Pause: the PAUSE spin-loop hint (every x86-64 CPU has it).
	Pause bool
	// WaitPKG: TPAUSE, UMONITOR and UMWAIT (CPUID.7.0:ECX[5]).
	WaitPKG bool
	// MonitorX: AMD's MONITORX/MWAITX (CPUID.80000001h:ECX[29]).
	MonitorX bool
	// AVX512F: the CPU has AVX-512 Foundation (CPUID.7.0:EBX[16]) and the
	// OS saves its state (XCR0 bits 1, 2, 5, 6 and 7 set).
	AVX512F bool
	// InvariantTSC: the TSC ticks at a constant rate in every C- and
	// P-state (CPUID.80000007h:EDX[8]).
	InvariantTSC bool
	// Note says why the probe could not run, when it could not.
	Note string
}

// CPUID bits and XCR0 masks, from the Intel SDM vol. 2A (CPUID) and AMD
// APM vol. 3.
const (
	leaf1ECXOSXSAVE     = 1 << 27
	leaf7EBXAVX512F     = 1 << 16
	leaf7ECXWAITPKG     = 1 << 5
	ext1ECXMonitorX     = 1 << 29
	ext7EDXInvariantTSC = 1 << 8
	// xcr0AVX512 is SSE (bit 1), AVX (bit 2), opmask (5), ZMM_Hi256 (6) and
	// Hi16_ZMM (7): the state AVX-512 code needs the OS to save.
	xcr0AVX512 = 1<<1 | 1<<2 | 1<<5 | 1<<6 | 1<<7
)

// capsFromCPUID decodes the capabilities from a CPUID function (leaf,
// subleaf -> EAX, EBX, ECX, EDX) and an XGETBV function (XCR0), so that the
// decoding is tested with recorded register values.
func capsFromCPUID(cpuid func(leaf, sub uint32) [4]uint32, xgetbv func() uint64) Caps {
	c := Caps{Arch: runtime.GOARCH, Pause: true}
	r := cpuid(0, 0)
	maxLeaf := r[0]
	var v [12]byte
	binary.LittleEndian.PutUint32(v[0:], r[1])
	binary.LittleEndian.PutUint32(v[4:], r[3])
	binary.LittleEndian.PutUint32(v[8:], r[2])
	c.Vendor = strings.TrimRight(string(v[:]), "\x00")

	osxsave := false
	if maxLeaf >= 1 {
		osxsave = cpuid(1, 0)[2]&leaf1ECXOSXSAVE != 0
	}
	if maxLeaf >= 7 {
		r := cpuid(7, 0)
		c.WaitPKG = r[2]&leaf7ECXWAITPKG != 0
		if r[1]&leaf7EBXAVX512F != 0 && osxsave {
			c.AVX512F = xgetbv()&xcr0AVX512 == xcr0AVX512
		}
	}
	maxExt := cpuid(0x80000000, 0)[0]
	if maxExt >= 0x80000001 {
		c.MonitorX = cpuid(0x80000001, 0)[2]&ext1ECXMonitorX != 0
	}
	if maxExt >= 0x80000004 {
		var b [48]byte
		for i := uint32(0); i < 3; i++ {
			r := cpuid(0x80000002+i, 0)
			for j, reg := range r {
				binary.LittleEndian.PutUint32(b[i*16+uint32(j)*4:], reg)
			}
		}
		c.Model = strings.TrimSpace(strings.TrimRight(string(b[:]), "\x00"))
	}
	if maxExt >= 0x80000007 {
		c.InvariantTSC = cpuid(0x80000007, 0)[3]&ext7EDXInvariantTSC != 0
	}
	return c
}
