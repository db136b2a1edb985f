package server

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/rtmetrics"
)

// metrics are the server's Prometheus metrics, in a registry of its own so
// that several servers can run in one process.
type metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	byStatus    [600]prometheus.Counter // pre-resolved children for the statuses the server writes, by code (nil for the others): an index, not a map's hash, on every answer
	backendErrs *prometheus.CounterVec
	// duration holds the request-duration histogram's children by status
	// class (index code/100; 0 and 1 unused: the handlers answer 2xx-5xx).
	duration [6]prometheus.Observer
	durVec   *prometheus.HistogramVec
	mode     string
	// perCarrier replaces durVec in the carrier-hosted modes
	// (usePerCarrier).
	perCarrier *carrierDurations
	openConns  atomic.Int64
	// rejectedConns counts connections closed at accept for MaxConns.
	rejectedConns prometheus.Counter
}

// backendErrorKinds are the kinds of spindle_server_backend_errors_total,
// all present from the start.
var backendErrorKinds = []string{"refused", "reset", "timeout", "status", "decode", "protocol"}

// durationBuckets are the request-duration histogram's classic buckets:
// 25 µs doubling to about 0.8 s (16 buckets), from the fastest loopback
// answer to far past the mock's default 1 ms think time. A scraper that asks
// for native histograms also gets one (factor 1.1: about 7% wide buckets).
var durationBuckets = prometheus.ExponentialBuckets(25e-6, 2, durationBucketCount)

const durationBucketCount = 16

// nativeFactor is the growth factor of the native histogram's buckets.
const nativeFactor = 1.1

// knownStatuses are the statuses whose request counters are resolved at
// start, so that counting them costs one atomic add.
var knownStatuses = []int{200, 400, 404, 405, 408, 413, 431, 500, 501, 502, 504, 505}

// newMetrics returns the metrics of a server in mode (a label of the
// request-duration histogram), with the Go runtime's and the process's
// collectors (go_*, process_*).
func newMetrics(mode string) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spindle_server_requests_total", Help: "Responses written, by status code.",
		}, []string{"code"}),
		backendErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spindle_server_backend_errors_total",
			Help: "Failed backend exchanges, by kind: refused, reset, timeout, status, decode, protocol.",
		}, []string{"kind"}),
		rejectedConns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spindle_server_rejected_connections_total",
			Help: "Client connections closed as soon as accepted: more than --max-conns were open.",
		}),
	}
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: durationName, Help: durationHelp,
		Buckets: durationBuckets, NativeHistogramBucketFactor: nativeFactor,
	}, []string{"mode", "class"})
	m.durVec, m.mode = duration, mode
	for _, code := range knownStatuses {
		m.byStatus[code] = m.requests.WithLabelValues(strconv.Itoa(code))
	}
	for _, kind := range backendErrorKinds {
		m.backendErrs.WithLabelValues(kind)
	}
	for class := 2; class <= 5; class++ {
		m.duration[class] = duration.WithLabelValues(mode, classLabel(class))
	}
	m.reg.MustRegister(m.requests, m.backendErrs, m.rejectedConns, duration, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "spindle_server_open_connections", Help: "Client connections open now.",
	}, func() float64 { return float64(m.openConns.Load()) }),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// The request-duration histogram's name and help.
const (
	durationName = "spindle_server_request_duration_seconds"
	durationHelp = "Time from a request parsed to its answer ready (the handler, backend exchange included), by server mode and status class."
)

// usePerCarrier makes the request-duration histogram one part per carrier
// of a group of n (carrierDurations), before the first request.
func (m *metrics) usePerCarrier(n int) {
	m.reg.Unregister(m.durVec)
	m.perCarrier = newCarrierDurations(prometheus.NewDesc(durationName, durationHelp, []string{"mode", "class"}, nil), m.mode, n)
	m.reg.MustRegister(m.perCarrier)
}

// handledIn records the duration of a request answered in task t (nil:
// outside a carrier) with status code (0: 200): on t's carrier's part of
// the histogram in the carrier-hosted modes.
func (m *metrics) handledIn(t *carrier.Task, code int, d time.Duration) {
	switch {
	case m.perCarrier == nil:
		m.handled(code, d)
	case t != nil:
		// A handler that blocked the Go way or computed for long may have
		// left its task handed off, running off its carrier's thread,
		// until its next carrier operation: Now, the cheapest, brings it
		// back, so the carrier's part is written on its thread.
		t.Now()
		m.handledOn(t.Carrier().ID(), code, d)
	default:
		m.handledOn(-1, code, d)
	}
}

// handledCtx is handledIn for a net/http handler: in nethttp-carrier mode
// the request's context carries its task, which is brought back onto its
// carrier first (nethttp has no per-carrier parts, and looks for none).
func (m *metrics) handledCtx(ctx context.Context, code int, d time.Duration) {
	var t *carrier.Task
	if m.perCarrier != nil {
		t = carrier.TaskFromContext(ctx)
	}
	m.handledIn(t, code, d)
}

// handledOn records on carrier c's part (-1: the shared one, locked).
func (m *metrics) handledOn(c, code int, d time.Duration) {
	if class, ok := statusClass(code); ok {
		if c >= 0 {
			m.perCarrier.observe(c, class, d)
		} else {
			m.perCarrier.observeShared(class, d)
		}
	}
}

// statusClass is the histogram's class of a handler's status code (0:
// 200), 2 to 5; ok is false for any other.
func statusClass(code int) (class int, ok bool) {
	if code == 0 {
		code = 200
	}
	class = code / 100
	return class, class >= 2 && class <= 5
}

// handled records the duration of a request the handler answered with
// status code (0: 200).
func (m *metrics) handled(code int, d time.Duration) {
	if class, ok := statusClass(code); ok {
		m.duration[class].Observe(d.Seconds())
	}
}

// request counts one response with status code.
func (m *metrics) request(code int) {
	if code >= 0 && code < len(m.byStatus) && m.byStatus[code] != nil {
		m.byStatus[code].Inc()
		return
	}
	m.requests.WithLabelValues(strconv.Itoa(code)).Inc()
}

func (m *metrics) backendError(kind string) { m.backendErrs.WithLabelValues(kind).Inc() }

// carrierCollector exports a group's telemetry, per carrier (label
// carrier); spindle_carrier_cpu gives the CPU of each pinned carrier, so
// that unpinned ones have no CPU at all rather than a made-up one.
type carrierCollector struct {
	g        *carrier.Group
	counters []carrierCounter
	waits    *prometheus.Desc
	gauges   []carrierGauge
	queue    *prometheus.Desc
	submit   *prometheus.Desc
	detached *prometheus.Desc
	cpu      *prometheus.Desc
	// others and batched are the process's, without a carrier label:
	// Telemetry.OtherThreads and BatchedThreads, where the group batches.
	others, batched *prometheus.Desc
}

type carrierCounter struct {
	desc *prometheus.Desc
	get  func(carrier.Telemetry) float64
}

type carrierGauge = carrierCounter

func newCarrierCollector(g *carrier.Group) *carrierCollector {
	desc := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc("spindle_carrier_"+name, help, append([]string{"carrier"}, extra...), nil)
	}
	u := func(v uint64) float64 { return float64(v) }
	return &carrierCollector{
		g: g,
		counters: []carrierCounter{
			{desc("io_cycles_total", "Polls of the I/O poller (epoll_wait, or a look at the io_uring completion ring)."), func(t carrier.Telemetry) float64 { return u(t.IOCycles) }},
			{desc("io_events_total", "Events returned by epoll_wait."), func(t carrier.Telemetry) float64 { return u(t.IOEvents) }},
			{desc("drains_total", "Drain passes over the run queues."), func(t carrier.Telemetry) float64 { return u(t.Drains) }},
			{desc("tasks_run_total", "Task resumptions in drain passes."), func(t carrier.Telemetry) float64 { return u(t.TasksRun) }},
			{desc("steals_in_total", "Tasks taken from other carriers."), func(t carrier.Telemetry) float64 { return u(t.StealsIn) }},
			{desc("steals_out_total", "Tasks other carriers took from this one."), func(t carrier.Telemetry) float64 { return u(t.StealsOut) }},
			{desc("migrations_in_total", "Started tasks, with their conns, taken over from other carriers (floating mode)."), func(t carrier.Telemetry) float64 { return u(t.MigrationsIn) }},
			{desc("spun_seconds_total", "Time spent spinning while idle."), func(t carrier.Telemetry) float64 { return u(t.SpunNs) / 1e9 }},
			{desc("blocked_seconds_total", "Time spent blocked in epoll_wait while idle."), func(t carrier.Telemetry) float64 { return u(t.BlockedNs) / 1e9 }},
			{desc("panics_total", "Tasks that panicked."), func(t carrier.Telemetry) float64 { return u(t.Panics) }},
			{desc("pinned_total", "Task runs that held the carrier longer than the watchdog's threshold (code blocking the Go way)."), func(t carrier.Telemetry) float64 { return u(t.Pinned) }},
			{desc("accept_backoffs_total", "Accepts that failed for lack of file descriptors."), func(t carrier.Telemetry) float64 { return u(t.AcceptBackoffs) }},
			{desc("coros_trimmed_total", "Idle coroutines stopped because the pool went unused for a period."), func(t carrier.Telemetry) float64 { return u(t.CorosTrimmed) }},
			{desc("context_watches_total", "Context watches started (carrierhttp's Transport: one per backend exchange under a context that can end)."), func(t carrier.Telemetry) float64 { return u(t.Watches) }},
			{desc("watches_armed_total", "Context watches registered with context.AfterFunc (the carrier polled the others' Done channels)."), func(t carrier.Telemetry) float64 { return u(t.WatchesArmed) }},
			{desc("handoffs_total", "Task runs that held the carrier past the hand-off threshold: the carrier went on on another thread while the task blocked or computed."), func(t carrier.Telemetry) float64 { return u(t.Handoffs) }},
			{desc("park_watched_total", "Task runs the park watch watched because their task's last run waited the Go way or came back from a hand-off."), func(t carrier.Telemetry) float64 { return u(t.ParkWatched) }},
			{desc("park_yields_total", "Task runs handed off before the threshold because the task parked the Go way while the carrier's park watch was armed."), func(t carrier.Telemetry) float64 { return u(t.ParkYields) }},
			{desc("rejoins_total", "Handed-off and park-yielded tasks that came back to their carrier."), func(t carrier.Telemetry) float64 { return u(t.Rejoins) }},
			{desc("thread_moves_total", "Runs that ended on another thread than they began (a short Go-way block): the carrier moved there."), func(t carrier.Telemetry) float64 { return u(t.ThreadMoves) }},
			{desc("surges_total", "Hand-offs of computing runs that gave parking carriers a spare P (GOMAXPROCS one more until no handed-off run has computed for a second)."), func(t carrier.Telemetry) float64 { return u(t.Surges) }},
			{desc("go_conns_dropped_total", "Go conns of foreign callers (a duplicate fd in Go's netpoller) closed because only the carrier's tasks used their conn for a while."), func(t carrier.Telemetry) float64 { return u(t.GoConnsDropped) }},
			{desc("ring_enters_total", "io_uring_enter calls (io_uring poller)."), func(t carrier.Telemetry) float64 { return u(t.RingEnters) }},
			{desc("ring_submissions_total", "SQEs submitted by those calls (io_uring poller)."), func(t carrier.Telemetry) float64 { return u(t.RingSubmissions) }},
			{desc("ring_completions_total", "CQEs reaped (io_uring poller)."), func(t carrier.Telemetry) float64 { return u(t.RingCompletions.Sum) }},
			{desc("ring_inline_sends_total", "Write-behind SENDs sent whole inside their io_uring_enter, without a completion (io_uring poller)."), func(t carrier.Telemetry) float64 { return u(t.RingInlineSends) }},
			{desc("ring_poll_first_total", "RECVs submitted with POLL_FIRST because the conn's last read drained the socket (io_uring poller)."), func(t carrier.Telemetry) float64 { return u(t.RingPollFirst) }},
			{desc("ring_reaps_total", "Passes that reaped CQEs (io_uring poller): completions per pass is ring_completions_total over this."), func(t carrier.Telemetry) float64 { return u(t.RingCompletions.Count()) }},
		},
		waits: desc("waits_total", "Idle waits by kind.", "kind"),
		gauges: []carrierGauge{
			{desc("open_connections", "Connections registered on the carrier."), func(t carrier.Telemetry) float64 { return float64(t.OpenConns) }},
			{desc("tasks_live", "Tasks started and not finished."), func(t carrier.Telemetry) float64 { return float64(t.TasksLive) }},
			{desc("detached", "Tasks handed off and not back on their carrier yet (blocked or computing now)."), func(t carrier.Telemetry) float64 { return float64(t.Detached) }},
		},
		queue:    desc("queue_depth", "Runnable tasks at the start of a drain pass (the telemetry's log2 buckets: le 0, 1, 3, 7, ...)."),
		submit:   desc("submit_to_run_seconds", "Time from submission to a task's first run (the telemetry's log2 buckets of ns: le (2^i-1) ns)."),
		detached: desc("detached_seconds", "Time a handed-off task spent away from its carrier (blocked or computing), from the hand-off until it came back (log2 buckets of ns: le (2^i-1) ns)."),
		cpu:      desc("cpu", "The CPU a pinned carrier runs on (absent for carriers not pinned)."),
		others:   prometheus.NewDesc("spindle_carrier_other_threads", "The process's threads that are not its carriers' (absent where the carriers do not batch them: floating, parking or N+1 carriers, --batch-others=false).", nil, nil),
		batched:  prometheus.NewDesc("spindle_carrier_batched_threads", "Of spindle_carrier_other_threads, those under SCHED_BATCH (--batch-others): fewer where the kernel refused the policy.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *carrierCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, k := range c.counters {
		ch <- k.desc
	}
	for _, k := range c.gauges {
		ch <- k.desc
	}
	ch <- c.waits
	ch <- c.queue
	ch <- c.submit
	ch <- c.detached
	ch <- c.cpu
	ch <- c.others
	ch <- c.batched
}

// Bucket ranges of the exported carrier histograms, as indexes of the
// telemetry's log2 buckets (bucket i holds [2^(i-1), 2^i), bucket 0 the
// value 0). Queue depths: le 0 up to 2^17-1 (131071 tasks, far past any
// queue seen); submit-to-run: le 2^7-1 ns (127 ns, under one coroutine
// switch) up to 2^36-1 ns (about 69 s); time away after a hand-off: le
// 2^17-1 ns (131 µs, shorter than any threshold) up to 2^38-1 ns (about
// 4.6 minutes). Counts beyond the last go to +Inf.
const (
	queueFirstBucket, queueLastBucket       = 0, 17
	submitFirstBucket, submitLastBucket     = 7, 36
	detachedFirstBucket, detachedLastBucket = 17, 38
)

// Collect implements prometheus.Collector.
func (c *carrierCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.g.Snapshot()
	if len(snap) > 0 && snap[0].OtherThreads >= 0 { // the process's figures, the same in every carrier's
		ch <- prometheus.MustNewConstMetric(c.others, prometheus.GaugeValue, float64(snap[0].OtherThreads))
		ch <- prometheus.MustNewConstMetric(c.batched, prometheus.GaugeValue, float64(snap[0].BatchedThreads))
	}
	for _, t := range snap {
		labels := []string{strconv.Itoa(t.Carrier)}
		if t.CPU >= 0 {
			ch <- prometheus.MustNewConstMetric(c.cpu, prometheus.GaugeValue, float64(t.CPU), labels...)
		}
		for _, k := range c.counters {
			ch <- prometheus.MustNewConstMetric(k.desc, prometheus.CounterValue, k.get(t), labels...)
		}
		for _, k := range c.gauges {
			ch <- prometheus.MustNewConstMetric(k.desc, prometheus.GaugeValue, k.get(t), labels...)
		}
		for kind, n := range t.Waits {
			ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(n), append(labels, kind)...)
		}
		ch <- histogram(c.queue, t.QueueDepth, queueFirstBucket, queueLastBucket, 1, labels)
		ch <- histogram(c.submit, t.SubmitToRun, submitFirstBucket, submitLastBucket, 1e-9, labels)
		ch <- histogram(c.detached, t.DetachedFor, detachedFirstBucket, detachedLastBucket, 1e-9, labels)
	}
}

// histogram exports a carrier histogram as a classic Prometheus histogram
// whose bucket edges are the telemetry's own: log2 bucket i (first..last)
// becomes le (2^i-1)*scale, exact for integer samples (bucket i holds
// values below 2^i). scale converts units (1e-9: ns to seconds).
func histogram(d *prometheus.Desc, h carrier.Histogram, first, last int, scale float64, labels []string) prometheus.Metric {
	buckets := make(map[float64]uint64, last-first+1)
	var cum uint64
	for i, n := range h.Buckets {
		cum += n
		if i >= first && i <= last {
			buckets[(math.Ldexp(1, i)-1)*scale] = cum
		}
	}
	return prometheus.MustNewConstHistogram(d, cum, float64(h.Sum)*scale, buckets, labels...)
}

// adminWriteTimeout bounds the time from an admin request's head to the end
// of its answer: a scraper that stops reading is dropped. net/http/pprof
// refuses (400) a profile or trace longer than it, so it is over the
// longest one worth taking of a benchmark window.
const adminWriteTimeout = 2 * time.Minute

// startAdmin serves /metrics, /debug/pprof/, /debug/carrier and
// /debug/runtime on s.adminLn, which New bound before the mode started.
func (s *Server) startAdmin() error {
	if s.group != nil {
		if err := s.m.reg.Register(newCarrierCollector(s.group)); err != nil {
			return err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", oneAtATime(&cpuProfiling, "a CPU profile", pprof.Profile))
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", oneAtATime(&tracing, "an execution trace", pprof.Trace))
	mux.HandleFunc("/debug/carrier", s.serveCarrierSnapshot)
	mux.HandleFunc("/debug/runtime", serveRuntime)
	ln := s.adminLn // bound by New before the mode started
	s.admin = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: s.o.HTTP.WithDefaults().ReadHeaderTimeout,
		WriteTimeout:      adminWriteTimeout,
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.admin.Serve(ln) // returns http.ErrServerClosed at Close
	}()
	return nil
}

// serveCarrierSnapshot answers json.Marshal(group.Snapshot()), or [] in
// nethttp mode, for the benchmark runner to diff over its window.
func (s *Server) serveCarrierSnapshot(w http.ResponseWriter, _ *http.Request) {
	snap := []carrier.Telemetry{}
	if s.group != nil {
		snap = s.group.Snapshot()
	}
	writeJSON(w, snap)
}

// serveRuntime answers the Go runtime's metrics (rtmetrics.Snapshot: the
// scheduling latencies, GC pauses, cycles and CPU, GOMAXPROCS) as JSON,
// for the benchmark runner to diff over its window; 500 when this Go
// lacks one of them.
func serveRuntime(w http.ResponseWriter, _ *http.Request) {
	snap, err := rtmetrics.Read()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, snap)
}

// writeJSON answers v as JSON (500 if it cannot be encoded).
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
