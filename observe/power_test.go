package observe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFindPowerFixtures(t *testing.T) {
	for _, tc := range []struct {
		name, root string
		calibrate  time.Duration
		wantRAPL   string // substring of the RAPL status
		wantPerf   string // substring of the perf status
		wantMeter  bool
	}{
		// Two package zones (and a core sub-zone to skip), skipping the check.
		{"rapl live", "rapl", -1, "available", "n/a (no ", true},
		// The same files never move: frozen.
		{"rapl frozen", "rapl", time.Millisecond, "did not move during a 1ms busy calibration", "n/a (no ", false},
		// This VM: a power PMU with energy-psys only.
		{"psys only", "psys", time.Millisecond, "n/a (no ", "no energy-pkg event (it offers energy-psys)", false},
		{"nothing", "none", time.Millisecond, "class/powercap", "bus/event_source/devices/power/type", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, srcs := FindPower(SourceOptions{SysRoot: filepath.Join("testdata", "power", tc.root), Calibrate: tc.calibrate})
			if (m != nil) != tc.wantMeter {
				t.Fatalf("meter %v, want one: %v (%v)", m, tc.wantMeter, srcs)
			}
			if m != nil {
				defer m.Close()
			}
			if len(srcs) != 2 || srcs[0].Name != raplName || srcs[1].Name != perfEnergyName {
				t.Fatalf("sources %+v", srcs)
			}
			if s := srcs[0].String(); !strings.Contains(s, tc.wantRAPL) {
				t.Errorf("RAPL %q, want %q", s, tc.wantRAPL)
			}
			if s := srcs[1].String(); !strings.Contains(s, tc.wantPerf) {
				t.Errorf("perf %q, want %q", s, tc.wantPerf)
			}
			for _, s := range srcs {
				if !s.Available && !strings.HasPrefix(s.String(), "n/a (") {
					t.Errorf("unavailable source without n/a: %q", s)
				}
			}
		})
	}
}

// TestRAPLWraps: the meter accumulates across the counter's wrap-around.
func TestRAPLWraps(t *testing.T) {
	root := t.TempDir()
	zone := filepath.Join(root, "class", "powercap", "intel-rapl:0")
	if err := os.MkdirAll(zone, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, v string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(zone, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("name", "package-0")
	write("max_energy_range_uj", "1000000")
	write("energy_uj", "900000")
	m, srcs := FindPower(SourceOptions{SysRoot: root, Calibrate: -1})
	if m == nil {
		t.Fatalf("no meter: %v", srcs)
	}
	write("energy_uj", "950000")
	if j, err := m.Joules(); err != nil || j != 0.05 {
		t.Fatalf("joules %v %v, want 0.05", j, err)
	}
	write("energy_uj", "50000") // wrapped: +50000 to the top, +50000 after
	if j, err := m.Joules(); err != nil || j != 0.15 {
		t.Fatalf("joules after wrap %v %v, want 0.15", j, err)
	}
	if w := Watts(0.05, 0.15, 100*time.Millisecond); w < 0.999 || w > 1.001 {
		t.Fatalf("watts %v, want 1", w)
	}
}

// TestPowerThisMachine reports what this machine has; it asserts only the
// n/a discipline, since the sources differ between machines.
func TestPowerThisMachine(t *testing.T) {
	m, srcs := FindPower(SourceOptions{Calibrate: 20 * time.Millisecond})
	if m != nil {
		defer m.Close()
	}
	logSources(t, srcs)
	if m == nil {
		t.Skip("no power source on this machine (see the reasons above)")
	}
	j0, _ := m.Joules()
	Spin(20 * time.Millisecond)
	if j1, err := m.Joules(); err != nil || j1 <= j0 {
		t.Errorf("energy %v -> %v (%v) after a busy spin", j0, j1, err)
	}
}

// logSources logs what this machine offers and checks the n/a discipline:
// an unavailable source always says why.
func logSources(t *testing.T, srcs []Source) {
	t.Helper()
	for _, s := range srcs {
		t.Logf("%s: %s", s.Name, s)
		if !s.Available && s.Reason == "" {
			t.Errorf("%s: unavailable without a reason", s.Name)
		}
	}
}

func TestParsePerfEventConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"event=0x02\n", 2, true},
		{"event=0x05", 5, true},
		{"umask=0x1,event=0x3b", 0x3b, true},
		{"config=0x1", 0, false},
		{"event=zz", 0, false},
		{"", 0, false},
	} {
		got, err := parsePerfEventConfig([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: %v %v, want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if v, err := parseScale([]byte("2.3283064365386962890625e-10\n")); err != nil || v != 2.3283064365386962890625e-10 {
		t.Errorf("scale %v %v", v, err)
	}
	for _, bad := range []string{"", "-1", "0", "x", "+Inf"} {
		if _, err := parseScale([]byte(bad)); err == nil {
			t.Errorf("scale %q: want an error", bad)
		}
	}
}

func FuzzParsePerfEventConfig(f *testing.F) {
	f.Add([]byte("event=0x02"))
	f.Add([]byte("umask=0x1,event=0x3b\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parsePerfEventConfig(b)
		if err != nil && v != 0 {
			t.Fatalf("error with value %d", v)
		}
		_, _ = parseScale(b)
		_, _ = parseUint(b)
	})
}
