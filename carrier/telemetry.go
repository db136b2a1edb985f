package carrier

import (
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/spindle-lab/spindle/carrier/wait"
)

// histBuckets is the number of log2 buckets: bucket 0 holds the value 0 and
// bucket i (1..64) the values v with 2^(i-1) <= v < 2^i, so every uint64 fits.
const histBuckets = 65

// Histogram is a snapshot of a log2-bucketed histogram of non-negative
// integer samples (queue depths, nanoseconds). It is cumulative, so the
// difference of two snapshots (Sub) describes the window between them.
type Histogram struct {
	Buckets [histBuckets]uint64 `json:"buckets"` // sample counts per log2 bucket
	Sum     uint64              `json:"sum"`     // sum of all samples
}

// Count returns the number of samples.
func (h Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Buckets {
		n += c
	}
	return n
}

// Mean returns the mean sample, or NaN when there is none.
func (h Histogram) Mean() float64 {
	n := h.Count()
	if n == 0 {
		return math.NaN()
	}
	return float64(h.Sum) / float64(n)
}

// Quantile returns an estimate of the q-quantile (0 <= q <= 1), linear
// within the bucket that holds it (so within a factor of 2 of the true
// value), or NaN when there are no samples.
func (h Histogram) Quantile(q float64) float64 {
	n := h.Count()
	if n == 0 || q < 0 || q > 1 || math.IsNaN(q) {
		return math.NaN()
	}
	rank := q * float64(n)
	var seen float64
	for i, c := range h.Buckets {
		if c == 0 {
			continue
		}
		if seen+float64(c) >= rank {
			if i == 0 {
				return 0
			}
			lo := math.Ldexp(1, i-1)
			frac := (rank - seen) / float64(c)
			return lo + frac*lo // bucket i spans [lo, 2lo)
		}
		seen += float64(c)
	}
	return math.Ldexp(1, histBuckets-1)
}

// Sub returns h minus an earlier snapshot of the same histogram.
func (h Histogram) Sub(earlier Histogram) Histogram { return h.combine(earlier, minus) }

// Add returns the sum of two histograms (of several carriers, say).
func (h Histogram) Add(o Histogram) Histogram { return h.combine(o, plus) }

func (h Histogram) combine(o Histogram, op func(a, b uint64) uint64) Histogram {
	for i := range h.Buckets {
		h.Buckets[i] = op(h.Buckets[i], o.Buckets[i])
	}
	h.Sum = op(h.Sum, o.Sum)
	return h
}

func plus(a, b uint64) uint64  { return a + b }
func minus(a, b uint64) uint64 { return a - b }

// histRec records samples with a single writer (its carrier); readers load
// the words atomically. A snapshot taken during a record may see the count
// without the sum: the error is one sample.
type histRec struct {
	buckets [histBuckets]atomic.Uint64
	sum     atomic.Uint64
}

func (h *histRec) record(v uint64) {
	b := &h.buckets[bits.Len64(v)]
	b.Store(b.Load() + 1)
	h.sum.Store(h.sum.Load() + v)
}

func (h *histRec) snapshot() Histogram {
	var s Histogram
	for i := range h.buckets {
		s.Buckets[i] = h.buckets[i].Load()
	}
	s.Sum = h.sum.Load()
	return s
}

// add increments a counter that has a single writer: a plain load and an
// uncontended store, never a locked read-modify-write on the hot path.
func add(c *atomic.Uint64, d uint64) { c.Store(c.Load() + d) }

// stats is a carrier's telemetry. Its carrier is the only writer of every
// field except stealsOut, which thieves increment on the (cold) steal path
// (and a floating carrier when it hands tasks over), and sendfileBytes,
// which a foreign caller's ReadFrom adds to as well.
type stats struct {
	ioCycles, ioEvents atomic.Uint64
	drains, tasksRun   atomic.Uint64
	queueDepth         histRec
	submitToRun        histRec
	stealsIn           atomic.Uint64
	stealsOut          atomic.Uint64
	migrationsIn       atomic.Uint64
	waits              [wait.NumKinds]atomic.Uint64
	spunNs, blockedNs  atomic.Uint64
	panics             atomic.Uint64
	pinned             atomic.Uint64
	acceptBackoffs     atomic.Uint64
	openConns          atomic.Int64
	tasksLive          atomic.Int64
	corosTrimmed       atomic.Uint64
	watches            atomic.Uint64
	watchesArmed       atomic.Uint64
	// Hand-off (handoff.go): handoffs is written by the group's monitor
	// alone; the others by the carrier's owner.
	handoffs    atomic.Uint64
	parkYields  atomic.Uint64
	parkWatched atomic.Uint64
	rejoins     atomic.Uint64
	detached    atomic.Int64
	detachedFor histRec
	threadMoves atomic.Uint64
	surges      atomic.Uint64
	// Conns (foreign.go), written by the carrier's owner.
	goConnsDropped atomic.Uint64
	// Bytes Conn.ReadFrom sent with sendfile(2) (sendfile.go), added
	// atomically by whoever calls it.
	sendfileBytes atomic.Uint64
	// The time slice of the carrier's thread (Options.Slice).
	sliceNs atomic.Uint64

	// io_uring poller only.
	ringEnters, ringSubmits atomic.Uint64
	ringInlineSends         atomic.Uint64
	ringPollFirst           atomic.Uint64
	ringCQEs                histRec
}

// Telemetry is one carrier's cumulative counters at one instant. The
// difference of two snapshots (Sub) describes the window between them;
// OpenConns, TasksLive and Detached are gauges and keep the later value. Fields are
// read one by one, so a snapshot taken while the carrier works may be off
// by the events of one loop turn between fields.
type Telemetry struct {
	Carrier        int               `json:"carrier"`
	CPU            int               `json:"cpu"`              // pinned CPU or -1
	SliceNs        uint64            `json:"slice_ns"`         // the time slice the kernel's fair scheduler gives the carrier's thread (Options.Slice, or the kernel's default); 0: it reports none (before Linux 6.12), or a real-time policy
	IOCycles       uint64            `json:"io_cycles"`        // polls of the poller (epoll_wait, or a look at the io_uring completion ring)
	IOEvents       uint64            `json:"io_events"`        // events those calls returned
	Drains         uint64            `json:"drains"`           // drain passes
	TasksRun       uint64            `json:"tasks_run"`        // task resumptions in those passes
	QueueDepth     Histogram         `json:"queue_depth"`      // runnable tasks at drain start
	SubmitToRun    Histogram         `json:"submit_to_run"`    // ns from a task becoming runnable (submitted, woken by I/O or a timer, resumed after Offload, yielded) to its run
	StealsIn       uint64            `json:"steals_in"`        // tasks this carrier took from others
	StealsOut      uint64            `json:"steals_out"`       // tasks others took from this carrier
	MigrationsIn   uint64            `json:"migrations_in"`    // started tasks (with their conns) this carrier took over from others, floating mode only; counted in StealsIn too
	Waits          map[string]uint64 `json:"waits"`            // idle waits by wait.Kind: none, spin, block, timer
	SpunNs         uint64            `json:"spun_ns"`          // ns spent spinning while idle
	BlockedNs      uint64            `json:"blocked_ns"`       // ns spent blocked in the poller's wait while idle
	Panics         uint64            `json:"panics"`           // tasks that panicked (recovered)
	Pinned         uint64            `json:"pinned"`           // task runs longer than Options.PinnedThreshold: code that blocked the carrier
	AcceptBackoffs uint64            `json:"accept_backoffs"`  // accepts that failed for lack of fds and backed off
	OpenConns      int64             `json:"open_connections"` // gauge: conns registered on this carrier
	TasksLive      int64             `json:"tasks_live"`       // gauge: tasks started and not finished
	CorosTrimmed   uint64            `json:"coros_trimmed"`    // idle coroutines stopped because the pool went unused for a period
	Watches        uint64            `json:"context_watches"`  // ContextWatches started on a context that can end
	WatchesArmed   uint64            `json:"watches_armed"`    // those the carrier registered with context.AfterFunc (it polls the others' Done channels)
	Handoffs       uint64            `json:"handoffs"`         // runs that held the carrier past Options.HandoffThreshold: the carrier went on on another thread (handoff.go)
	ParkWatched    uint64            `json:"park_watched"`     // runs the park watch watched: their task's last run waited the Go way or came back from a hand-off (handoff_park.go); each costs a goroutine wake-up
	ParkYields     uint64            `json:"park_yields"`      // runs handed off before the threshold because their task parked the Go way and the carrier had armed its park watch (handoff.go); not reported, not in Handoffs
	Rejoins        uint64            `json:"rejoins"`          // tasks of those runs (hand-offs and park yields) that came back to the carrier
	Detached       int64             `json:"detached"`         // gauge: tasks handed off and not back yet (blocked or computing now)
	DetachedFor    Histogram         `json:"detached_for"`     // ns from a hand-off to the task's return to its carrier
	ThreadMoves    uint64            `json:"thread_moves"`     // runs that ended on another thread than they began (a short Go-way block): the carrier moved there
	Surges         uint64            `json:"surges"`           // hand-offs of computing runs that gave parking carriers a spare P (handoff.go, surgeState)
	GoConnsDropped uint64            `json:"go_conns_dropped"` // Go conns of foreign callers closed because only the carrier's tasks used their conn for a while (foreign.go): out of Go's netpoller
	SendfileBytes  uint64            `json:"sendfile_bytes"`   // bytes Conn.ReadFrom sent from files with sendfile(2) on the carrier's conns, by its tasks or any other caller (sendfile.go)
	OtherThreads   int               `json:"other_threads"`    // gauge, the process's: its threads that are no batching group's carriers', counted as the snapshot was taken; -1 when this carrier's group does not batch them (Options.NoBatch)
	BatchedThreads int               `json:"batched_threads"`  // gauge, the process's: those of OtherThreads under SCHED_BATCH (fewer where the kernel refused; -1 as OtherThreads)

	// io_uring poller only (zero with epoll).
	RingEnters      uint64    `json:"ring_enters,omitempty"`       // io_uring_enter calls
	RingSubmissions uint64    `json:"ring_submissions,omitempty"`  // SQEs those calls submitted
	RingCompletions Histogram `json:"ring_completions"`            // CQEs reaped per pass that found any
	RingInlineSends uint64    `json:"ring_inline_sends,omitempty"` // write-behind SENDs that sent everything inside their enter, without a completion
	RingPollFirst   uint64    `json:"ring_poll_first,omitempty"`   // RECVs submitted with POLL_FIRST: the conn's last read had drained the socket
}

// SubmissionsPerEnter returns RingSubmissions/RingEnters, or NaN without
// io_uring_enter calls.
func (t Telemetry) SubmissionsPerEnter() float64 {
	if t.RingEnters == 0 {
		return math.NaN()
	}
	return float64(t.RingSubmissions) / float64(t.RingEnters)
}

// IOEventsPerCycle returns IOEvents/IOCycles, or NaN with no cycles.
func (t Telemetry) IOEventsPerCycle() float64 {
	if t.IOCycles == 0 {
		return math.NaN()
	}
	return float64(t.IOEvents) / float64(t.IOCycles)
}

// TasksPerDrain returns TasksRun/Drains, or NaN with no drains.
func (t Telemetry) TasksPerDrain() float64 {
	if t.Drains == 0 {
		return math.NaN()
	}
	return float64(t.TasksRun) / float64(t.Drains)
}

// Sub returns t minus an earlier snapshot of the same carrier: the counts
// of the window between them. Gauges keep t's values.
func (t Telemetry) Sub(earlier Telemetry) Telemetry { return t.combine(earlier, minus) }

// Add returns the counters of t and o together (several carriers' windows
// summed into one group figure). Gauges are summed too; Carrier and CPU
// keep t's values.
func (t Telemetry) Add(o Telemetry) Telemetry {
	d := t.combine(o, plus)
	d.OpenConns += o.OpenConns
	d.TasksLive += o.TasksLive
	d.Detached += o.Detached
	return d
}

// combine applies op to every counter of t and o; every counter added to
// Telemetry belongs here, so that Sub and Add can never disagree.
func (t Telemetry) combine(o Telemetry, op func(a, b uint64) uint64) Telemetry {
	d := t
	d.IOCycles = op(t.IOCycles, o.IOCycles)
	d.IOEvents = op(t.IOEvents, o.IOEvents)
	d.Drains = op(t.Drains, o.Drains)
	d.TasksRun = op(t.TasksRun, o.TasksRun)
	d.QueueDepth = t.QueueDepth.combine(o.QueueDepth, op)
	d.SubmitToRun = t.SubmitToRun.combine(o.SubmitToRun, op)
	d.StealsIn = op(t.StealsIn, o.StealsIn)
	d.StealsOut = op(t.StealsOut, o.StealsOut)
	d.MigrationsIn = op(t.MigrationsIn, o.MigrationsIn)
	d.Waits = make(map[string]uint64, max(len(t.Waits), len(o.Waits)))
	for k, v := range t.Waits {
		d.Waits[k] = op(v, o.Waits[k])
	}
	for k, v := range o.Waits {
		if _, ok := t.Waits[k]; !ok {
			d.Waits[k] = op(0, v)
		}
	}
	d.SpunNs = op(t.SpunNs, o.SpunNs)
	d.BlockedNs = op(t.BlockedNs, o.BlockedNs)
	d.Panics = op(t.Panics, o.Panics)
	d.Pinned = op(t.Pinned, o.Pinned)
	d.AcceptBackoffs = op(t.AcceptBackoffs, o.AcceptBackoffs)
	d.CorosTrimmed = op(t.CorosTrimmed, o.CorosTrimmed)
	d.Watches = op(t.Watches, o.Watches)
	d.WatchesArmed = op(t.WatchesArmed, o.WatchesArmed)
	d.Handoffs = op(t.Handoffs, o.Handoffs)
	d.ParkWatched = op(t.ParkWatched, o.ParkWatched)
	d.ParkYields = op(t.ParkYields, o.ParkYields)
	d.Rejoins = op(t.Rejoins, o.Rejoins)
	d.DetachedFor = t.DetachedFor.combine(o.DetachedFor, op)
	d.ThreadMoves = op(t.ThreadMoves, o.ThreadMoves)
	d.Surges = op(t.Surges, o.Surges)
	d.GoConnsDropped = op(t.GoConnsDropped, o.GoConnsDropped)
	d.SendfileBytes = op(t.SendfileBytes, o.SendfileBytes)
	d.RingEnters = op(t.RingEnters, o.RingEnters)
	d.RingSubmissions = op(t.RingSubmissions, o.RingSubmissions)
	d.RingCompletions = t.RingCompletions.combine(o.RingCompletions, op)
	d.RingInlineSends = op(t.RingInlineSends, o.RingInlineSends)
	d.RingPollFirst = op(t.RingPollFirst, o.RingPollFirst)
	return d
}

// GaveUp is how many of the carrier's runs gave their carrier up: taken by
// the monitor past the threshold (Handoffs) or by the park watch as they
// began to wait (ParkYields). Both make a new owner of the carrier, and
// each such task comes back (Rejoins) once its wait ends.
func (t Telemetry) GaveUp() uint64 { return t.Handoffs + t.ParkYields }

func (s *stats) snapshot(id, cpu int) Telemetry {
	t := Telemetry{
		Carrier:        id,
		CPU:            cpu,
		SliceNs:        s.sliceNs.Load(),
		IOCycles:       s.ioCycles.Load(),
		IOEvents:       s.ioEvents.Load(),
		Drains:         s.drains.Load(),
		TasksRun:       s.tasksRun.Load(),
		QueueDepth:     s.queueDepth.snapshot(),
		SubmitToRun:    s.submitToRun.snapshot(),
		StealsIn:       s.stealsIn.Load(),
		StealsOut:      s.stealsOut.Load(),
		MigrationsIn:   s.migrationsIn.Load(),
		Waits:          make(map[string]uint64, wait.NumKinds),
		SpunNs:         s.spunNs.Load(),
		BlockedNs:      s.blockedNs.Load(),
		Panics:         s.panics.Load(),
		Pinned:         s.pinned.Load(),
		AcceptBackoffs: s.acceptBackoffs.Load(),
		OpenConns:      s.openConns.Load(),
		TasksLive:      s.tasksLive.Load(),
		CorosTrimmed:   s.corosTrimmed.Load(),
		Watches:        s.watches.Load(),
		WatchesArmed:   s.watchesArmed.Load(),
		Handoffs:       s.handoffs.Load(),
		ParkWatched:    s.parkWatched.Load(),
		ParkYields:     s.parkYields.Load(),
		Rejoins:        s.rejoins.Load(),
		Detached:       s.detached.Load(),
		DetachedFor:    s.detachedFor.snapshot(),
		ThreadMoves:    s.threadMoves.Load(),
		Surges:         s.surges.Load(),
		GoConnsDropped: s.goConnsDropped.Load(),
		SendfileBytes:  s.sendfileBytes.Load(),

		RingEnters:      s.ringEnters.Load(),
		RingSubmissions: s.ringSubmits.Load(),
		RingCompletions: s.ringCQEs.snapshot(),
		RingInlineSends: s.ringInlineSends.Load(),
		RingPollFirst:   s.ringPollFirst.Load(),
	}
	for k := range s.waits {
		t.Waits[wait.Kind(k).String()] = s.waits[k].Load()
	}
	return t
}

// gauge adjusts a single-writer gauge.
func gauge(g *atomic.Int64, d int64) { g.Store(g.Load() + d) }
