package observe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
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
	notReported := NA(SyscallEvent + " not reported")
	tests := []struct {
		file     string
		window   time.Duration
		cpus     string
		cs       string
		ipc      string
		syscalls string
		nCounter int
	}{
		// Captured on dev-2vcpu: a busy shell loop for 1 s; the VM has no
		// hardware counters.
		{"pid-busy.csv", time.Second, "1.00", "17.00", "n/a (not supported)", notReported, 5},
		{"system-wide.csv", time.Second, "1.01", "48.00", "n/a (not supported)", notReported, 5},
		// With a "# started on" header, as "perf stat -o FILE" writes it.
		{"with-header.csv", 300 * time.Millisecond, "1.01", "3.33", "n/a (cycles not reported)", notReported, 2},
		// An idle process: perf prints <not counted>, which is not zero.
		{"idle-not-counted.csv", 300 * time.Millisecond, "n/a (not counted)", "n/a (not counted)", "n/a (not supported)", notReported, 5},
		// Captured on dev-2vcpu as root: RunPerfStat's events with
		// SyscallEvent, of a process calling getppid in a loop for 1 s.
		{"with-syscalls.csv", time.Second, "0.11", "103.00", "n/a (not supported)", "521616.00", 6},
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
			if got := s.SyscallsPerSec.String(); got != tt.syscalls {
				t.Errorf("system calls/s = %s, want %s", got, tt.syscalls)
			}
		})
	}
}

// perfError finds the reason in perf's messages about an event it refused.
func TestPerfError(t *testing.T) {
	tests := []struct {
		name, out, want string
	}{
		// Captured: raw_syscalls:sys_enter as a user without access to
		// tracefs, and a tracepoint this kernel lacks.
		{"no permission", string(readFixture(t, "perfstat", "no-permission.txt")),
			"No permissions to read /sys/kernel/tracing/events/raw_syscalls/sys_enter"},
		{"unknown tracepoint", string(readFixture(t, "perfstat", "unknown-tracepoint.txt")),
			"File /sys/kernel/tracing/events/raw_syscalls/sys_enterx not found."},
		{"syntax error alone", "event syntax error: 'x:y'\n        \\___ unknown tracepoint\n\nRun 'perf list' for a list of valid events\n", "unknown tracepoint"},
		{"empty Error line", "Error:\n  \\___ can't access trace events\n", "can't access trace events"},
		{"a message", "perf: some failure\n\n Usage: perf stat [<options>]\n    -e, --event <event>   event selector\n", "perf: some failure"},
		{"nothing", "", "perf exited with an error and no message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := perfError([]byte(tt.out)); got != tt.want {
				t.Errorf("perfError = %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzPerfError(f *testing.F) {
	for _, name := range []string{"no-permission.txt", "unknown-tracepoint.txt", "can-count.txt"} {
		f.Add(readFixture(f, "perfstat", name))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		got := perfError(out)
		if got == "" || strings.Contains(got, "\n") || got != strings.TrimSpace(got) {
			t.Errorf("perfError(%q) = %q: want one trimmed, non-empty line", out, got)
		}
	})
}

// fakePerf is a perf command for RunPerfStat's tests: its probe ("perf
// stat ... -- true") prints probe and exits with probeExit; its counting
// run records its arguments in the file args and writes the fixture csv
// where -o says.
func fakePerf(t *testing.T, probe string, probeExit int, csv string) (p Perf, args string) {
	t.Helper()
	dir := t.TempDir()
	args = filepath.Join(dir, "args")
	if err := os.WriteFile(filepath.Join(dir, "probe"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	csvPath, err := filepath.Abs(filepath.Join("testdata", "perfstat", csv))
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`#!/bin/sh
case " $* " in
*" -- true "*) cat %q >&2; exit %d ;;
esac
echo "$*" >%q
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
cat %q >"$out"
`, filepath.Join(dir, "probe"), probeExit, args, csvPath)
	bin := filepath.Join(dir, "perf")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return Perf{LookPath: func(string) (string, error) { return bin, nil }}, args
}

// RunPerfStat counts SyscallEvent where perf can, and says why not where it
// cannot, with the other events counted all the same.
func TestRunPerfStatSyscalls(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh for the fake perf")
	}
	tests := []struct {
		name     string
		probe    string
		exit     int
		csv      string
		counted  bool   // SyscallEvent among the counting run's events
		syscalls string // the summary's figure over 1 s
		canCount string // CanCount's error, "" for nil
	}{
		{"counted", string(readFixture(t, "perfstat", "can-count.txt")), 0, "with-syscalls.csv", true, "521616.00", ""},
		{"no permission", string(readFixture(t, "perfstat", "no-permission.txt")), 129, "pid-busy.csv", false,
			NA("perf cannot count raw_syscalls:sys_enter: No permissions to read /sys/kernel/tracing/events/raw_syscalls/sys_enter"),
			"perf cannot count raw_syscalls:sys_enter: No permissions to read /sys/kernel/tracing/events/raw_syscalls/sys_enter"},
		{"not supported", "<not supported>,,raw_syscalls:sys_enter,0,100.00,,\n", 0, "pid-busy.csv", false,
			NA("perf cannot count raw_syscalls:sys_enter: not supported"), "perf cannot count raw_syscalls:sys_enter: not supported"},
		{"probe output unreadable", "garbage\n", 0, "pid-busy.csv", false,
			NA(`perf cannot count raw_syscalls:sys_enter: parse perf stat: line "garbage": want value,unit,event,...`),
			`perf cannot count raw_syscalls:sys_enter: parse perf stat: line "garbage": want value,unit,event,...`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, args := fakePerf(t, tt.probe, tt.exit, tt.csv)
			err := p.CanCount(context.Background(), SyscallEvent)
			if (err == nil) != (tt.canCount == "") || err != nil && err.Error() != tt.canCount {
				t.Errorf("CanCount = %v, want %q", err, tt.canCount)
			}
			out, err := p.RunPerfStat(context.Background(), t.TempDir(), []int{os.Getpid()}, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			a, err := os.ReadFile(args)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(a), SyscallEvent); got != tt.counted {
				t.Errorf("perf stat %s: %s among the events = %v, want %v", a, SyscallEvent, got, tt.counted)
			}
			s, err := out.Summary(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.SyscallsPerSec.String(); got != tt.syscalls {
				t.Errorf("system calls/s = %s, want %s", got, tt.syscalls)
			}
			if s.CPUsUtilized.NA != "" {
				t.Errorf("CPUs utilized = %v: the other events must be counted all the same", s.CPUsUtilized)
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
	// A thread that makes system calls all through perf's window (locked
	// and started before perf attaches: perf -p counts the threads it
	// finds).
	var done atomic.Bool
	started, finished := make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(finished)
		close(started)
		for !done.Load() {
			syscall.Getppid()
		}
	}()
	<-started
	defer func() { done.Store(true); <-finished }()
	const window = 300 * time.Millisecond
	out, err := Perf{}.RunPerfStat(context.Background(), t.TempDir(), []int{os.Getpid()}, window)
	if err != nil {
		t.Skipf("perf stat cannot count here: %v", err)
	}
	s, err := out.Summary(window)
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUsUtilized.NA != "" || s.CPUsUtilized.Value <= 0.01 {
		t.Errorf("CPUs utilized = %v while a goroutine spins, want > 0.01 (a busy machine may leave it little)", s.CPUsUtilized)
	}
	if out.SyscallsNA != "" {
		t.Skipf("system calls not counted here: %s", out.SyscallsNA)
	}
	if s.SyscallsPerSec.NA != "" || s.SyscallsPerSec.Value <= 0 {
		t.Errorf("system calls/s = %v while a thread calls getppid in a loop, want > 0", s.SyscallsPerSec)
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
	s := PerfSummary{CPUsUtilized: Figure{Value: 1.5}, IPC: Figure{NA: "not supported"}, SyscallsPerSec: &Figure{Value: 42000}}
	var b strings.Builder
	if err := s.WriteText(&b, 2500*time.Millisecond, []byte("raw,csv\n")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"over 2.5s\n",
		"CPUs utilized (task-clock / window)  1.50\n",
		"IPC                                  " + NA("not supported") + "\n",
		"system calls/s                       42000.00\n",
		"\n# perf stat -x, output\nraw,csv\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}
