package observe

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/prometheus/procfs"

	"github.com/spindle-lab/spindle/internal/unix"
)

func TestParseSched(t *testing.T) {
	tests := []struct {
		file    string
		want    SchedStats
		wantErr bool
	}{
		{file: "busy-shell.txt", want: SchedStats{Migrations: 0}},
		{file: "rcu-kthread.txt", want: SchedStats{Migrations: 37862}},
		{file: "new-cat.txt", want: SchedStats{}},
		{file: "bad-number.txt", wantErr: true},
		{file: "empty.txt", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "sched", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseSched(data)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseSched error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseSched = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseSchedMigrations(t *testing.T) {
	got, err := ParseSched([]byte("t (1, #threads: 2)\n----\nnr_switches : 7\nse.nr_migrations   :   42\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Migrations != 42 {
		t.Errorf("got %+v, want 42 migrations", got)
	}
	// Other counters, even malformed ones, do not matter.
	if got, err := ParseSched([]byte("nr_switches : x\nse.nr_migrations : 3\n")); err != nil || got.Migrations != 3 {
		t.Errorf("got %+v, %v; want 3 migrations", got, err)
	}
}

func FuzzParseSched(f *testing.F) {
	for _, name := range []string{"busy-shell.txt", "new-cat.txt", "bad-number.txt", "rcu-kthread.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", "sched", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSched(data)
		if err != nil && s != (SchedStats{}) {
			t.Errorf("error %v with non-zero result %+v", err, s)
		}
	})
}

// BenchmarkReadStatus reads and parses this thread's status, the source of
// the context switches (see SchedStats), as SampleThreads does.
func BenchmarkReadStatus(b *testing.B) {
	b.ReportAllocs()
	runtime.LockOSThread() // the thread read is this one
	defer runtime.UnlockOSThread()
	path := filepath.Join(DefaultProcRoot, strconv.Itoa(os.Getpid()), "task", strconv.Itoa(unix.Gettid()), "status")
	for b.Loop() {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ParseStatusSwitches(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadStatusProcfs reads and parses this thread's status with
// procfs, as SampleThreads did before ParseStatusSwitches: the figure
// behind that change.
func BenchmarkReadStatusProcfs(b *testing.B) {
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pfs, err := procfs.NewFS(DefaultProcRoot)
	if err != nil {
		b.Fatal(err)
	}
	th, err := pfs.Thread(os.Getpid(), unix.Gettid())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := th.NewStatus(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadSched reads and parses this thread's sched, the source of
// the migrations.
func BenchmarkReadSched(b *testing.B) {
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	path := filepath.Join(DefaultProcRoot, strconv.Itoa(os.Getpid()), "task", strconv.Itoa(unix.Gettid()), "sched")
	for b.Loop() {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ParseSched(data); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseStatusSwitches(t *testing.T) {
	tests := []struct {
		file    string
		want    ContextSwitches
		wantErr bool
	}{
		{file: "rcu-kthread.txt", want: ContextSwitches{Voluntary: 334033, Involuntary: 2375}},
		{file: "sleep.txt", want: ContextSwitches{Voluntary: 1, Involuntary: 0}},
		{file: "bad-number.txt", wantErr: true},
		{file: "no-nonvoluntary.txt", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "status", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseStatusSwitches(data)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseStatusSwitches error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseStatusSwitches = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestParseStatusSwitchesOrder checks the keys are matched whole (one is
// a suffix of the other) and in any order, and the first line counts.
func TestParseStatusSwitchesOrder(t *testing.T) {
	got, err := ParseStatusSwitches([]byte("nonvoluntary_ctxt_switches:\t3\nvoluntary_ctxt_switches:\t9\nvoluntary_ctxt_switches:\t1\n"))
	if err != nil || got != (ContextSwitches{Voluntary: 9, Involuntary: 3}) {
		t.Errorf("got %+v, %v; want 9 voluntary, 3 involuntary", got, err)
	}
}

func FuzzParseStatusSwitches(f *testing.F) {
	for _, name := range []string{"rcu-kthread.txt", "sleep.txt", "bad-number.txt", "no-nonvoluntary.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", "status", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseStatusSwitches(data)
		if err != nil && s != (ContextSwitches{}) {
			t.Errorf("error %v with non-zero result %+v", err, s)
		}
	})
}
