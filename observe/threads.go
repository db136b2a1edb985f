package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/spindle-lab/spindle/cpu"
)

// DefaultProcRoot is where procfs is mounted.
const DefaultProcRoot = cpu.DefaultProcRoot

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
	// UID is the process's real user id (pidstat's UID).
	UID uint64 `json:"uid"`
	// Name is the thread's comm.
	Name string `json:"name"`
	// UsrPct and SysPct are user and system CPU time (%usr, %system);
	// GuestPct is time spent running a virtual CPU (%guest), which the
	// kernel also counts in user time.
	UsrPct   float64 `json:"usr_pct"`
	SysPct   float64 `json:"sys_pct"`
	GuestPct float64 `json:"guest_pct"`
	// CPU is the CPU the thread last ran on at the last sample (pidstat's
	// CPU column).
	CPU int `json:"cpu"`
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
	// SchemaVersion is ThreadsSchemaVersion in what WriteJSON writes.
	SchemaVersion int `json:"schema_version"`
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
	// End is when the window ended.
	End time.Time `json:"end"`
	// System describes the machine, for the text report's first line.
	System SystemInfo `json:"system"`
	// Processes are the observed processes with their roles.
	Processes []Process `json:"processes"`
}

// SystemInfo is what pidstat's first line says of the machine.
type SystemInfo struct {
	Kernel   string `json:"kernel"`   // the release, /proc/sys/kernel/osrelease
	Hostname string `json:"hostname"` // /proc/sys/kernel/hostname
	Arch     string `json:"arch"`     // uname's machine name (x86_64, aarch64)
	CPUs     int    `json:"cpus"`     // online CPUs (cpuN lines of /proc/stat)
}

// unameMachine maps GOARCH to uname's machine names where they differ.
var unameMachine = map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686"}

// readSystemInfo reads SystemInfo under procRoot; a field that cannot be
// read is "?" (or 0 CPUs), which only makes the text report's first line
// less informative.
func readSystemInfo(procRoot string) SystemInfo {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(procRoot, "sys", "kernel", name))
		if err != nil {
			return "?"
		}
		return strings.TrimSpace(string(b))
	}
	si := SystemInfo{Kernel: read("osrelease"), Hostname: read("hostname"), Arch: runtime.GOARCH}
	if m, ok := unameMachine[si.Arch]; ok {
		si.Arch = m
	}
	if st, err := ReadStatTimes(procRoot); err == nil {
		si.CPUs = len(st.PerCPU)
	}
	return si
}

// ErrNoSched means the kernel has no /proc/PID/sched files (it was built
// without CONFIG_SCHED_DEBUG), so migrations cannot be read from /proc;
// every other per-thread figure still can.
var ErrNoSched = errors.New("no /proc/PID/task/TID/sched (kernel without CONFIG_SCHED_DEBUG)")

// threadSnap is one reading of one thread's cumulative counters.
type threadSnap struct {
	proc, name    string
	pid, tid      int
	uid           uint64
	utime, stime  uint64 // clock ticks (userHZ)
	guest         uint64 // clock ticks (userHZ)
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
	rep := &ThreadReport{Window: elapsed, Interval: interval, Samples: samples, MigrationsNA: migrationsNA,
		End: time.Now(), System: readSystemInfo(root), Processes: procs}
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
		Process: last.proc, PID: last.pid, TID: last.tid, UID: last.uid, Name: last.name,
		UsrPct:        pct(sub(last.utime, first.utime)),
		SysPct:        pct(sub(last.stime, first.stime)),
		GuestPct:      pct(sub(last.guest, first.guest)),
		CPU:           last.cpu,
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
	if len(out) > 0 {
		// The real UID is the process's: read once, from the leader's
		// status; a process whose status cannot be read keeps UID 0 only
		// in a report that is anyway about to lose it.
		if st, err := pfs.Proc(p.PID); err == nil {
			if ps, err := st.NewStatus(); err == nil {
				for i := range out {
					out[i].uid = ps.UIDs[0]
				}
			}
		}
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
		utime: uint64(stat.UTime), stime: uint64(stat.STime), guest: uint64(max(0, stat.GuestTime)),
		runNS: ss.RunningNanoseconds, waitNS: ss.WaitingNanoseconds,
		vol: sw.Voluntary, invol: sw.Involuntary,
		migrations: sched.Migrations, cpu: int(stat.Processor),
	}, nil
}

// WriteText writes the report in the layout of pidstat -h -t -u -w (one
// line per process, then one per thread, every column one value, the
// command last), so that pidstat parsers read it, with a migrations column
// before the command; the window, the sampling and the roles of the
// processes follow as comment lines. Per-CPU shares are in WriteJSON's
// output.
func (r *ThreadReport) WriteText(w io.Writer) error {
	si := r.System
	fmt.Fprintf(w, "Linux %s (%s) \t%s \t_%s_\t(%d CPU)\n\n", si.Kernel, si.Hostname, r.End.Format("01/02/06"), si.Arch, si.CPUs)
	migrations := func(n uint64) string { return strconv.FormatUint(n, 10) }
	if r.MigrationsNA != "" {
		migrations = func(uint64) string { return "n/a" }
	}
	at := r.End.Format("15:04:05")
	// pidstat's column widths, with migrations (11) before the command.
	fmt.Fprintf(w, "%-8s%9s%10s%10s%8s%8s%8s%8s%8s%6s%10s%10s%11s  %s\n", "# Time", "UID", "TGID", "TID",
		"%usr", "%system", "%guest", "%wait", "%CPU", "CPU", "cswch/s", "nvcswch/s", "migrations", "Command")
	row := func(tgid, tid string, t ThreadStats, command string) {
		fmt.Fprintf(w, "%-8s%9d%10s%10s%8.2f%8.2f%8.2f%8.2f%8.2f%6d%10.2f%10.2f%11s  %s\n",
			at, t.UID, tgid, tid, t.UsrPct, t.SysPct, t.GuestPct, t.WaitPct, t.UsrPct+t.SysPct,
			t.CPU, t.CswchPerSec, t.NvcswchPerSec, migrations(t.Migrations), command)
	}
	for _, group := range r.byProcess() {
		p := processRow(group)
		row(strconv.Itoa(p.PID), "-", p, p.Name)
		for _, t := range group {
			row("-", strconv.Itoa(t.TID), t, "|__"+t.Name)
		}
	}
	roles := make([]string, len(r.Processes))
	for i, p := range r.Processes {
		roles[i] = fmt.Sprintf("%s (pid %d)", p.Name, p.PID)
	}
	fmt.Fprintf(w, "\n# spindle: %.1fs window ending at Time, %d samples every %v, from /proc; processes: %s\n",
		r.Window.Seconds(), r.Samples, r.Interval, strings.Join(roles, ", "))
	if r.MigrationsNA != "" {
		fmt.Fprintf(w, "# migrations: %s\n", NA(r.MigrationsNA))
	}
	return nil
}

// byProcess groups the threads by process id, in the report's order.
func (r *ThreadReport) byProcess() [][]ThreadStats {
	var groups [][]ThreadStats
	for i, t := range r.Threads {
		if i == 0 || t.PID != r.Threads[i-1].PID {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], t)
	}
	return groups
}

// processRow sums a process's threads into pidstat's process line: the
// leader thread's name and CPU, the other figures added up.
func processRow(threads []ThreadStats) ThreadStats {
	p := ThreadStats{PID: threads[0].PID, UID: threads[0].UID, Name: threads[0].Name, CPU: threads[0].CPU}
	for _, t := range threads {
		if t.TID == t.PID {
			p.Name, p.CPU = t.Name, t.CPU
		}
		p.UsrPct += t.UsrPct
		p.SysPct += t.SysPct
		p.GuestPct += t.GuestPct
		p.WaitPct += t.WaitPct
		p.CswchPerSec += t.CswchPerSec
		p.NvcswchPerSec += t.NvcswchPerSec
		p.Migrations += t.Migrations
	}
	return p
}

// ThreadsSchemaVersion is the schema_version of threads.json: raised when
// a field is removed or changes meaning (readers ignore new fields).
const ThreadsSchemaVersion = 1

// WriteJSON writes the report as indented JSON, with its schema_version.
func (r *ThreadReport) WriteJSON(w io.Writer) error {
	c := *r
	c.SchemaVersion = ThreadsSchemaVersion
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(&c)
}
