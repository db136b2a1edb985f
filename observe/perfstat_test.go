package observe

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readFixture(t testing.TB, parts ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParsePerfStat(t *testing.T) {
	tests := []struct {
		file     string
		window   time.Duration
		cpus     string
		cs       string
		ipc      string
		nCounter int
	}{
		// Captured on dev-2vcpu: a busy shell loop for 1 s; the VM has no
		// hardware counters.
		{"pid-busy.csv", time.Second, "1.00", "17.00", "n/a (not supported)", 5},
		{"system-wide.csv", time.Second, "1.01", "48.00", "n/a (not supported)", 5},
		// With a "# started on" header, as "perf stat -o FILE" writes it.
		{"with-header.csv", 300 * time.Millisecond, "1.01", "3.33", "n/a (cycles not reported)", 2},
		// An idle process: perf prints <not counted>, which is not zero.
		{"idle-not-counted.csv", 300 * time.Millisecond, "n/a (not counted)", "n/a (not counted)", "n/a (not supported)", 5},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ps, err := ParsePerfStat(readFixture(t, "perfstat", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(ps.Counters) != tt.nCounter {
				t.Errorf("%d counters, want %d", len(ps.Counters), tt.nCounter)
			}
			s := ps.Summarize(tt.window)
			if got := s.CPUsUtilized.String(); got != tt.cpus {
				t.Errorf("CPUs utilized = %s, want %s", got, tt.cpus)
			}
			if got := s.ContextSwitchesPerSec.String(); got != tt.cs {
				t.Errorf("context switches/s = %s, want %s", got, tt.cs)
			}
			if got := s.IPC.String(); got != tt.ipc {
				t.Errorf("IPC = %s, want %s", got, tt.ipc)
			}
		})
	}
}

func TestPerfStatIPC(t *testing.T) {
	ps, err := ParsePerfStat([]byte("100,msec,task-clock,1,100.00,,\n2000,,cycles,1,100.00,,\n3000,,instructions,1,100.00,,\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := ps.Summarize(100 * time.Millisecond)
	if s.IPC.NA != "" || math.Abs(s.IPC.Value-1.5) > 1e-9 {
		t.Errorf("IPC = %v, want 1.5", s.IPC)
	}
	if s.CPUsUtilized.Value != 1 {
		t.Errorf("CPUs utilized = %v, want 1", s.CPUsUtilized)
	}
}

func TestParsePerfStatErrors(t *testing.T) {
	for _, in := range []string{"", "# only a comment\n", "12,msec\n", "abc,msec,task-clock,1,100,,\n"} {
		if _, err := ParsePerfStat([]byte(in)); err == nil {
			t.Errorf("ParsePerfStat(%q) succeeded, want an error", in)
		}
	}
}

func TestPerfNotInstalled(t *testing.T) {
	p := Perf{LookPath: func(string) (string, error) { return "", exec.ErrNotFound }}
	_, err := p.RunPerfStat(context.Background(), t.TempDir(), []int{os.Getpid()}, 10*time.Millisecond)
	if !errors.Is(err, ErrPerfNotInstalled) {
		t.Fatalf("RunPerfStat error = %v, want ErrPerfNotInstalled", err)
	}
	if got := NA(Reason(err)); got != "n/a (perf not installed)" {
		t.Errorf("NA(Reason(err)) = %q", got)
	}
	if _, err := p.RunPerfSched(context.Background(), t.TempDir(), 10*time.Millisecond); !errors.Is(err, ErrPerfNotInstalled) {
		t.Errorf("RunPerfSched error = %v, want ErrPerfNotInstalled", err)
	}
}

func TestRunPerfStat(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf not installed")
	}
	stop := burn(t)
	defer stop()
	data, err := Perf{}.RunPerfStat(context.Background(), t.TempDir(), []int{os.Getpid()}, 300*time.Millisecond)
	if err != nil {
		t.Skipf("perf stat cannot count here: %v", err)
	}
	ps, err := ParsePerfStat(data)
	if err != nil {
		t.Fatal(err)
	}
	s := ps.Summarize(300 * time.Millisecond)
	if s.CPUsUtilized.NA != "" || s.CPUsUtilized.Value <= 0.01 {
		t.Errorf("CPUs utilized = %v while a goroutine spins, want > 0.01 (a busy machine may leave it little)", s.CPUsUtilized)
	}
}

func FuzzParsePerfStat(f *testing.F) {
	for _, name := range []string{"pid-busy.csv", "with-header.csv", "idle-not-counted.csv"} {
		f.Add(readFixture(f, "perfstat", name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParsePerfStat(data)
		if err != nil {
			return
		}
		if len(ps.Counters) == 0 {
			t.Error("no error and no counters")
		}
		_ = ps.Summarize(time.Second).IPC.String()
	})
}

// WriteText puts the window, each figure (n/a with its reason) and perf's
// raw CSV after its heading.
func TestPerfSummaryWriteText(t *testing.T) {
	s := PerfSummary{CPUsUtilized: Figure{Value: 1.5}, IPC: Figure{NA: "not supported"}}
	var b strings.Builder
	if err := s.WriteText(&b, 2500*time.Millisecond, []byte("raw,csv\n")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"over 2.5s\n",
		"CPUs utilized (task-clock / window)  1.50\n",
		"IPC                                  " + NA("not supported") + "\n",
		"\n# perf stat -x, output\nraw,csv\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}
