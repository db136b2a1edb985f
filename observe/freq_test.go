package observe

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
)

func TestFindFreqFixtures(t *testing.T) {
	dev := t.TempDir() // no /dev/cpu/N/msr
	for _, tc := range []struct {
		name, root string
		calibrate  time.Duration
		want       string // substring of the cpufreq status
		wantMeter  bool
	}{
		{"fixed", "fixed", time.Millisecond, "frequency never changed during a 1ms busy calibration", false},
		{"unchecked", "fixed", -1, "available", true},
		{"no cpufreq", "none", time.Millisecond, "n/a (no ", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, srcs := FindFreq(SourceOptions{SysRoot: filepath.Join("testdata", "freq", tc.root), DevRoot: dev,
				Calibrate: tc.calibrate, CPUs: cpu.Set{0, 1}})
			if (m != nil) != tc.wantMeter {
				t.Fatalf("meter %v, want one: %v (%v)", m, tc.wantMeter, srcs)
			}
			if len(srcs) != 2 || srcs[0].Name != msrName || srcs[1].Name != cpufreqName {
				t.Fatalf("sources %+v", srcs)
			}
			if s := srcs[0].String(); !strings.HasPrefix(s, "n/a (no ") || !strings.Contains(s, "msr") {
				t.Errorf("msr %q", s)
			}
			if s := srcs[1].String(); !strings.Contains(s, tc.want) {
				t.Errorf("cpufreq %q, want %q", s, tc.want)
			}
			if m == nil {
				return
			}
			end, err := m.Begin(cpu.Set{0, 1})
			if err != nil {
				t.Fatal(err)
			}
			if ghz, err := end(); err != nil || ghz != 2.4 {
				t.Errorf("GHz %v %v, want 2.4", ghz, err)
			}
		})
	}
}

// TestCpufreqChanging: a value that moves during calibration is available.
func TestCpufreqChanging(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "devices", "system", "cpu", "cpu0", "cpufreq")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "scaling_cur_freq")
	if err := os.WriteFile(path, []byte("1200000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The value rises every millisecond until FindFreq returns, replaced
	// whole (a rename, so no read sees a half-written file): any two
	// readings of the calibration differ, however late the writer is
	// scheduled, as long as it runs once in the calibration's first sample.
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tmp := filepath.Join(root, "next")
		for khz := 1200001; ; khz++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if os.WriteFile(tmp, []byte(strconv.Itoa(khz)+"\n"), 0o644) == nil {
				_ = os.Rename(tmp, path)
			}
		}
	}()
	m, srcs := FindFreq(SourceOptions{SysRoot: root, DevRoot: root, Calibrate: 500 * time.Millisecond, CPUs: cpu.Set{0}})
	close(stop)
	<-done
	if m == nil || !srcs[1].Available {
		t.Fatalf("cpufreq not available: %v", srcs)
	}
}

func TestFreqThisMachine(t *testing.T) {
	m, srcs := FindFreq(SourceOptions{Calibrate: 20 * time.Millisecond})
	logSources(t, srcs)
	if m == nil {
		t.Skip("no frequency source on this machine (see the reasons above)")
	}
	defer m.Close()
	end, err := m.Begin(cpu.Set{0})
	if err != nil {
		t.Fatal(err)
	}
	Spin(20 * time.Millisecond)
	if ghz, err := end(); err != nil || ghz <= 0 {
		t.Errorf("GHz %v %v", ghz, err)
	}
}
