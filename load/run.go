package load

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/internal/unix"
	"github.com/spindle-lab/spindle/latency"
)

// Progress is a live snapshot of a run, for a one-line display.
type Progress struct {
	Elapsed   time.Duration // since the start of the run (warm-up included)
	Sent      int64         // requests written so far (warm-up included)
	Completed int64         // responses received so far (warm-up included)
	Errors    int64         // failed requests so far (warm-up included)
	Rate      float64       // responses/s over the last progress interval
}

// ProgressInterval is how often Run reports Progress.
const ProgressInterval = 250 * time.Millisecond

// Run generates load as o says and returns the result. It fails with an
// error wrapping ErrBadOptions for invalid options and ErrUnreachable when a
// first connection to the target fails, in both cases before any request is
// sent. progress, if not nil, is called every ProgressInterval from one
// goroutine. Cancelling ctx ends the run early; the result covers the time
// run. When Options.IntervalSink fails, Run returns the result and the
// sink's error.
func Run(ctx context.Context, o Options, progress func(Progress)) (*Result, error) {
	o = o.withDefaults()
	t, err := o.validate()
	if err != nil {
		return nil, err
	}
	if err := probe(ctx, o, t); err != nil {
		return nil, err
	}
	return run(ctx, o, t, progress)
}

// Preflight validates o and makes one connection to the target, as Run does
// before any load: a caller can report bad input before printing anything.
func Preflight(ctx context.Context, o Options) error {
	o = o.withDefaults()
	t, err := o.validate()
	if err != nil {
		return err
	}
	return probe(ctx, o, t)
}

// probe makes one connection to t and, for https, one TLS handshake.
func probe(ctx context.Context, o Options, t target) error {
	c, err := dial(ctx, t.addr.String(), o.Timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	if t.tls {
		return probeTLS(c, tlsConfig(o, t), o.Timeout)
	}
	return nil
}

func run(ctx context.Context, o Options, t target, progress func(Progress)) (*Result, error) {
	reqs := buildRequests(o, t)
	var table []uint8
	if len(o.Mix) > 0 {
		table = mixTable(o.Mix)
	}
	var tlsConf *tls.Config
	if t.tls {
		tlsConf = tlsConfig(o, t)
	}

	base := time.Now()
	clock := func() int64 { return int64(time.Since(base)) }
	var ivLen int64
	if o.IntervalSink != nil {
		ivLen = int64(o.Interval)
	}
	workers := make([]*worker, o.Threads)
	for i := range workers {
		n := o.Connections / o.Threads
		if i < o.Connections%o.Threads {
			n++ // the remainder is spread, not dropped
		}
		// Each thread gets its own Sockaddr: connect(2) wrappers write
		// into its raw buffer.
		sa, family := unix.SockaddrOf(t.addr)
		workers[i] = &worker{
			id: i, closed: o.Rate == 0, pipeline: int64(max(1, o.Pipeline)), reqs: reqs, table: table, stride: int64(o.Connections), head: o.Method == "HEAD",
			timeout: int64(o.Timeout), spin: int64(o.Spin), sa: sa, family: family,
			cpus: o.CPUs, clock: clock, conns: make([]conn, n), ep: -1, tlsConf: tlsConf,
		}
		workers[i].iv.length = ivLen
		// Closed loop each thread runs the mix's cycle on its own: the
		// threads start it at points spread over the cycle, so that
		// their rare entries do not all come at once.
		workers[i].seq = int64(i * len(table) / o.Threads)
	}

	// Each worker sets up on its own thread, then waits for the common
	// start time so that the schedules of all threads interleave.
	var ready, done sync.WaitGroup
	start := make(chan int64)
	var stop atomic.Bool
	ready.Add(len(workers))
	done.Add(len(workers))
	for _, w := range workers {
		go func() {
			defer done.Done()
			if err := w.setup(); err != nil {
				w.err = err
			}
			ready.Done()
			t0, ok := <-start
			if !ok {
				w.finish(w.now())
				return
			}
			w.run(t0, &stop)
		}()
	}
	ready.Wait()
	for _, w := range workers {
		if w.err != nil {
			close(start)
			done.Wait()
			return nil, fmt.Errorf("load thread %d: %w", w.id, w.err)
		}
	}
	t0 := clock() + int64(time.Millisecond) // every thread is waiting by then
	if !o.StartAt.IsZero() {
		t0 = max(t0, int64(o.StartAt.Sub(base)))
	}
	measureAt := t0 + int64(o.Warmup)
	end := measureAt + int64(o.Duration)
	connIdx := 0
	for _, w := range workers {
		w.measureAt, w.end = measureAt, end
		for i := range w.conns {
			if o.Rate > 0 {
				w.conns[i].sched = newSchedule(t0, o.Rate, connIdx, o.Connections)
				w.conns[i].order = int64(connIdx)
			}
			connIdx++
		}
	}
	startTime := base.Add(time.Duration(t0))
	var ivc *intervalCollector
	if ivLen > 0 {
		ivc = &intervalCollector{sink: o.IntervalSink, base: base, length: ivLen, measureAt: measureAt,
			pending: map[int64][]*latency.Histogram{}}
	}
	for range workers {
		start <- t0
	}
	// The host steal is read on a goroutine of its own, off the load
	// threads' locked OS threads.
	stealStop, stealDone := make(chan struct{}), make(chan *HostSteal, 1)
	go func() { stealDone <- sampleSteal(o.ProcRoot, clock, measureAt, end, stealStop) }()

	finished := make(chan struct{})
	go func() { done.Wait(); close(finished) }()
	tick := time.NewTicker(ProgressInterval)
	defer tick.Stop()
	var last int64
	lastAt := t0
loop:
	for {
		select {
		case <-finished:
			break loop
		case <-ctx.Done():
			stop.Store(true)
			<-finished
			break loop
		case <-tick.C:
			if ivc != nil {
				ivc.collect(workers, false, end)
			}
			if progress == nil {
				continue
			}
			var p Progress
			for _, w := range workers {
				p.Sent += w.live.sent.Load()
				p.Completed += w.live.completed.Load()
				p.Errors += w.live.errors.Load()
			}
			now := clock()
			p.Elapsed = time.Duration(now - t0)
			if now > lastAt {
				p.Rate = float64(p.Completed-last) * 1e9 / float64(now-lastAt)
			}
			last, lastAt = p.Completed, now
			progress(p)
		}
	}
	close(stealStop)
	steal := <-stealDone
	res, err := collect(o, startTime, measureAt, workers)
	if res != nil {
		res.HostSteal = steal
	}
	if ivc != nil && err == nil {
		var stopped int64
		for _, w := range workers {
			stopped = max(stopped, w.stoppedAt)
		}
		ivc.collect(workers, true, min(stopped, end))
		err = ivc.err // the result stands: the sink failed, not the run
	}
	return res, err
}

// Probe makes one connection to addr ("host:port") and closes it, so that an
// unreachable target is reported before any load.
func Probe(ctx context.Context, addr string, timeout time.Duration) error {
	c, err := dial(ctx, addr, timeout)
	if err != nil {
		return err
	}
	return c.Close()
}

// dial connects to addr, failing with ErrUnreachable.
func dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return c, nil
}

// collect merges the threads' results.
func collect(o Options, start time.Time, measureAt int64, workers []*worker) (*Result, error) {
	var total counts
	var stopped int64
	hc := make([]*latency.Histogram, 0, len(workers))
	hu := make([]*latency.Histogram, 0, len(workers))
	var hl []*latency.Histogram
	var rates []float64
	for _, w := range workers {
		if w.err != nil {
			return nil, fmt.Errorf("load thread %d: %w", w.id, w.err)
		}
		total.add(&w.c)
		stopped = max(stopped, w.stoppedAt)
		hc = append(hc, w.corrected)
		hu = append(hu, w.uncorrected)
		if w.sendLag != nil {
			hl = append(hl, w.sendLag)
		}
		rates = append(rates, w.rates...)
	}
	corrected, err := latency.Merge(hc...)
	if err != nil {
		return nil, err
	}
	uncorrected, err := latency.Merge(hu...)
	if err != nil {
		return nil, err
	}
	r := &Result{
		SchemaVersion: SchemaVersion,
		Config: Config{
			URL: o.URL, Threads: o.Threads, Connections: o.Connections,
			DurationS: o.Duration.Seconds(), WarmupS: o.Warmup.Seconds(), Rate: o.Rate,
			TimeoutS: o.Timeout.Seconds(), Method: o.Method, Headers: o.Headers,
			BodyBytes: len(o.Body), CPUs: o.CPUs.String(), Pipeline: pipelined(o.Pipeline),
		},
		Start:     start.UTC(),
		DurationS: max(0, float64(stopped-measureAt)/1e9),
		Intended:  total.intended,
		Completed: total.completed(),
		ByStatus:  statusCounts(total.byClass),
		Errors: ErrorCounts{
			Connect: total.failed[failConnect], Read: total.failed[failRead],
			Write: total.failed[failWrite], Timeout: total.failed[failTimeout],
			Parse: total.failed[failParse], ParseLate: total.late,
		},
		InFlight:  total.inFlight,
		NotSent:   total.notSent,
		Sent:      total.sent,
		BytesRead: total.bytesRead,
		Warmup:    total.warmup,
	}
	r.Failed = r.Errors.Total()
	if r.DurationS > 0 {
		r.AchievedRate = float64(r.Completed) / r.DurationS
		r.TransferRate = float64(r.BytesRead) / r.DurationS
	}
	r.ThreadReqPerSec = summarizeRates(rates)
	if workers[0].tlsConf != nil {
		if r.TLS, err = collectTLS(o, workers); err != nil {
			return nil, err
		}
	}
	if r.Corrected, err = latency.Summarize(corrected); err != nil {
		return nil, err
	}
	if r.Mix, err = collectMix(o.Mix, workers); err != nil {
		return nil, err
	}
	if r.Uncorrected, err = latency.Summarize(uncorrected); err != nil {
		return nil, err
	}
	if len(hl) > 0 {
		lag, err := latency.Merge(hl...)
		if err != nil {
			return nil, err
		}
		s, err := latency.Summarize(lag)
		if err != nil {
			return nil, err
		}
		r.SendLag = &s
	}
	return r, nil
}

// statusCounts names the classes of a byClass tally (index: status/100,
// 0 for 6xx-9xx).
func statusCounts(byClass [6]int64) StatusCounts {
	return StatusCounts{C1xx: byClass[1], C2xx: byClass[2], C3xx: byClass[3],
		C4xx: byClass[4], C5xx: byClass[5], Other: byClass[0]}
}

// pipelined is Config.Pipeline of Options.Pipeline p: 0 (left out of the
// JSON) without pipelining.
func pipelined(p int) int {
	if p > 1 {
		return p
	}
	return 0
}

// String describes the options in one line, for logs.
func (o Options) String() string {
	mode := "closed loop"
	if o.Pipeline > 1 {
		mode = fmt.Sprintf("closed loop, pipeline %d", o.Pipeline)
	}
	if o.Rate > 0 {
		mode = fmt.Sprintf("%g req/s", o.Rate)
	}
	return strings.Join([]string{o.URL, fmt.Sprintf("%d threads", o.Threads),
		fmt.Sprintf("%d connections", o.Connections), o.Duration.String(), mode}, ", ")
}

// collectTLS merges the threads' handshake figures.
func collectTLS(o Options, workers []*worker) (*TLSResult, error) {
	hs := make([]*latency.Histogram, 0, len(workers))
	r := &TLSResult{Min: TLSVersionName(o.TLSMin), Max: TLSVersionName(o.TLSMax), SNI: o.SNI, Insecure: o.Insecure, Resume: o.TLSResume}
	for _, w := range workers {
		hs = append(hs, w.hs.hist)
		r.HandshakeErrors += w.hs.failed
		r.TLS12 += w.hs.versions[0]
		r.TLS13 += w.hs.versions[1]
		r.Resumed += w.hs.resumed
	}
	h, err := latency.Merge(hs...)
	if err != nil {
		return nil, err
	}
	r.Handshakes = h.TotalCount()
	if r.Handshake, err = latency.Summarize(h); err != nil {
		return nil, err
	}
	return r, nil
}
