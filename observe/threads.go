package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/procfs"
)

// DefaultProcRoot is where procfs is mounted.
const DefaultProcRoot = "/proc"

// DefaultSampleInterval is how often SampleThreads reads /proc: 10 samples
// a second tell where each thread runs, and reading four files for each of
// a few dozen threads that often stays a small load on the machine under
// test (BenchmarkSampleOnce measures one sample).
const DefaultSampleInterval = 100 * time.Millisecond

// userHZ is the unit of utime and stime in /proc/PID/stat: USER_HZ, which
// Linux fixes at 100 ticks a second for every architecture's user ABI.
const userHZ = 100

// Process names a process to observe.
type Process struct {
	// Name is the role of the process in the benchmark ("server", "mock").
	Name string `json:"name"`
	// PID is its process id.
	PID int `json:"pid"`
}

// ThreadOptions configures SampleThreads.
type ThreadOptions struct {
	// ProcRoot is the procfs mount point; "" means DefaultProcRoot.
	ProcRoot string
	// Interval is the time between samples; 0 means DefaultSampleInterval.
	Interval time.Duration
}

// ThreadStats are one thread's figures over a sampling window. Rates are per
// second of the window; percentages are of one CPU (100 = one full CPU).
type ThreadStats struct {
	Process string `json:"process"`
	PID     int    `json:"pid"`
	TID     int    `json:"tid"`
	// Name is the thread's comm.
	Name string `json:"name"`
	// UsrPct and SysPct are user and system CPU time (%usr, %sys).
	UsrPct float64 `json:"usr_pct"`
	SysPct float64 `json:"sys_pct"`
	// WaitPct is time runnable but waiting for a CPU (schedstat run delay;
	// pidstat's %wait).
	WaitPct float64 `json:"wait_pct"`
	// CswchPerSec and NvcswchPerSec are voluntary and involuntary context
	// switches per second (pidstat's cswch/s and nvcswch/s).
	CswchPerSec   float64 `json:"cswch_per_sec"`
	NvcswchPerSec float64 `json:"nvcswch_per_sec"`
	// Migrations is how many times the thread moved to another CPU; it
	// means nothing when the report's MigrationsNA is set.
	Migrations uint64 `json:"migrations"`
	// CPUShare maps a CPU number to the fraction (0..1) of the thread's CPU
	// time in the window spent there, from the CPU of last run at each
	// sample; empty when the thread did not run.
	CPUShare map[int]float64 `json:"cpu_share,omitempty"`
	// RunNS is the thread's CPU time in the window, in nanoseconds.
	RunNS uint64 `json:"run_ns"`
}

// ThreadReport is the result of SampleThreads.
type ThreadReport struct {
	// Window is the measured time, in nanoseconds in JSON.
	Window time.Duration `json:"window_ns"`
	// Interval is the time between samples.
	Interval time.Duration `json:"interval_ns"`
	// Samples is how many times /proc was read.
	Samples int `json:"samples"`
	// Threads are sorted by process, then thread id.
	Threads []ThreadStats `json:"threads"`
	// MigrationsNA is why no thread has migrations (ErrNoSched's text),
	// "" when they were read.
	MigrationsNA string `json:"migrations_na,omitempty"`
}

// ErrNoSched means the kernel has no /proc/PID/sched files (it was built
// without CONFIG_SCHED_DEBUG), so migrations cannot be read from /proc;
// every other per-thread figure still can.
var ErrNoSched = errors.New("no /proc/PID/task/TID/sched (kernel without CONFIG_SCHED_DEBUG)")

// threadSnap is one reading of one thread's cumulative counters.
type threadSnap struct {
	proc, name    string
	pid, tid      int
	utime, stime  uint64 // clock ticks (userHZ)
	runNS, waitNS uint64 // schedstat
	vol, invol    uint64 // status (see SchedStats for why not sched)
	migrations    uint64 // sched, 0 without it
	cpu           int    // CPU of last run
}

// threadTrack accumulates the samples of one thread.
type threadTrack struct {
	first, prev threadSnap
	cpuNS       map[int]uint64
}

// SampleThreads reads every thread of procs each opt.Interval for window and
// returns per-thread figures. A thread that appears during the window is
// counted from zero (it was born in it); one that ends keeps its last
// reading. It fails if a process cannot be read at the first sample; if ctx
// ends early it returns the figures so far together with ctx's error.
func SampleThreads(ctx context.Context, procs []Process, window time.Duration, opt ThreadOptions) (*ThreadReport, error) {
	root := opt.ProcRoot
	if root == "" {
		root = DefaultProcRoot
	}
	interval := opt.Interval
	if interval <= 0 {
		interval = DefaultSampleInterval
	}
	pfs, err := procfs.NewFS(root)
	if err != nil {
		return nil, fmt.Errorf("sample threads: %w", err)
	}
	// Whether the kernel has sched files is one answer for all threads:
	// asked once, so that a thread ending between two reads is not taken
	// for a kernel without them.
	withSched := true
	var migrationsNA string
	if len(procs) > 0 {
		if err := hasSched(root, procs[0].PID); errors.Is(err, ErrNoSched) {
			withSched, migrationsNA = false, err.Error()
		}
	}
	tracks := map[int]*threadTrack{}
	start := time.Now()
	samples := 0
	sample := func(first bool) error {
		for _, p := range procs {
			snaps, err := readThreads(pfs, root, p, withSched)
			if err != nil {
				if first {
					return err
				}
				continue // the process ended: keep what it had
			}
			for _, s := range snaps {
				t := tracks[s.tid]
				if t == nil {
					t = &threadTrack{first: s, prev: s, cpuNS: map[int]uint64{}}
					if !first { // born in the window: count from zero
						t.first = threadSnap{proc: s.proc, name: s.name, pid: s.pid, tid: s.tid}
						t.prev = t.first
					}
					tracks[s.tid] = t
				}
				if s.runNS > t.prev.runNS {
					t.cpuNS[s.cpu] += s.runNS - t.prev.runNS
				}
				t.prev = s
			}
		}
		samples++
		return nil
	}
	if err := sample(true); err != nil {
		return nil, err
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	deadline := time.NewTimer(window)
	defer deadline.Stop()
	var ctxErr error
loop:
	for {
		select {
		case <-ctx.Done():
			ctxErr = ctx.Err()
			break loop
		case <-deadline.C:
			break loop
		case <-tick.C:
			_ = sample(false)
		}
	}
	_ = sample(false)
	elapsed := time.Since(start)
	rep := &ThreadReport{Window: elapsed, Interval: interval, Samples: samples, MigrationsNA: migrationsNA}
	for _, t := range tracks {
		rep.Threads = append(rep.Threads, summarize(t.first, t.prev, t.cpuNS, elapsed))
	}
	slices.SortFunc(rep.Threads, func(a, b ThreadStats) int {
		if c := strings.Compare(a.Process, b.Process); c != 0 {
			return c
		}
		return a.TID - b.TID
	})
	return rep, ctxErr
}

// summarize turns the first and last readings of a thread into rates over
// elapsed. It is pure.
func summarize(first, last threadSnap, cpuNS map[int]uint64, elapsed time.Duration) ThreadStats {
	sec := elapsed.Seconds()
	pct := func(ticks uint64) float64 { return 100 * float64(ticks) / userHZ / sec }
	st := ThreadStats{
		Process: last.proc, PID: last.pid, TID: last.tid, Name: last.name,
		UsrPct:        pct(sub(last.utime, first.utime)),
		SysPct:        pct(sub(last.stime, first.stime)),
		WaitPct:       100 * float64(sub(last.waitNS, first.waitNS)) / float64(elapsed.Nanoseconds()),
		CswchPerSec:   float64(sub(last.vol, first.vol)) / sec,
		NvcswchPerSec: float64(sub(last.invol, first.invol)) / sec,
		Migrations:    sub(last.migrations, first.migrations),
		RunNS:         sub(last.runNS, first.runNS),
	}
	var total uint64
	for _, ns := range cpuNS {
		total += ns
	}
	if total > 0 {
		st.CPUShare = map[int]float64{}
		for c, ns := range cpuNS {
			st.CPUShare[c] = float64(ns) / float64(total)
		}
	}
	return st
}

// sub is b-a for counters, 0 if a counter went backwards (a reused id).
func sub(b, a uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

// hasSched returns ErrNoSched when process pid has no sched file while the
// process itself is there; nil otherwise (a process that is not there is
// the first sample's error to report).
func hasSched(root string, pid int) error {
	dir := filepath.Join(root, strconv.Itoa(pid))
	if _, err := os.Stat(filepath.Join(dir, "sched")); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, "stat")); err == nil {
			return ErrNoSched
		}
	}
	return nil
}

// readThreads reads every thread of p once; withSched reads migrations
// too.
func readThreads(pfs procfs.FS, root string, p Process, withSched bool) ([]threadSnap, error) {
	threads, err := pfs.AllThreads(p.PID)
	if err != nil {
		return nil, fmt.Errorf("read threads of %s (pid %d): %w", p.Name, p.PID, err)
	}
	out := make([]threadSnap, 0, len(threads))
	for _, th := range threads {
		s, err := readThread(th, root, p, withSched)
		if err != nil {
			continue // the thread ended between the listing and the read
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read threads of %s (pid %d): no readable thread", p.Name, p.PID)
	}
	return out, nil
}

func readThread(th procfs.Proc, root string, p Process, withSched bool) (threadSnap, error) {
	stat, err := th.Stat()
	if err != nil {
		return threadSnap{}, err
	}
	ss, err := th.Schedstat()
	if err != nil {
		return threadSnap{}, err
	}
	dir := filepath.Join(root, strconv.Itoa(p.PID), "task", strconv.Itoa(th.PID))
	raw, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return threadSnap{}, err
	}
	sw, err := ParseStatusSwitches(raw)
	if err != nil {
		return threadSnap{}, err
	}
	var sched SchedStats
	if withSched {
		if raw, err = os.ReadFile(filepath.Join(dir, "sched")); err != nil {
			return threadSnap{}, err
		}
		if sched, err = ParseSched(raw); err != nil {
			return threadSnap{}, err
		}
	}
	return threadSnap{
		proc: p.Name, name: stat.Comm, pid: p.PID, tid: th.PID,
		utime: uint64(stat.UTime), stime: uint64(stat.STime),
		runNS: ss.RunningNanoseconds, waitNS: ss.WaitingNanoseconds,
		vol: sw.Voluntary, invol: sw.Involuntary,
		migrations: sched.Migrations, cpu: int(stat.Processor),
	}, nil
}

// WriteText writes the report as a pidstat-like table, one row per thread.
func (r *ThreadReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "# per-thread figures over %.1fs, %d samples every %v (from /proc)\n",
		r.Window.Seconds(), r.Samples, r.Interval)
	migrations := func(t ThreadStats) string { return strconv.FormatUint(t.Migrations, 10) }
	if r.MigrationsNA != "" {
		fmt.Fprintf(w, "# migrations: %s\n", NA(r.MigrationsNA))
		migrations = func(ThreadStats) string { return "n/a" }
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	io.WriteString(tw, "process\tpid\ttid\tthread\t%usr\t%sys\t%wait\tcswch/s\tnvcswch/s\tmigrations\tCPU share\t\n")
	for _, t := range r.Threads {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%s\t%s\t\n",
			t.Process, t.PID, t.TID, t.Name, t.UsrPct, t.SysPct, t.WaitPct,
			t.CswchPerSec, t.NvcswchPerSec, migrations(t), formatShare(t.CPUShare))
	}
	return tw.Flush()
}

// formatShare renders {0: 0.44, 1: 0.56} as "cpu0 44% cpu1 56%", or "-"
// when the thread did not run.
func formatShare(share map[int]float64) string {
	if len(share) == 0 {
		return "-"
	}
	var b strings.Builder
	for i, c := range slices.Sorted(maps.Keys(share)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "cpu%d %.0f%%", c, 100*share[c])
	}
	return b.String()
}

// WriteJSON writes the report as indented JSON.
func (r *ThreadReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
