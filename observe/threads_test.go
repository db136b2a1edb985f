package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// burn keeps one locked OS thread of this process busy until stop is called.
func burn(t testing.TB) (stop func()) {
	t.Helper()
	var done atomic.Bool
	finished := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(finished)
		for !done.Load() {
		}
	}()
	return func() { done.Store(true); <-finished }
}

func TestSummarize(t *testing.T) {
	first := threadSnap{proc: "server", pid: 10, tid: 11, name: "spindle",
		utime: 100, stime: 50, runNS: 1e9, waitNS: 1e8, vol: 10, invol: 5, migrations: 3, cpu: 0}
	last := first
	last.utime, last.stime = 150, 60 // +0.5 s user, +0.1 s system
	last.runNS, last.waitNS = 1.6e9, 3e8
	last.vol, last.invol, last.migrations = 210, 25, 7
	st := summarize(first, last, map[int]uint64{0: 3e8, 1: 1e8}, 2*time.Second)
	want := ThreadStats{Process: "server", PID: 10, TID: 11, Name: "spindle",
		UsrPct: 25, SysPct: 5, WaitPct: 10, CswchPerSec: 100, NvcswchPerSec: 10, Migrations: 4,
		RunNS: 6e8, CPUShare: map[int]float64{0: 0.75, 1: 0.25}}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if st.Process != want.Process || st.TID != want.TID || !near(st.UsrPct, want.UsrPct) ||
		!near(st.SysPct, want.SysPct) || !near(st.WaitPct, want.WaitPct) ||
		!near(st.CswchPerSec, want.CswchPerSec) || !near(st.NvcswchPerSec, want.NvcswchPerSec) ||
		st.Migrations != want.Migrations || st.RunNS != want.RunNS ||
		!near(st.CPUShare[0], 0.75) || !near(st.CPUShare[1], 0.25) {
		t.Errorf("summarize = %+v\nwant %+v", st, want)
	}
	// A counter that went backwards (reused thread id) gives 0, not a wrap.
	if got := summarize(last, first, nil, time.Second); got.Migrations != 0 || got.CPUShare != nil {
		t.Errorf("backwards counters: %+v", got)
	}
}

func TestSampleThreads(t *testing.T) {
	stop := burn(t)
	defer stop()
	rep, err := SampleThreads(context.Background(), []Process{{Name: "self", PID: os.Getpid()}},
		400*time.Millisecond, ThreadOptions{Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Samples < 5 {
		t.Errorf("%d samples in 400ms every 20ms", rep.Samples)
	}
	// The spinning thread is always running or runnable, however busy the
	// machine: its CPU time plus its run-queue wait fill the window
	// (ticks are 10ms and the sampler starts a little late, so allow slack).
	var busiest ThreadStats
	for _, th := range rep.Threads {
		if th.Process != "self" || th.PID != os.Getpid() {
			t.Errorf("thread %+v not labelled with its process", th)
		}
		if th.RunNS > busiest.RunNS {
			busiest = th
		}
	}
	runPct := 100 * float64(busiest.RunNS) / float64(rep.Window.Nanoseconds())
	if runPct+busiest.WaitPct < 70 {
		t.Errorf("busiest thread %+v: run %.1f%% + wait %.1f%% < 70%% while spinning", busiest, runPct, busiest.WaitPct)
	}
	if busiest.UsrPct+busiest.SysPct <= 0 {
		t.Errorf("busiest thread %+v: no %%usr or %%sys while spinning", busiest)
	}
	sum := 0.0
	for _, s := range busiest.CPUShare {
		sum += s
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("CPU shares of the busiest thread sum to %v", sum)
	}
	var txt, js bytes.Buffer
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "%wait") || !strings.Contains(txt.String(), "self") {
		t.Errorf("text report:\n%s", txt.String())
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back ThreadReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Threads) != len(rep.Threads) {
		t.Errorf("JSON round trip: %v, %d threads", err, len(back.Threads))
	}
}

func TestSampleThreadsErrors(t *testing.T) {
	if _, err := SampleThreads(context.Background(), []Process{{Name: "x", PID: os.Getpid()}},
		time.Millisecond, ThreadOptions{ProcRoot: t.TempDir()}); err == nil {
		t.Error("sampling from an empty proc root succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := SampleThreads(ctx, []Process{{Name: "x", PID: os.Getpid()}}, time.Hour, ThreadOptions{})
	if err == nil || rep == nil {
		t.Errorf("cancelled sampling: report %v, error %v; want partial report and ctx error", rep, err)
	}
}

// BenchmarkSampleOnce reads every thread of this process once, the cost of
// one sample per process.
func BenchmarkSampleOnce(b *testing.B) {
	b.ReportAllocs()
	pfs, err := procfs.NewFS(DefaultProcRoot)
	if err != nil {
		b.Fatal(err)
	}
	p := Process{Name: "self", PID: os.Getpid()}
	n := 0
	for b.Loop() {
		snaps, err := readThreads(pfs, DefaultProcRoot, p, true)
		if err != nil {
			b.Fatal(err)
		}
		n = len(snaps)
	}
	b.ReportMetric(float64(n), "threads")
}

// fakeProcRoot copies this process's stat, status and schedstat files, and
// its sched files when withSched, into a procfs tree under a temporary
// directory, with the context switches in status set to 1234 voluntary and
// 56 involuntary and the migrations in sched to 7. It returns the root and
// the pid.
func fakeProcRoot(t *testing.T, withSched bool) (string, int) {
	t.Helper()
	pid := os.Getpid()
	root := t.TempDir()
	self := filepath.Join("/proc", strconv.Itoa(pid))
	tids, err := os.ReadDir(filepath.Join(self, "task"))
	if err != nil {
		t.Fatal(err)
	}
	vol := regexp.MustCompile(`(?m)^voluntary_ctxt_switches:.*$`)
	invol := regexp.MustCompile(`(?m)^nonvoluntary_ctxt_switches:.*$`)
	migr := regexp.MustCompile(`(?m)^se\.nr_migrations .*$`)
	files := []string{"stat", "status", "schedstat"}
	if withSched {
		files = append(files, "sched")
	}
	copyDir := func(from, to string) {
		if err := os.MkdirAll(to, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(filepath.Join(from, f))
			if err != nil {
				t.Fatal(err)
			}
			data = vol.ReplaceAll(data, []byte("voluntary_ctxt_switches:\t1234"))
			data = invol.ReplaceAll(data, []byte("nonvoluntary_ctxt_switches:\t56"))
			data = migr.ReplaceAll(data, []byte("se.nr_migrations : 7"))
			if err := os.WriteFile(filepath.Join(to, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := filepath.Join(root, strconv.Itoa(pid))
	copyDir(self, dir)
	n := 0
	for _, e := range tids {
		// A thread may end while it is copied: skip it.
		if _, err := os.Stat(filepath.Join(self, "task", e.Name(), "status")); err != nil {
			continue
		}
		copyDir(filepath.Join(self, "task", e.Name()), filepath.Join(dir, "task", e.Name()))
		n++
	}
	if n == 0 {
		t.Fatal("no thread copied")
	}
	return root, pid
}

// TestReadThreadSources checks where each counter comes from: context
// switches from status (also without sched), migrations from sched.
func TestReadThreadSources(t *testing.T) {
	for _, withSched := range []bool{true, false} {
		root, pid := fakeProcRoot(t, withSched)
		pfs, err := procfs.NewFS(root)
		if err != nil {
			t.Fatal(err)
		}
		snaps, err := readThreads(pfs, root, Process{Name: "self", PID: pid}, withSched)
		if err != nil {
			t.Fatalf("sched %v: %v", withSched, err)
		}
		want := uint64(0)
		if withSched {
			want = 7
		}
		for _, s := range snaps {
			if s.vol != 1234 || s.invol != 56 || s.migrations != want {
				t.Errorf("sched %v: thread %d: %d/%d switches, %d migrations; want 1234/56 from status, %d",
					withSched, s.tid, s.vol, s.invol, s.migrations, want)
			}
		}
	}
}

// TestSampleThreadsWithoutSched samples a kernel without sched files:
// every other figure is there, migrations are n/a with the reason.
func TestSampleThreadsWithoutSched(t *testing.T) {
	for _, withSched := range []bool{true, false} {
		root, pid := fakeProcRoot(t, withSched)
		rep, err := SampleThreads(context.Background(), []Process{{Name: "self", PID: pid}}, 30*time.Millisecond,
			ThreadOptions{ProcRoot: root, Interval: 10 * time.Millisecond})
		if err != nil {
			t.Fatalf("sched %v: %v", withSched, err)
		}
		if len(rep.Threads) == 0 {
			t.Fatalf("sched %v: no thread", withSched)
		}
		var txt bytes.Buffer
		if err := rep.WriteText(&txt); err != nil {
			t.Fatal(err)
		}
		gotNA := strings.Contains(txt.String(), "# migrations: n/a (no /proc/PID/task/TID/sched")
		if withSched && (rep.MigrationsNA != "" || gotNA) {
			t.Errorf("with sched: migrations n/a %q\n%s", rep.MigrationsNA, txt.String())
		}
		if !withSched && (rep.MigrationsNA != ErrNoSched.Error() || !gotNA) {
			t.Errorf("without sched: migrations n/a %q, want %q\n%s", rep.MigrationsNA, ErrNoSched, txt.String())
		}
	}
}

// TestWriteTextPidstatLayout: threads.txt reads as pidstat -h -t -u -w
// output: the system line, the header, a process line and its thread
// lines, one value per column and the command last.
func TestWriteTextPidstatLayout(t *testing.T) {
	end := time.Date(2026, 12, 1, 14, 41, 53, 0, time.UTC)
	rep := &ThreadReport{
		Window: 3 * time.Second, Interval: 100 * time.Millisecond, Samples: 31, End: end,
		System:    SystemInfo{Kernel: "6.18.44", Hostname: "vm", Arch: "x86_64", CPUs: 2},
		Processes: []Process{{Name: "server", PID: 100}},
		Threads: []ThreadStats{
			{Process: "server", PID: 100, TID: 100, Name: "spindle", UsrPct: 1, SysPct: 2, WaitPct: 0.5, CPU: 1, CswchPerSec: 10, Migrations: 2},
			{Process: "server", PID: 100, TID: 103, Name: "carrier 0", UsrPct: 40, SysPct: 30, GuestPct: 0.25, WaitPct: 5, CPU: 0, CswchPerSec: 300, NvcswchPerSec: 4.5, Migrations: 1},
		},
	}
	tests := []struct {
		name         string
		migrationsNA string
		want         []string
	}{
		{"with migrations", "", []string{
			"Linux 6.18.44 (vm) \t12/01/26 \t_x86_64_\t(2 CPU)",
			"",
			"# Time        UID      TGID       TID    %usr %system  %guest   %wait    %CPU   CPU   cswch/s nvcswch/s migrations  Command",
			"14:41:53        0       100         -   41.00   32.00    0.25    5.50   73.00     1    310.00      4.50          3  spindle",
			"14:41:53        0         -       100    1.00    2.00    0.00    0.50    3.00     1     10.00      0.00          2  |__spindle",
			"14:41:53        0         -       103   40.00   30.00    0.25    5.00   70.00     0    300.00      4.50          1  |__carrier 0",
			"",
			"# spindle: 3.0s window ending at Time, 31 samples every 100ms, from /proc; processes: server (pid 100)",
		}},
		{"without migrations", "no sched", []string{
			"Linux 6.18.44 (vm) \t12/01/26 \t_x86_64_\t(2 CPU)",
			"",
			"# Time        UID      TGID       TID    %usr %system  %guest   %wait    %CPU   CPU   cswch/s nvcswch/s migrations  Command",
			"14:41:53        0       100         -   41.00   32.00    0.25    5.50   73.00     1    310.00      4.50        n/a  spindle",
			"14:41:53        0         -       100    1.00    2.00    0.00    0.50    3.00     1     10.00      0.00        n/a  |__spindle",
			"14:41:53        0         -       103   40.00   30.00    0.25    5.00   70.00     0    300.00      4.50        n/a  |__carrier 0",
			"",
			"# spindle: 3.0s window ending at Time, 31 samples every 100ms, from /proc; processes: server (pid 100)",
			"# migrations: n/a (no sched)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep.MigrationsNA = tt.migrationsNA
			var b bytes.Buffer
			if err := rep.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			// A pidstat parser splits on white space and takes the command
			// as the rest of the line: every data line has one value per
			// header column.
			header := strings.Fields(strings.TrimPrefix(got[2], "#"))
			for _, line := range got[3:6] {
				if f := strings.Fields(line); len(f) < len(header) {
					t.Errorf("%q: %d fields, header has %d", line, len(f), len(header))
				}
			}
		})
	}
}
