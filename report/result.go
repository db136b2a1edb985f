// Package report reads benchmark result directories (written by package
// bench) and turns them into report.md and findings.json: tables of
// throughput, latency, CPU and context switches per configuration; the
// scheduler study's findings marked confirmed, refuted, inconclusive (the
// rounds do not support the difference; see decide) or not measurable
// here, weak where a difference is under its run-to-run spread, with a
// verdict per part and the figures; runs that fail a check (Check) listed
// and left out; a sweep's latency–load curves and capacity at a latency
// objective (Curves); and PNG plots (gonum.org/v1/plot) of latency
// percentile distributions on the HdrHistogram log axis, latency against
// load, max throughput, CPUs utilized and context switches.
//
// summary.json (type Summary) is the contract between the two packages: it
// holds every figure a report needs, so a report is rebuilt from result
// directories alone.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/observe"
)

// SummaryFile is the name of the summary in a result directory.
const SummaryFile = "summary.json"

// Unfinished is the Reason of the summary.json a run writes before it
// starts anything, replaced when the run ends: a directory that still
// says it is one whose run was killed (or is still going).
const Unfinished = "unfinished: the run never recorded its end (the bench process was killed, or is still running)"

// Summary is summary.json: one run of one configuration.
type Summary struct {
	// Complete is false when the run failed or was interrupted; Reason
	// says why. Reports list incomplete runs and leave them out of figures.
	Complete bool   `json:"complete"`
	Reason   string `json:"reason,omitempty"`
	// Name is the configuration's name ("carrier+pinning"); Phase is
	// "max" (closed loop) or "fixed" (a fixed rate); Round counts from 1
	// in a comparison and is 0 for a single "spindle bench".
	Name  string `json:"name"`
	Phase string `json:"phase,omitempty"`
	Round int    `json:"round,omitempty"`
	// Mode, Threads, ServerCPUs, LoadCPUs, Rate are copied from
	// config.json.
	Mode       string `json:"mode"`
	Threads    int    `json:"threads"`
	ServerCPUs string `json:"server_cpuset"`
	LoadCPUs   string `json:"load_cpuset,omitempty"`
	// App is the application the server served: "" or "fruits" for the
	// scheduler study's /fruits through the mock, "tfb" for TechEmpower's
	// test types on PostgreSQL (server.App; copied from config.json).
	// The study's findings are checked on the study's app only.
	App string `json:"app,omitempty"`
	// Hosts says where each role ran when any ran on another host
	// ("server h1, mock h1, load h2,h3"); absent when all ran here.
	Hosts string `json:"hosts,omitempty"`
	// Rate is the fixed rate asked for, req/s; 0 means max throughput.
	Rate int `json:"rate"`
	// Started and Finished bound the whole run.
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Window is the load generator's measured window; ObserveWindow is the
	// observers' sub-window inside it (nanoseconds in JSON).
	Window        time.Duration `json:"window_ns"`
	ObserveWindow time.Duration `json:"observe_window_ns"`
	// Throughput is completed requests per second in the window.
	Throughput float64 `json:"throughput"`
	// Requests and Errors are counts in the window.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// Latency is the coordinated-omission-corrected distribution (at max
	// throughput it equals Uncorrected); nil when the load did not finish.
	Latency     *latency.Summary `json:"latency,omitempty"`
	Uncorrected *latency.Summary `json:"uncorrected,omitempty"`
	// SendLag is the load generator's lateness at a fixed rate
	// (load.Result.SendLag): how late it began the requests it could
	// send on time; nil closed loop or from an older load.json.
	SendLag *latency.Summary `json:"send_lag,omitempty"`
	// OtherCPUs is the CPU time, in CPUs, the machine spent on anything
	// but the run's processes in the observers' window (other tenants,
	// the kernel, steal): a noise gauge. Absent when unknown.
	OtherCPUs *float64 `json:"other_cpus,omitempty"`
	// BackendBusy is the share of time, 0 to 1, the backend's CPUs (the
	// mock's, or the tfb app's database's) ran anything in the observers'
	// window, from /proc/stat: near 1 the backend, not the server, may be
	// what limits and what stalls (Stalls). Absent when unknown (a backend
	// on another host, or an older summary.json).
	BackendBusy *float64 `json:"backend_busy,omitempty"`
	// HostSteal is the time the load generator's host lost to its
	// hypervisor in the window, read every 100 ms (load.Result.HostSteal;
	// with several load hosts, the worst one's); nil from an older
	// load.json.
	HostSteal *load.HostSteal `json:"host_steal,omitempty"`
	// Perf is the perf stat summary of the server process; nil with the
	// reason in NA["perf-stat"] when it could not be had.
	Perf *observe.PerfSummary `json:"perf,omitempty"`
	// Server summarizes the server's threads from /proc; nil with the
	// reason in NA["threads"] when not sampled.
	Server *ThreadFigures `json:"server,omitempty"`
	// Load summarizes the load generator's threads the same way, for the
	// check that it was not itself the bottleneck (see Check); nil when
	// not sampled.
	Load *ThreadFigures `json:"load,omitempty"`
	// Carrier sums the carriers' telemetry over the observers' window; nil
	// for nethttp or with the reason in NA["carrier"].
	Carrier *CarrierFigures `json:"carrier,omitempty"`
	// Runtime is the Go runtime's view of the server over the observers'
	// window (its /debug/runtime; RuntimeFiguresOf); nil with the reason
	// in NA["runtime"], and absent from results written before it existed.
	Runtime *RuntimeFigures `json:"runtime,omitempty"`
	// Profile is the top of the server's CPU profile over the measured
	// window (bench --profile cpu; TopFunctions); absent without one, with
	// the reason in NA["profile"] when it was asked for.
	Profile []ProfileFunc `json:"profile,omitempty"`
	// Mix has each request target's figures when the load sent a mix
	// (load --mix), in the mix's order; absent without one.
	Mix []MixFigures `json:"mix,omitempty"`
	// NA maps an observer or file ("perf-stat", "perf-sched", "threads",
	// "carrier", "runtime", "profile") to why it has no figures: "perf not installed".
	NA map[string]string `json:"na,omitempty"`
}

// MixFigures are one request target's part of a run with a mix
// (load.MixResult): its weight, completed requests, those sent late
// because their connection still waited for an earlier answer (Queued),
// and its corrected latency.
type MixFigures struct {
	Target    string          `json:"target"`
	Weight    int             `json:"weight"`
	Completed int64           `json:"completed"`
	Queued    int64           `json:"queued"`
	Latency   latency.Summary `json:"latency"`
}

// ThreadFigures are the server process's threads over the observers'
// window, from observe.SampleThreads.
type ThreadFigures struct {
	// Threads is every thread seen; Active those that used at least
	// ActiveThreshold of a CPU.
	Threads int `json:"threads"`
	Active  int `json:"active"`
	// WaitPct is the mean %wait of the active threads; MaxWaitPct the
	// largest.
	WaitPct    float64 `json:"wait_pct"`
	MaxWaitPct float64 `json:"max_wait_pct"`
	// CPUs is the sum of %usr and %sys over threads, in CPUs.
	CPUs float64 `json:"cpus"`
	// ContextSwitchesPerSec sums cswch/s and nvcswch/s over threads.
	ContextSwitchesPerSec float64 `json:"context_switches_per_sec"`
	// Migrations sums the threads' migrations in the window; it means
	// nothing when MigrationsNA, the reason they could not be read, is set.
	Migrations   uint64 `json:"migrations"`
	MigrationsNA string `json:"migrations_na,omitempty"`
}

// ActiveThreshold is the share of one CPU (1%) a thread must use in the
// window to count as active: below it are Go's idle runtime threads.
const ActiveThreshold = 1.0

// FromThreads summarizes the threads of process proc in a thread report.
func FromThreads(rep *observe.ThreadReport, proc string) *ThreadFigures {
	f := &ThreadFigures{MigrationsNA: rep.MigrationsNA}
	for _, t := range rep.Threads {
		if t.Process != proc {
			continue
		}
		f.Threads++
		f.CPUs += (t.UsrPct + t.SysPct) / 100
		f.ContextSwitchesPerSec += t.CswchPerSec + t.NvcswchPerSec
		f.Migrations += t.Migrations
		if t.UsrPct+t.SysPct >= ActiveThreshold || 100*float64(t.RunNS)/float64(rep.Window.Nanoseconds()) >= ActiveThreshold {
			f.Active++
			f.WaitPct += t.WaitPct
			f.MaxWaitPct = max(f.MaxWaitPct, t.WaitPct)
		}
	}
	if f.Active > 0 {
		f.WaitPct /= float64(f.Active)
	}
	return f
}

// Num is a figure that may be missing: NaN in Go, null in JSON (JSON has
// no NaN, and a missing figure must not read as 0).
type Num float64

// MarshalJSON writes NaN and infinities as null.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// UnmarshalJSON reads null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// CarrierFigures are the carriers' telemetry summed over the observers'
// window (carrier.json), in the study's terms.
type CarrierFigures struct {
	Carriers int `json:"carriers"`
	// IOCyclesPer10s is epoll_wait calls per 10 seconds, all carriers.
	IOCyclesPer10s Num `json:"io_cycles_per_10s"`
	// EventsPerCycle is I/O events per cycle.
	EventsPerCycle Num `json:"io_events_per_cycle"`
	// TasksPerDrain is task resumptions per drain pass.
	TasksPerDrain Num `json:"tasks_per_drain"`
	// QueueDepthAvg and QueueDepthP50 are the runnable tasks at drain
	// start (p50 from log2 buckets: within a factor of 2).
	QueueDepthAvg Num `json:"queue_depth_avg"`
	QueueDepthP50 Num `json:"queue_depth_p50"`
	// SubmitToRunP50Us and SubmitToRunP99Us are the delay from submitting
	// a task to its first run, µs (log2 buckets).
	SubmitToRunP50Us Num `json:"submit_to_run_p50_us"`
	SubmitToRunP99Us Num `json:"submit_to_run_p99_us"`
	// Steals is tasks taken from siblings.
	Steals uint64 `json:"steals"`
	// Migrations is the started tasks among Steals: handed over, with their
	// conns, between floating carriers (carrier.Options.Float).
	Migrations uint64 `json:"migrations,omitempty"`
	// SpunCPUs is the carriers' idle spinning (wait strategies that spin
	// before they block), in CPUs over the window: CPU time the server
	// used without work (ServerBusy subtracts it). Absent, read as 0, in
	// results written before it existed.
	SpunCPUs Num `json:"spun_cpus"`
	// HandoffsPer10s is task runs handed off per 10 seconds, all
	// carriers: runs that held their carrier past the hand-off threshold
	// (they blocked the Go way or computed), which went on without them.
	// Absent, read as NaN (n/a), in results written before it existed.
	HandoffsPer10s Num `json:"handoffs_per_10s"`
	// SliceUs is the time slice the kernel's fair scheduler gave the
	// carriers' threads, µs (carrier.Telemetry.SliceNs; the largest where
	// they differ): serve's --slice, or the kernel's default. NaN (n/a)
	// where the kernel reports none (before Linux 6.12; floating carriers,
	// which have no thread of their own) and in results written before it
	// existed.
	SliceUs Num `json:"slice_us"`
	// BatchedShare is the share of the server's other threads (those that
	// are not its carriers') under SCHED_BATCH at the window's end
	// (carrier.Telemetry.BatchedThreads over OtherThreads; serve's
	// --batch-others): below 1 where the kernel refused some. NaN (n/a)
	// where the carriers do not batch the other threads (floating,
	// parking or N+1 carriers, --batch-others=false) and in results
	// written before it existed.
	BatchedShare Num `json:"batched_share"`
	// RingEntersPer10s is io_uring_enter calls per 10 seconds, all
	// carriers; SubmissionsPerEnter the SQEs each submitted; and
	// CompletionsPerPass the CQEs reaped per pass that found any. Only
	// the io_uring pollers have them (null with epoll, and absent, read
	// as 0, in results written before they existed).
	RingEntersPer10s    Num `json:"ring_enters_per_10s"`
	SubmissionsPerEnter Num `json:"submissions_per_enter"`
	CompletionsPerPass  Num `json:"completions_per_pass"`
}

// UnmarshalJSON reads carrier figures; a figure that a result written
// before it existed lacks is NaN (n/a), not 0.
func (c *CarrierFigures) UnmarshalJSON(b []byte) error {
	type plain CarrierFigures // without this method
	p := plain{HandoffsPer10s: Num(math.NaN()), SliceUs: Num(math.NaN()), BatchedShare: Num(math.NaN())}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = CarrierFigures(p)
	return nil
}

// Result is one result directory.
type Result struct {
	Dir     string
	Summary Summary
}

// Load reads dir's summary.json.
func Load(dir string) (Result, error) {
	var s Summary
	data, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		return Result{}, fmt.Errorf("result %s: %w", dir, err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return Result{}, fmt.Errorf("result %s: %s: %w", dir, SummaryFile, err)
	}
	for _, f := range []struct {
		name    string
		missing bool
	}{{"name", s.Name == ""}, {"mode", s.Mode == ""}, {"started", s.Started.IsZero()}} {
		if f.missing {
			return Result{}, fmt.Errorf("result %s: %w %q (every summary spindle bench writes has name, mode and started)",
				filepath.Join(dir, SummaryFile), ErrIncompleteSummary, f.name)
		}
	}
	return Result{Dir: dir, Summary: s}, nil
}

// ErrIncompleteSummary is wrapped by Load's error for a summary.json that
// lacks a field every run writes (a file written by hand, or truncated to
// "{}"): a report of it would have a configuration without a name.
var ErrIncompleteSummary = errors.New("summary without the field")

// Discover returns the result directories at or under root: root itself if
// it holds a summary.json, else every directory below it that does, in
// lexical order.
func Discover(root string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(root, SummaryFile)); err == nil {
		return []string{root}, nil
	}
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == SummaryFile {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find results under %s: %w", root, err)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no %s at or under %s", SummaryFile, root)
	}
	return dirs, nil
}

// WriteJSON writes v as indented JSON to path, with a schema_version (see
// latency.MarshalJSON).
func WriteJSON(path string, v any) error {
	data, err := latency.MarshalJSON(v)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return os.WriteFile(path, data, 0o644)
}
