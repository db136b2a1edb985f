package cpu

import (
	"bufio"
	"encoding/binary"
	"os"
	"runtime"
	"strings"
	"testing"
)

// fakeCPUID builds CPUID answers for a vendor, a brand string and chosen
// register bits, as a recorded CPU would give them.
type fakeCPUID struct {
	maxLeaf, maxExt uint32
	vendor, brand   string
	leaf1ECX        uint32
	leaf7           [4]uint32
	ext1ECX         uint32
	ext7EDX         uint32
}

func (f fakeCPUID) cpuid(leaf, sub uint32) [4]uint32 {
	le := func(s string, i int) uint32 {
		var b [4]byte
		copy(b[:], s[min(i, len(s)):min(i+4, len(s))])
		return binary.LittleEndian.Uint32(b[:])
	}
	switch {
	case leaf == 0:
		return [4]uint32{f.maxLeaf, le(f.vendor, 0), le(f.vendor, 8), le(f.vendor, 4)}
	case leaf > f.maxLeaf && leaf < 0x80000000, leaf > f.maxExt:
		return [4]uint32{} // real CPUs answer out-of-range leaves with junk; callers must not ask
	case leaf == 1:
		return [4]uint32{0, 0, f.leaf1ECX, 0}
	case leaf == 7:
		return f.leaf7
	case leaf == 0x80000000:
		return [4]uint32{f.maxExt}
	case leaf == 0x80000001:
		return [4]uint32{0, 0, f.ext1ECX, 0}
	case leaf >= 0x80000002 && leaf <= 0x80000004:
		o := int(leaf-0x80000002) * 16
		return [4]uint32{le(f.brand, o), le(f.brand, o+4), le(f.brand, o+8), le(f.brand, o+12)}
	case leaf == 0x80000007:
		return [4]uint32{0, 0, 0, f.ext7EDX}
	}
	return [4]uint32{}
}

func TestCapsFromCPUID(t *testing.T) {
	spr := fakeCPUID{
		maxLeaf: 0x20, maxExt: 0x80000008, vendor: "GenuineIntel",
		brand:    "Intel(R) Xeon(R) Platinum 8480+\x00",
		leaf1ECX: leaf1ECXOSXSAVE, leaf7: [4]uint32{0, leaf7EBXAVX512F, leaf7ECXWAITPKG, 0},
		ext7EDX: ext7EDXInvariantTSC,
	}
	noOS := spr
	noOS.leaf1ECX = 0
	zen := fakeCPUID{
		maxLeaf: 0x10, maxExt: 0x80000021, vendor: "AuthenticAMD",
		brand:    "AMD EPYC 9654 96-Core Processor                 ",
		leaf1ECX: leaf1ECXOSXSAVE, leaf7: [4]uint32{0, leaf7EBXAVX512F, 0, 0},
		ext1ECX: ext1ECXMonitorX, ext7EDX: ext7EDXInvariantTSC,
	}
	old := fakeCPUID{maxLeaf: 1, maxExt: 0x80000001, vendor: "GenuineIntel", leaf1ECX: leaf1ECXOSXSAVE}
	tests := []struct {
		name string
		cpu  fakeCPUID
		xcr0 uint64
		want Caps
	}{
		{"sapphire rapids", spr, 0xe7, Caps{Vendor: "GenuineIntel", Model: "Intel(R) Xeon(R) Platinum 8480+",
			Pause: true, WaitPKG: true, AVX512F: true, InvariantTSC: true}},
		{"OS without AVX-512 state", spr, 0x07, Caps{Vendor: "GenuineIntel", Model: "Intel(R) Xeon(R) Platinum 8480+",
			Pause: true, WaitPKG: true, InvariantTSC: true}},
		{"no OSXSAVE", noOS, 0xe7, Caps{Vendor: "GenuineIntel", Model: "Intel(R) Xeon(R) Platinum 8480+",
			Pause: true, WaitPKG: true, InvariantTSC: true}},
		{"zen 4", zen, 0xe7, Caps{Vendor: "AuthenticAMD", Model: "AMD EPYC 9654 96-Core Processor",
			Pause: true, MonitorX: true, AVX512F: true, InvariantTSC: true}},
		{"old", old, 0xe7, Caps{Vendor: "GenuineIntel", Pause: true}},
	}
	for _, tt := range tests {
		got := capsFromCPUID(tt.cpu.cpuid, func() uint64 {
			if tt.cpu.leaf1ECX&leaf1ECXOSXSAVE == 0 {
				t.Errorf("%s: XGETBV called without OSXSAVE (it would fault)", tt.name)
			}
			return tt.xcr0
		})
		tt.want.Arch = runtime.GOARCH
		if got != tt.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

// cpuinfo returns the first processor's flags and model name from
// /proc/cpuinfo.
func cpuinfo(t *testing.T) (map[string]bool, string) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo to compare with: %v", err)
	}
	defer f.Close()
	flags, model := map[string]bool{}, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "flags":
			if len(flags) == 0 {
				for _, fl := range strings.Fields(v) {
					flags[fl] = true
				}
			}
		case "model name":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		}
	}
	if len(flags) == 0 {
		t.Skip("/proc/cpuinfo has no flags line on this architecture")
	}
	return flags, model
}

func TestCapabilitiesMatchCPUInfo(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		c := Capabilities()
		if c.Note == "" || c.WaitPKG || c.AVX512F {
			t.Fatalf("%s: Capabilities() = %+v, want nothing and a note", runtime.GOARCH, c)
		}
		t.Skipf("no CPUID on %s to compare with /proc/cpuinfo", runtime.GOARCH)
	}
	flags, model := cpuinfo(t)
	c := Capabilities()
	t.Logf("CPUID: %+v", c)
	for _, chk := range []struct {
		flag string
		got  bool
	}{
		{"waitpkg", c.WaitPKG},
		{"avx512f", c.AVX512F},
		{"mwaitx", c.MonitorX},
		{"nonstop_tsc", c.InvariantTSC},
	} {
		if flags[chk.flag] != chk.got {
			t.Errorf("CPUID says %s=%v, /proc/cpuinfo says %v", chk.flag, chk.got, flags[chk.flag])
		}
	}
	if model != "" && c.Model != model {
		t.Errorf("brand string %q, /proc/cpuinfo model name %q", c.Model, model)
	}
	if !c.Pause {
		t.Error("no PAUSE on amd64")
	}
}

func FuzzCapsFromCPUID(f *testing.F) {
	f.Add(uint32(7), uint32(0x80000008), uint32(1<<27), uint32(1<<16), uint32(1<<5), uint64(0xe7))
	f.Fuzz(func(t *testing.T, maxLeaf, maxExt, ecx1, ebx7, ecx7 uint32, xcr0 uint64) {
		cpu := fakeCPUID{maxLeaf: maxLeaf, maxExt: maxExt, vendor: "FuzzVendor!!", brand: "x",
			leaf1ECX: ecx1, leaf7: [4]uint32{0, ebx7, ecx7, 0}}
		c := capsFromCPUID(cpu.cpuid, func() uint64 { return xcr0 })
		if c.AVX512F && (xcr0&xcr0AVX512 != xcr0AVX512 || ecx1&leaf1ECXOSXSAVE == 0) {
			t.Fatalf("AVX512F without OS support: %+v", c)
		}
		if c.Vendor != "FuzzVendor!!" {
			t.Fatalf("vendor %q", c.Vendor)
		}
	})
}
