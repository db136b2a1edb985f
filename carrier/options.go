package carrier

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
)

// Defaults for Options; the spindle command reuses them as flag defaults.
const (
	// DefaultDrainBudget bounds one drain pass so that timers, and I/O
	// once a round is over, are looked at least every 50µs while tasks
	// are runnable (the scheduler study's value).
	DefaultDrainBudget = 50 * time.Microsecond
	// DefaultBacklogPollGap is how many drain budgets a carrier with a
	// backlog runs tasks between two polls of I/O (see
	// Options.BacklogPollGap).
	DefaultBacklogPollGap = 4
	// DefaultWait is the idle strategy: block in the poller's wait.
	DefaultWait = "block"
	// DefaultOpBudget is how many I/O operations a task may complete in a
	// row without blocking before it is made to yield: enough for a request
	// and its backend round trip, few enough that one busy connection
	// cannot hold its carrier for long.
	DefaultOpBudget = 64
	// DefaultPinnedThreshold is how long a task may run without parking or
	// yielding before the watchdog counts it as holding its carrier: 20 ms,
	// the threshold of the JDK's jdk.VirtualThreadPinned event.
	DefaultPinnedThreshold = 20 * time.Millisecond
	// DefaultSlice is a carrier thread's time slice (Options.Slice): shorter
	// than the kernel's default for the other threads (0.75-3 ms by the
	// number of CPUs), so that a carrier woken by I/O preempts them, and long
	// enough that a carrier's run rarely spends it, after which any thread
	// that wakes on its CPU, batched or not, ends the carrier's turn. With
	// 100µs (the kernel's shortest, the default until the twentieth session)
	// a fifth to a third of the GC cycles at 10,000 req/s had a 0.5-1 ms
	// sweep termination: the carrier, waking the spare P's thread as it
	// restarted the world, lost its CPU to it at once; with 700µs almost
	// none had (docs/PERFORMANCE.md, "Twentieth session").
	DefaultSlice = 700 * time.Microsecond
	// DefaultHandoffThreshold is the hand-off threshold
	// (Options.HandoffThreshold 0): a millisecond, twenty drain budgets, long
	// against a request's run here (tens of µs), short against the stall a
	// Go-way block would otherwise impose on every task of the carrier. The
	// monitor looks at a run as it crosses the threshold, so a carrier
	// stalls about 1.1 ms (BenchmarkHandoffLatency).
	DefaultHandoffThreshold = time.Millisecond
	// DefaultBacklog is the listen backlog when ListenOptions.Backlog is 0
	// (the kernel caps it at net.core.somaxconn).
	DefaultBacklog = 4096
	// DefaultFloatSettle is how often a floating carrier may hand tasks
	// over at most, and how long a task that moved stays before it may move
	// again: long enough that two carriers taking turns at being idle do not
	// bounce tasks and their conns (docs/PERFORMANCE.md, "Floating mode":
	// 1ms let the HTTP server hand over 10,000 tasks a second, 10ms 2,700),
	// short against the imbalances worth fixing.
	DefaultFloatSettle = 10 * time.Millisecond
	// DefaultWriteBuffer bounds the bytes a conn's Write may leave unsent
	// with the io_uring poller (write-behind, docs/carrier.md "Pollers"):
	// 64 KiB holds any response of the servers in this project many times
	// over, and is what a socket's send buffer starts with on Linux
	// (tcp_wmem's default), so a Write parks about when a write(2) would.
	DefaultWriteBuffer = 64 << 10
	// DefaultCloseFlush bounds how long Close waits, with the io_uring
	// poller, for the bytes Write accepted to be sent: long against a
	// loopback or LAN peer that reads, short enough that a peer that stopped
	// reading does not hold a task and a file descriptor for long.
	DefaultCloseFlush = time.Second
	// AcceptBackoff is how long an acceptor sleeps after accept failed for
	// lack of file descriptors (EMFILE, ENFILE), instead of spinning on a
	// listener that stays readable.
	AcceptBackoff = 10 * time.Millisecond
)

// Pinning says how carrier threads are bound to CPUs.
type Pinning int

// The pinning modes.
const (
	PinOff     Pinning = iota // carriers may run on any CPU of the set
	PinCPU                    // carrier i on the i-th CPU of the set
	PinSkipSMT                // carrier i on the first CPU of the i-th core (one CPU per core)
)

var pinningNames = [...]string{PinOff: "off", PinCPU: "cpu", PinSkipSMT: "nosmt"}

// String returns the flag value of p.
func (p Pinning) String() string { return nameOf(pinningNames[:], int(p), "Pinning") }

// ParsePinning parses a pinning flag value: off, cpu or nosmt.
func ParsePinning(s string) (Pinning, error) {
	i, err := parseName(pinningNames[:], s, "pinning")
	return Pinning(i), err
}

// Scope is how far an idle carrier looks for work to steal.
type Scope int

// The stealing scopes.
const (
	ScopeGlobal  Scope = iota // any other carrier
	ScopeCluster              // carriers on CPUs that share the thief's L3 cache
)

var scopeNames = [...]string{ScopeGlobal: "global", ScopeCluster: "cluster"}

// String returns the flag value of s.
func (s Scope) String() string { return nameOf(scopeNames[:], int(s), "Scope") }

// ParseScope parses a stealing-scope flag value: global or cluster.
func ParseScope(s string) (Scope, error) {
	i, err := parseName(scopeNames[:], s, "steal scope")
	return Scope(i), err
}

// nameOf returns names[i], or type(i) for a value without a name.
func nameOf(names []string, i int, typ string) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("%s(%d)", typ, i)
}

// parseName returns the index of s in names.
func parseName(names []string, s, what string) (int, error) {
	for i, n := range names {
		if s == n {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (want one of %s)", what, s, strings.Join(names, ", "))
}

// Options configure a Group of carriers. The zero value is valid: one
// carrier per allowed CPU, unpinned, blocking when idle, no stealing.
type Options struct {
	// Carriers is the number of carriers; 0: one per CPU of the set (minus
	// the reserved one with NPlusOne).
	Carriers int
	// CPUs are the CPUs carriers are placed on; empty: the CPUs the process
	// may run on (cpu.ProcessAllowed), whichever thread calls New.
	CPUs cpu.Set
	// DrainBudget is the longest time (ns resolution) one drain pass runs
	// tasks before the carrier polls I/O again; a pass always runs at least
	// one task. 0: DefaultDrainBudget.
	DrainBudget time.Duration
	// BacklogPollGap is how many drain budgets a carrier with a backlog
	// (a round of queued tasks longer than one pass) runs tasks between
	// two polls of I/O; without one it polls before every pass. A task a
	// poll wakes joins the queue behind the round in progress, so polling
	// before every pass of a long round costs a system call per pass
	// (about one per request in a saturated server) and runs nothing
	// sooner but the one task the poll puts in the LIFO slot. 1 polls
	// before every pass, as the scheduler study's loop does. 0:
	// DefaultBacklogPollGap.
	BacklogPollGap int
	// Wait names the idle strategy (one of wait.Names) passed to wait.New;
	// "": DefaultWait.
	Wait string
	// WaitOptions tune the idle strategy (its poll interval, the adaptive
	// policy's B and trust, the park length...); the zero value selects
	// every default. Each carrier builds its own strategy from them.
	WaitOptions wait.Options
	// Steal lets an idle carrier take unstarted work from a sibling (and,
	// with Float, started tasks that are runnable).
	Steal bool
	// StealScope limits where a thief looks: every carrier or its L3 cluster.
	StealScope Scope
	// Pin binds carrier threads to CPUs.
	Pin Pinning
	// Slice is the time slice each carrier's thread asks the kernel's fair
	// scheduler for (sched_setattr's sched_runtime; the kernel clamps it to
	// 100µs-100ms). From Linux 6.12 (EEVDF's PREEMPT_SHORT) a thread that
	// wakes with a shorter slice than the thread running on its CPU
	// preempts it at once: a carrier woken by I/O takes its CPU back from
	// the process's other threads there (the GC's workers and goroutines on
	// the spare P, which share the carriers' CPUs unless NPlusOne) without
	// waiting out their slice, 0.7-3 ms by the number of CPUs. A short slice also means the
	// carrier gives way sooner while it computes and they wait. Earlier
	// kernels ignore it (Telemetry.SliceNs reports 0 there; spindle probe
	// says which kind this is). Best effort: a kernel or sandbox that
	// refuses it leaves the thread as it was. 0: DefaultSlice; negative:
	// the thread's slice is left as it is (the kernel's default, unless
	// someone set another). A floating carrier has no thread of its own:
	// Float refuses a Slice above 0 and ignores the default.
	Slice time.Duration
	// NoBatch leaves the process's other threads under the policy they
	// have. By default, a group whose carriers block in their pollers on
	// threads of their own (not Float, ParkIdle or NPlusOne) puts every
	// other thread of the process (the Go runtime's: the GC's workers,
	// goroutines, sysmon) under SCHED_BATCH while it runs, and its
	// carriers' threads under SCHED_NORMAL (batch.go). The kernel weighs
	// them alike, but a SCHED_BATCH thread that wakes does not preempt the
	// one running on its CPU: the GC's worker that the runtime wakes for
	// the spare P at the start of each cycle no longer takes the carrier's
	// CPU until the carrier sleeps (on a one-CPU server, the GC's
	// stop-the-world went from 0.46 to 0.05 ms median; docs/PERFORMANCE.md,
	// "Nineteenth session"). Goroutines then run where a CPU is idle, when
	// the carriers sleep, or at the scheduler's next tick. The last group
	// to close puts the threads it batched back under SCHED_NORMAL.
	NoBatch bool
	// NPlusOne reserves the first CPU of the set (with PinSkipSMT, the first
	// core) for everything that is not a carrier (GC workers, sysmon,
	// offloaded goroutines): carriers run on the others and the process's
	// other threads are moved onto it.
	NPlusOne bool
	// ParkIdle makes an idle carrier park its goroutine in Go's netpoller
	// (on its poller's fd) when its wait strategy blocks, instead of
	// blocking its thread in the poller's system call, and New then raises
	// GOMAXPROCS only to the number of carriers (one more with NPlusOne),
	// not one more than that: the carrier's P serves goroutines and the
	// GC while the carrier waits, where otherwise a spare P lets them take
	// the carrier's CPU in the middle of a burst (park.go; on a one-CPU
	// server that halved the p99 at a fixed rate, docs/PERFORMANCE.md).
	// The cost: while every carrier is busy, a goroutine (an offloaded
	// handler, a handed-off task that computes, a driver's own goroutine)
	// waits for a carrier to go idle, or for the runtime to preempt one
	// (10 ms); use it where carriers idle often, or with NPlusOne.
	// Strategies that never block (busy) never park. A bound carrier
	// parks with its goroutine unlocked (a locked one would cost a
	// hand-off of the P between two threads at every wake-up) and follows
	// it to the thread it wakes on; with NPlusOne it parks locked.
	// spindle serve parks by default in nethttp-carrier mode.
	ParkIdle bool
	// Float runs carriers on goroutines that are not locked to OS threads
	// ("floating" mode). The Go runtime then lets one carrier resume a
	// coroutine started by another, so with Steal an idle carrier may take
	// over a busy sibling's runnable started tasks, with the conns they
	// own (see docs/carrier.md, "Floating mode"). Carrier threads are then
	// neither named nor pinned: Float refuses Pin, NPlusOne and CPUs
	// (restrict the whole process instead, with taskset).
	Float bool
	// FloatSettle bounds hand-overs in floating mode: a carrier hands tasks
	// over at most once per FloatSettle, and a moved task stays at least
	// that long; 0: DefaultFloatSettle.
	FloatSettle time.Duration
	// OpBudget is the number of I/O operations a task may complete without
	// blocking before it is made to yield; 0: DefaultOpBudget.
	OpBudget int
	// Poller names the I/O poller: PollerEpoll, PollerURing or
	// PollerURingPoll (see CheckPoller for whether io_uring can run
	// here); "": DefaultPoller.
	Poller string
	// WriteBuffer is the most bytes (B) one conn may have accepted by Write
	// and not yet sent, with PollerURing (write-behind); a Write that would
	// exceed it parks until sends drain the buffer. 0: DefaultWriteBuffer.
	WriteBuffer int
	// CloseFlush bounds how long Close waits for a conn's accepted bytes to
	// be sent, with PollerURing (an earlier write deadline ends it
	// sooner); bytes still unsent then are dropped and Close says so.
	// 0: DefaultCloseFlush.
	CloseFlush time.Duration
	// PinnedThreshold is how long one run of a task (from a resumption to
	// the next park, yield or end) may take before the watchdog counts it
	// in Telemetry.Pinned and Task.Pinned: a handler blocking the Go way
	// holds its carrier. 0: DefaultPinnedThreshold; negative: no watchdog.
	PinnedThreshold time.Duration
	// HandoffThreshold is how long one run of a task may hold its carrier
	// before the group's monitor hands the carrier (its poller, queues,
	// timers and conns) to another thread, so that a task that blocks the
	// Go way (a mutex, a channel, a WaitGroup, time.Sleep, database/sql) or
	// computes for long delays only itself: the task goes on where it is
	// and rejoins its carrier at its next carrier operation (handoff.go,
	// docs/carrier.md "Hand-off"); a run that computes rather than waits
	// (or was preempted) gets ten thresholds first, Go's own time slice.
	// While waits are handed off often, a run that waits gets a fifth of
	// the threshold (handoff.go, alertState).
	// 0: DefaultHandoffThreshold; negative:
	// no hand-off (a task that blocks the Go way then blocks its carrier).
	// Carriers on epoll and io_uring (RECV/SEND), floating or not, hand
	// off, on amd64 and arm64; io_uring_poll carriers do not.
	HandoffThreshold time.Duration
	// NoParkWatch turns the park watch off (handoff_park.go). The watch
	// is on wherever runs are handed off and carriers are bound to threads
	// (not Float): a run that waits the Go way for less than the hand-off
	// threshold (a driver's round trip on its own conns, a pool's
	// semaphore, an errgroup) gives its carrier up as the wait begins,
	// where it held it for the whole wait otherwise (pgxpool on one
	// carrier: 0.28x net/http's req/s without the watch, 1.11x with it).
	// Where every CPU the process may use is a carrier's, it watches only
	// the runs of a task two of whose last eight runs waited the Go way
	// (counted by the runtime, two loads per run), so a service whose
	// handlers do not wait pays nothing for it; one whose handlers wait
	// pays a goroutine wake-up per watched run. Where a CPU is spare, long
	// runs arm it too and its wake-ups run there.
	NoParkWatch bool
	// OnHandoff, if set, is called for every hand-off, on the group's
	// (fresh) monitor goroutine once the carrier has gone on without the run: it
	// must return soon (Handoff.Stack stops the world for a moment). nil:
	// each hand-off is logged with the standard logger, with the task's
	// note and its goroutine's stack, at most one a second per group.
	OnHandoff func(Handoff)
	// SysRoot is where sysfs is mounted, for reading the topology (SMT
	// siblings for PinSkipSMT, L3 clusters for ScopeCluster); "" means
	// cpu.DefaultSysRoot (/sys). Tests point it at a fixture.
	SysRoot string
}

// Check refuses combinations of options that cannot work (New calls it).
func (o Options) Check() error {
	if !knownPoller(o.Poller) {
		return CheckPoller(o.Poller)
	}
	if err := CheckSlice(o.Slice); err != nil {
		return err
	}
	if !o.Float {
		return nil
	}
	if o.Slice > 0 {
		return &ConflictError{Option: "Float", With: []Setting{{"Slice", o.Slice.String()}},
			Why: "floating carriers have no threads of their own", Fix: "leave it at 0 (none with Float)"}
	}
	var bound []Setting
	if o.Pin != PinOff {
		bound = append(bound, Setting{"Pin", o.Pin.String()})
	}
	if o.NPlusOne {
		bound = append(bound, Setting{"NPlusOne", ""})
	}
	if len(o.CPUs) > 0 {
		bound = append(bound, Setting{"CPUs", o.CPUs.String()})
	}
	if len(bound) > 0 {
		return &ConflictError{Option: "Float", With: bound,
			Why: "floating carriers are not bound to threads", Fix: "restrict the whole process with taskset instead"}
	}
	return nil
}

// ConflictError is Check's error for options that exclude each other:
// Option (Float) excludes each of With. A command maps the fields to its
// flags; the message names them as Options does ("Float excludes Pin
// cpu, NPlusOne").
type ConflictError struct {
	Option string
	With   []Setting
	// Why the options cannot go together, and what to do instead.
	Why, Fix string
}

// Setting is a field of Options and its value as a ConflictError names
// it; "" for a switch that is on.
type Setting struct{ Field, Value string }

func (e *ConflictError) Error() string {
	with := make([]string, len(e.With))
	for i, s := range e.With {
		with[i] = strings.TrimSpace(s.Field + " " + s.Value)
	}
	return fmt.Sprintf("%s, so %s excludes %s: %s", e.Why, e.Option, strings.Join(with, ", "), e.Fix)
}

// MinSlice and MaxSlice bound Options.Slice above 0: the range the kernel
// grants (CheckSlice).
const (
	MinSlice = time.Duration(unix.MinSlice)
	MaxSlice = time.Duration(unix.MaxSlice)
)

// CheckSlice refuses a slice above 0 outside the range the kernel grants,
// 100µs to 100ms (Options.Slice; 0 and below stand for defaults).
func CheckSlice(d time.Duration) error {
	if d > 0 && (d < MinSlice || d > MaxSlice) {
		return fmt.Errorf("slice %v is outside %v-%v", d, MinSlice, MaxSlice)
	}
	return nil
}

// ProbeBatch says whether the batching of the process's other threads
// (Options.NoBatch) can work here: on a thread of its own it asks for
// SCHED_BATCH and reads the policy back. An error names what refused it
// (a sandbox's seccomp filter, say), where carriers would leave the other
// threads as they are. It works without privileges.
func ProbeBatch() (err error) {
	onThrowawayThread(func() {
		if _, err = unix.SetBatch(0, true); err != nil {
			return
		}
		var on bool
		if on, err = unix.Batch(0); err == nil && !on {
			err = errors.New("the kernel accepted SCHED_BATCH but the thread is not under it")
		}
	})
	return err
}

// ProbeSlice says what Options.Slice gets on this kernel: on a thread of
// its own it asks for the kernel's default slice and then for
// DefaultSlice, and reads what it got each time. Both are 0 where the
// kernel keeps no slice per thread (before Linux 6.12), which then ignores
// Options.Slice. It works without privileges.
func ProbeSlice() (def, granted time.Duration, err error) {
	onThrowawayThread(func() {
		read := func(ns uint64) (time.Duration, error) {
			if err := unix.SetSlice(0, ns); err != nil {
				return 0, err
			}
			got, err := unix.Slice(0)
			return time.Duration(got), err
		}
		if def, err = read(0); err == nil { // whatever the thread had before
			granted, err = read(uint64(DefaultSlice))
		}
	})
	return def, granted, err
}

// onThrowawayThread runs probe on a thread of its own and waits for it:
// the goroutine stays locked to its thread, so the thread ends with it and
// takes along what probe changed of its scheduling.
func onThrowawayThread(probe func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked
		probe()
	}()
	<-done
}

func (o Options) withDefaults() Options {
	if o.DrainBudget <= 0 {
		o.DrainBudget = DefaultDrainBudget
	}
	if o.BacklogPollGap <= 0 {
		o.BacklogPollGap = DefaultBacklogPollGap
	}
	if o.Wait == "" {
		o.Wait = DefaultWait
	}
	if o.OpBudget <= 0 {
		o.OpBudget = DefaultOpBudget
	}
	if o.FloatSettle <= 0 {
		o.FloatSettle = DefaultFloatSettle
	}
	if o.WriteBuffer <= 0 {
		o.WriteBuffer = DefaultWriteBuffer
	}
	if o.CloseFlush <= 0 {
		o.CloseFlush = DefaultCloseFlush
	}
	if o.PinnedThreshold == 0 {
		o.PinnedThreshold = DefaultPinnedThreshold
	}
	if o.Slice == 0 && !o.Float {
		o.Slice = DefaultSlice
	}
	if o.HandoffThreshold == 0 {
		o.HandoffThreshold = DefaultHandoffThreshold
	}
	if o.SysRoot == "" {
		o.SysRoot = cpu.DefaultSysRoot
	}
	if o.Poller == "" {
		o.Poller = defaultPoller
	}
	o.ParkIdle = o.ParkIdle || parkAll
	return o
}

// parkAll makes every group park its idle carriers (ParkIdle), while the
// package's tests run their suite so (TestMain).
var parkAll bool
