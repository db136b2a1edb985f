package load

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/timerheap"
	"github.com/spindle-lab/spindle/internal/unix"
	"github.com/spindle-lab/spindle/latency"
)

// Tunables of the event loop.
const (
	// readBufSize is each thread's read buffer; responses are parsed as
	// they stream through it, so it bounds nothing but the read size.
	readBufSize = 64 << 10
	// maxEvents is how many readiness events one epoll wait returns.
	maxEvents = 256
	// housekeeping is how often a thread checks timeouts and samples its
	// request rate (wrk samples its Req/Sec every 100 ms, checks timeouts
	// every 2 s; 10 ms keeps timeouts within 10 ms of their deadline).
	housekeeping = 10 * time.Millisecond
	// rateSample is the Req/Sec sampling interval, as wrk's RECORD_INTERVAL_MS.
	rateSample = 100 * time.Millisecond
	// yieldEvery is how often a thread yields to the Go scheduler. A
	// goroutine that runs 10 ms without rescheduling is preempted by sysmon,
	// and when that catches it in a system call sysmon takes its P and then
	// polls every 20 µs for a while, which cost CPU 0 several percent in a
	// profile. Yielding a little more often than that avoids both; it is not
	// free (a locked thread hands its P over and back, two thread wake-ups),
	// so it is no more frequent than the preemption it replaces.
	yieldEvery = 8 * time.Millisecond
	// connectBackoff delays the next connect after a failed one, so that a
	// dead target does not turn the generator into a connect storm.
	connectBackoff = 10 * time.Millisecond
)

// failure kinds, indexes into counts.failed.
const (
	failConnect = iota
	failRead
	failWrite
	failTimeout
	failParse
	numFailures
)

// connection states.
const (
	csIdle        uint8 = iota // no socket
	csConnecting               // non-blocking connect in progress
	csHandshaking              // connected, TLS handshake in progress
	csReady                    // connected, no request on the wire
	csWriting                  // request partly written
	csReading                  // request written, response pending
)

// counts are one thread's tallies of the measured window.
type counts struct {
	intended  int64
	byClass   [6]int64 // completed responses by status/100 (index 0: unused)
	failed    [numFailures]int64
	notSent   int64
	inFlight  int64
	sent      int64
	bytesRead int64
	warmup    int64 // requests begun during the warm-up
	late      int64 // of failed[failParse]: completed responses whose extra body bytes came later
}

func (c *counts) completed() int64 {
	var n int64
	for _, v := range c.byClass {
		n += v
	}
	return n
}

func (c *counts) add(o *counts) {
	c.intended += o.intended
	for i := range c.byClass {
		c.byClass[i] += o.byClass[i]
	}
	for i := range c.failed {
		c.failed[i] += o.failed[i]
	}
	c.notSent += o.notSent
	c.inFlight += o.inFlight
	c.sent += o.sent
	c.bytesRead += o.bytesRead
	c.warmup += o.warmup
	c.late += o.late
}

// live are a thread's counters for progress reports, read by another
// goroutine; padded so threads do not share a cache line.
type live struct {
	sent, completed, errors atomic.Int64
	_                       [40]byte
}

type conn struct {
	idx     int32 // index in worker.conns
	fd      int
	gen     uint32 // bumped per socket; stale events carry an old one
	state   uint8
	wantOut bool // EPOLLOUT registered
	hasReq  bool // a request is current (begun, outcome pending)
	// pending is how many responses of the current request (a batch of
	// worker.pipeline requests, sent in one write) are still due.
	pending  int64
	measured bool // the current request counts (intended in the window)
	parser   responseParser
	written  int         // bytes of the request (TLS: of tls.out) written
	tls      *tlsSession // https: the connection's TLS client
	hsAt     int64       // ns: when the TLS handshake began
	sched    schedule
	next     int64 // fixed rate: index of the next request to begin
	order    int64 // fixed rate: the connection's index over all (its first request's rank in the intended send order)
	entry    uint8 // the mix entry of the current request (0 without a mix)
	intended int64 // ns: current request's intended send time
	sentAt   int64 // ns: current request's actual send time
	connAt   int64 // ns: when the current connect began
	retryAt  int64 // ns: earliest next connect after a failed one

	// lastOK is 1 + the status class of the last response completed on
	// this connection while no request has begun since (0: none), and
	// lastMeasured whether it counted: a byte that arrives after it, before
	// the next request, makes it malformed (a body longer than its
	// Content-Length, the rest read later).
	lastOK       int8
	lastMeasured bool
	lastEntry    uint8
}

// worker is one load thread.
type worker struct {
	id       int
	closed   bool     // closed loop (no rate)
	pipeline int64    // requests in a batch, sent at once (Options.Pipeline; 1: none)
	reqs     [][]byte // the request of each mix entry (one without a mix)
	// table maps a request's rank in its sequence to its mix entry
	// (mixTable); nil without a mix. At a fixed rate the rank is the
	// request's in the intended send order of all connections
	// (conn.order + k*stride for a connection's request k), closed loop
	// the thread's own count of requests begun (seq).
	table     []uint8
	stride    int64
	seq       int64
	mix       []entryTally // the mix entries' figures; nil without a mix
	head      bool
	timeout   int64
	spin      int64
	sa        unix.Sockaddr
	family    int
	cpus      cpu.Set
	clock     func() int64
	measureAt int64 // ns: start of the measured window
	end       int64 // ns: end of the run

	ep     int
	conns  []conn
	events []unix.EpollEvent
	buf    []byte
	timers timerheap.Heap[int32] // pending starts: the index of the conn in conns
	lastN  int                   // events returned by the last wait

	c           counts
	live        live
	corrected   *latency.Histogram
	uncorrected *latency.Histogram
	// sendLag is, at a fixed rate, how late this thread began the
	// measured requests its timers started: from the time the timer was
	// due (the intended send time, or a reconnect's earliest time) to the
	// clock read just before the request was begun (Result.SendLag).
	sendLag   *latency.Histogram
	rates     []float64 // Req/Sec samples of the measured window
	rateAt    int64
	rateCount int64
	nextHouse int64
	nextYield int64
	stoppedAt int64
	err       error

	iv intervals // interval histograms (Options.IntervalSink)

	tlsConf *tls.Config // https: the client configuration; nil for http
	tlsBuf  []byte      // the sessions' decryption buffer, shared (see tlsSession.rbuf)
	hs      tlsCounts
}

// tlsCounts are one thread's TLS handshake figures, over the whole run
// (set-up and warm-up included: most handshakes happen before the measured
// window).
type tlsCounts struct {
	hist     *latency.Histogram // handshake times, from TCP connected to handshake done
	failed   int64              // handshakes that failed (refused, timed out, closed)
	versions [2]int64           // completed handshakes: TLS 1.2, TLS 1.3
	resumed  int64              // completed handshakes that resumed a session
}

func (w *worker) now() int64 { return w.clock() }

// setup locks and pins the thread, creates the epoll instance and connects
// every connection, waiting up to the timeout for the connects to finish.
// Connect failures here are not counted: no request was intended yet, and
// the connection will reconnect when its first request is due.
func (w *worker) setup() error {
	runtime.LockOSThread()
	if len(w.cpus) > 0 {
		if err := cpu.Pin(cpu.Set{w.cpus[w.id%len(w.cpus)]}); err != nil {
			return err
		}
	}
	_ = unix.SetThreadName(fmt.Sprintf("spindle-load%d", w.id)) // cosmetic
	_ = unix.SetTimerSlack(1)                                   // best effort: only sharpens waits
	ep, err := unix.EpollCreate()
	if err != nil {
		return err
	}
	w.ep = ep
	w.events = make([]unix.EpollEvent, maxEvents)
	w.buf = make([]byte, readBufSize)
	w.timers.Grow(len(w.conns))
	w.corrected, w.uncorrected, w.hs.hist = latency.New(), latency.New(), latency.New()
	if w.table != nil {
		w.mix = newEntryTallies(len(w.reqs))
	}
	if !w.closed {
		w.sendLag = latency.New()
	}
	now := w.now()
	for i := range w.conns {
		w.conns[i].idx = int32(i)
		w.conns[i].fd = -1
		w.connect(&w.conns[i], now)
	}
	deadline := now + w.timeout
	for now < deadline && w.connecting() {
		w.wait(deadline - now)
		now = w.now()
		w.handle(w.lastN, now)
	}
	for i := range w.conns { // still connecting: give up quietly, retry lazily
		if c := &w.conns[i]; c.state == csConnecting || c.state == csHandshaking {
			if c.state == csHandshaking {
				w.hs.failed++
			}
			w.closeConn(c)
		}
	}
	return nil
}

func (w *worker) connecting() bool {
	for i := range w.conns {
		if s := w.conns[i].state; s == csConnecting || s == csHandshaking {
			return true
		}
	}
	return false
}

// run is the event loop of the run proper, from t0 (schedules already set)
// until end or stop.
func (w *worker) run(t0 int64, stop *atomic.Bool) {
	now := w.now()
	w.rateAt = max(t0, w.measureAt)
	w.nextHouse = now + int64(housekeeping)
	w.iv.start(w.measureAt, w.end)
	for i := range w.conns {
		c := &w.conns[i]
		if w.closed {
			w.push(t0, i)
		} else {
			w.push(c.sched.at(0), i)
		}
	}
	for {
		now = w.now()
		if now >= w.end || stop.Load() {
			break
		}
		w.fire(now)
		if now >= w.nextHouse {
			w.housekeep(now)
		}
		if now >= w.nextYield {
			runtime.Gosched()
			w.nextYield = now + int64(yieldEvery)
		}
		deadline := min(w.end, w.nextHouse)
		if t, ok := w.timers.Peek(); ok {
			deadline = min(deadline, t.When)
		}
		w.wait(deadline - w.now())
		if w.lastN > 0 {
			w.handle(w.lastN, w.now())
		}
	}
	w.stoppedAt = min(now, w.end)
	w.finish(w.stoppedAt)
}

// wait waits for events up to d ns (spinning the last w.spin ns), leaving
// the count in w.lastN.
func (w *worker) wait(d int64) {
	// Poll first when busy (closed loop, or the last wait returned events):
	// events are then usually pending, and a poll returns them without the
	// runtime's blocking-syscall bookkeeping and without giving up the CPU;
	// only an empty poll falls through to a blocking wait. When idle (a
	// fixed rate with time between sends) the extra poll would only cost.
	var n int
	var err error
	if w.closed || w.lastN > 0 {
		n, err = unix.EpollPoll(w.ep, w.events)
	}
	switch {
	case n > 0 || err != nil:
	case d <= w.spin:
		n, err = unix.EpollPoll(w.ep, w.events)
	default:
		n, err = unix.EpollWaitNs(w.ep, w.events, d-w.spin)
	}
	if err != nil && w.err == nil {
		w.err = err
	}
	w.lastN = n
}

// handle processes the first n events of w.events.
func (w *worker) handle(n int, now int64) {
	for i := 0; i < n; i++ {
		ev := &w.events[i]
		tok := unix.Token(ev)
		idx, gen := int(uint32(tok)), uint32(tok>>32)
		if idx >= len(w.conns) {
			continue
		}
		c := &w.conns[idx]
		if c.gen != gen || c.fd < 0 {
			continue // the socket this event was for is gone
		}
		e := ev.Events
		switch c.state {
		case csConnecting:
			if e&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
				continue
			}
			if err := unix.SocketError(c.fd); err != nil || e&unix.EPOLLHUP != 0 {
				w.fail(c, failConnect, now)
				continue
			}
			if w.tlsConf != nil {
				w.startTLS(c, now)
				continue
			}
			c.state = csReady
			w.setOut(c, false)
			if c.hasReq {
				w.send(c, now)
			}
		case csWriting:
			if e&unix.EPOLLIN != 0 {
				w.readable(c, now)
			} else if e&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
				w.write(c, now)
			}
		default:
			if c.tls != nil && e&unix.EPOLLOUT != 0 && len(c.tls.out) > 0 {
				// TLS output that did not fit the socket: handshake
				// messages, a post-handshake reply.
				if !w.flushTLS(c, now) {
					continue
				}
			}
			w.readable(c, now)
		}
	}
}

// connect opens a non-blocking connection for c.
func (w *worker) connect(c *conn, now int64) {
	fd, err := unix.TCPSocket(w.family)
	if err != nil {
		w.fail(c, failConnect, now)
		return
	}
	_ = unix.SetNoDelay(fd) // best effort: loopback latency only improves
	if err := unix.Connect(fd, w.sa); err != nil && !errors.Is(err, unix.EINPROGRESS) {
		_ = unix.Close(fd)
		w.fail(c, failConnect, now)
		return
	}
	c.gen++
	c.fd = fd
	c.state = csConnecting
	c.connAt = now
	if err := unix.EpollAdd(w.ep, fd, unix.EPOLLIN|unix.EPOLLOUT, w.token(c)); err != nil {
		w.fail(c, failConnect, now)
		return
	}
	c.wantOut = true
}

func (w *worker) token(c *conn) uint64 { return uint64(uint32(c.idx)) | uint64(c.gen)<<32 }

func (w *worker) setOut(c *conn, on bool) {
	if c.wantOut == on {
		return
	}
	ev := uint32(unix.EPOLLIN)
	if on {
		ev |= unix.EPOLLOUT
	}
	if err := unix.EpollMod(w.ep, c.fd, ev, w.token(c)); err != nil && w.err == nil {
		w.err = err
	}
	c.wantOut = on
}

// begin starts a request intended at intended.
func (w *worker) begin(c *conn, intended, now int64) {
	c.hasReq = true
	c.pending = w.pipeline
	c.intended = intended
	c.measured = intended >= w.measureAt
	if c.measured {
		w.c.intended += c.pending
	} else {
		w.c.warmup += c.pending
	}
	if w.table != nil {
		n := w.seq
		if w.closed {
			w.seq++
		} else {
			n = c.order + (c.next-1)*w.stride // beginNext has moved c.next on
		}
		c.entry = w.table[n%int64(len(w.table))]
	}
	switch c.state {
	case csIdle:
		w.connect(c, now)
	case csReady:
		w.send(c, now)
	}
}

func (w *worker) send(c *conn, now int64) {
	c.sentAt = now
	c.lastOK = 0
	c.parser.reset(w.head)
	c.state = csWriting
	w.live.sent.Add(c.pending)
	if c.measured {
		w.c.sent += c.pending
		if w.mix != nil {
			w.mix[c.entry].sent++
		}
	}
	if c.tls != nil {
		// Appended to what the session may still have to send.
		if err := c.tls.write(w.reqs[c.entry]); err != nil {
			w.fail(c, failWrite, now)
			return
		}
	} else {
		c.written = 0
	}
	w.write(c, now)
}

func (w *worker) write(c *conn, now int64) {
	if c.tls != nil {
		w.flushTLS(c, now)
		return
	}
	req := w.reqs[c.entry]
	for c.written < len(req) {
		n, err := unix.WriteNB(c.fd, req[c.written:])
		if err == unix.EAGAIN || err == unix.EINTR {
			w.setOut(c, true)
			return
		}
		if err != nil {
			w.fail(c, failWrite, now)
			return
		}
		c.written += n
	}
	c.state = csReading
	w.setOut(c, false)
}

// readable reads what the socket has and feeds the response parser
// (through the TLS session for https).
func (w *worker) readable(c *conn, now int64) {
	for {
		n, err := unix.ReadNB(c.fd, w.buf)
		if err == unix.EAGAIN || err == unix.EINTR {
			return
		}
		if err != nil || n == 0 { // reset or EOF
			w.ended(c, err == nil, now)
			return
		}
		data := w.buf[:n]
		if c.tls != nil {
			var ok bool
			if data, ok = w.decrypt(c, data, now); !ok {
				return
			}
		}
		if len(data) > 0 && !w.consume(c, data, now) {
			return
		}
		if c.tls != nil && c.tls.err != nil { // close_notify or a bad record after the data
			w.ended(c, errors.Is(c.tls.err, io.EOF), now)
			return
		}
		if n < len(w.buf) {
			return // level-triggered: the rest raises another event
		}
	}
}

// consume feeds response bytes to the parser. It reports whether c still
// waits for more of the response.
func (w *worker) consume(c *conn, data []byte, now int64) bool {
	if c.measured {
		w.c.bytesRead += int64(len(data))
	}
	if c.state != csReading && c.state != csWriting {
		// Unsolicited bytes: the stream is out of step. With no request
		// begun since the last response, they are the rest of its body.
		w.lateBytes(c)
		w.closeConn(c)
		return false
	}
	for {
		used, perr := c.parser.feed(data)
		if perr != nil {
			w.fail(c, failParse, now)
			return false
		}
		if !c.parser.done() {
			return true
		}
		data = data[used:]
		if c.pending == 1 && len(data) > 0 {
			// Bytes beyond the batch's last response, which came with it:
			// a body longer than its Content-Length (nothing else was
			// asked for, so nothing else may follow).
			w.fail(c, failParse, now)
			return false
		}
		if !w.complete(c, now, c.parser.keepAliveAfter()) {
			return false
		}
		if len(data) == 0 {
			return true
		}
	}
}

// ended handles the end of c's stream: clean (EOF, TLS close_notify) or not.
func (w *worker) ended(c *conn, clean bool, now int64) {
	switch {
	case c.state == csHandshaking:
		w.fail(c, failConnect, now)
	case c.state != csReading && c.state != csWriting:
		w.closeConn(c) // closed while idle: reconnect when needed
	case clean && c.parser.eof():
		w.complete(c, now, false) // body delimited by close
	default:
		w.fail(c, failRead, now)
	}
}

// startTLS begins the TLS handshake on c, just connected.
func (w *worker) startTLS(c *conn, now int64) {
	c.state = csHandshaking
	c.hsAt = now
	c.written = 0
	if w.tlsBuf == nil {
		w.tlsBuf = make([]byte, tlsReadSize)
	}
	c.tls = newTLSSession(w.tlsConf, w.tlsBuf)
	w.flushTLS(c, now)
}

// decrypt gives ciphertext to c's TLS session, sends what the session
// answers, completes the handshake, and returns the plaintext the data
// carried. ok is false when c failed.
func (w *worker) decrypt(c *conn, data []byte, now int64) (plain []byte, ok bool) {
	s := c.tls
	handshaking := c.state == csHandshaking
	s.feed(data)
	if len(s.out) > 0 && !w.flushTLS(c, now) {
		return nil, false
	}
	if !handshaking {
		return s.take(), true
	}
	if !s.done {
		if s.err != nil {
			w.fail(c, failConnect, now)
			return nil, false
		}
		return nil, true
	}
	latency.Record(w.hs.hist, now-c.hsAt)
	version, resumed := s.handshake()
	if version == tls.VersionTLS13 {
		w.hs.versions[1]++
	} else {
		w.hs.versions[0]++
	}
	if resumed {
		w.hs.resumed++
	}
	c.state = csReady
	if c.hasReq {
		w.send(c, now)
	}
	return s.take(), c.fd >= 0
}

// flushTLS writes the ciphertext c's session produced; once all is written,
// a request being written has been. It reports false when c failed.
func (w *worker) flushTLS(c *conn, now int64) bool {
	s := c.tls
	for c.written < len(s.out) {
		n, err := unix.WriteNB(c.fd, s.out[c.written:])
		if err == unix.EAGAIN || err == unix.EINTR {
			w.setOut(c, true)
			return true
		}
		if err != nil {
			kind := failWrite
			if c.state == csHandshaking {
				kind = failConnect
			}
			w.fail(c, kind, now)
			return false
		}
		c.written += n
	}
	s.out, c.written = s.out[:0], 0
	if c.state == csWriting {
		c.state = csReading
	}
	w.setOut(c, false)
	return true
}

// complete records a finished response and moves c on: to the next
// response of its batch, when one is still due (it then reports true), or
// to its next request.
func (w *worker) complete(c *conn, now int64, keep bool) bool {
	w.record(c, now)
	c.pending--
	if c.pending > 0 {
		if keep && (c.state == csReading || c.state == csWriting) {
			c.parser.reset(w.head) // a pipeline's next response: it may come before the batch is all written
			return true
		}
		// The server closed (or the stream is out of step) with responses
		// of the batch still due: those fail.
		w.fail(c, failRead, now)
		return false
	}
	if keep && c.state == csReading {
		c.state = csReady
		c.lastOK, c.lastMeasured, c.lastEntry = int8(c.parser.status/100)+1, c.measured, c.entry
		if c.lastOK > 6 {
			c.lastOK = 1 // class 0, as counted above
		}
	} else { // (a response that beat the end of our write leaves the stream out of step)
		w.closeConn(c)
	}
	w.advance(c, now)
	return false
}

// record counts a finished response of c's current request and records its
// latencies.
func (w *worker) record(c *conn, now int64) {
	w.live.completed.Add(1)
	if c.measured {
		class := c.parser.status / 100
		if class > 5 {
			class = 0 // 6xx-9xx: counted as "other"
		}
		w.c.byClass[class]++
		w.rateCount++
		latency.Record(w.corrected, now-c.intended)
		latency.Record(w.uncorrected, now-c.sentAt)
		if w.mix != nil {
			e := &w.mix[c.entry]
			e.byClass[class]++
			latency.Record(e.corrected, now-c.intended)
			latency.Record(e.uncorrected, now-c.sentAt)
		}
		if w.iv.length > 0 {
			w.iv.rotate(now)
			latency.RecordNs(w.iv.h, now-c.intended)
		}
	}
}

// lateBytes turns the last response completed on c into a malformed one
// when bytes arrive after it, before a new request began: counted once,
// moved from its status class to failParse so that the accounting still adds
// up. Its latency stays in the histograms (they cannot take a value back):
// Result.Errors.Late says how many such responses they hold.
func (w *worker) lateBytes(c *conn) {
	if c.lastOK == 0 {
		return
	}
	w.live.completed.Add(-1)
	w.live.errors.Add(1)
	if c.lastMeasured {
		w.c.byClass[c.lastOK-1]--
		w.c.failed[failParse]++
		w.c.late++
		if w.mix != nil {
			w.mix[c.lastEntry].byClass[c.lastOK-1]--
			w.mix[c.lastEntry].failed++
		}
	}
	c.lastOK = 0
}

// fail records a failed request (if one is current), closes the connection
// and moves on.
func (w *worker) fail(c *conn, kind int, now int64) {
	if kind == failConnect {
		c.retryAt = now + int64(connectBackoff)
		if c.state == csHandshaking {
			w.hs.failed++
		}
	}
	w.closeConn(c)
	if !c.hasReq {
		return
	}
	w.live.errors.Add(c.pending)
	if c.measured {
		w.c.failed[kind] += c.pending
		if w.mix != nil {
			w.mix[c.entry].failed++ // a mix is never pipelined: pending is 1
		}
	}
	w.advance(c, now)
}

func (w *worker) closeConn(c *conn) {
	if c.fd >= 0 {
		_ = unix.Close(c.fd) // also removes it from the epoll set
		c.fd = -1
	}
	if c.tls != nil {
		c.tls.close()
		c.tls = nil
	}
	c.state = csIdle
	c.wantOut = false
	c.lastOK = 0
}

// advance ends c's current request and starts or schedules the next.
func (w *worker) advance(c *conn, now int64) {
	c.hasReq = false
	idx := int(c.idx)
	if w.closed {
		if c.retryAt > now {
			w.push(c.retryAt, idx)
			return
		}
		w.begin(c, now, now)
		return
	}
	t := c.sched.at(c.next)
	if t >= w.end {
		return
	}
	if c.retryAt > t {
		t = c.retryAt
	}
	if t <= now {
		w.beginNext(c, now)
		if w.mix != nil && c.measured && c.intended < now {
			// Due before the connection was free: it waited behind the
			// previous response (or a connect's back-off).
			w.mix[c.entry].queued++
		}
		return
	}
	w.push(t, idx)
}

// beginNext begins c's next scheduled request.
func (w *worker) beginNext(c *conn, now int64) {
	k := c.next
	c.next++
	w.begin(c, c.sched.at(k), now)
}

// fire begins the requests whose time has come. Each begins at a clock
// read of its own, so that a burst of due requests records when each one
// really went out (their writes take time), in its uncorrected latency and
// in the send lag.
func (w *worker) fire(now int64) {
	for {
		t, ok := w.timers.PopDue(now)
		if !ok {
			return
		}
		c := &w.conns[t.Item]
		if c.hasReq {
			continue
		}
		if w.closed {
			w.begin(c, now, now)
		} else {
			w.beginNext(c, now)
			if c.measured {
				latency.Record(w.sendLag, now-t.When)
			}
		}
		now = w.now()
	}
}

// housekeep fails requests and connects past their timeout and samples the
// request rate.
func (w *worker) housekeep(now int64) {
	w.nextHouse = now + int64(housekeeping)
	if w.iv.length > 0 {
		w.iv.rotate(now) // an interval without completions is logged too
	}
	for i := range w.conns {
		c := &w.conns[i]
		switch {
		case (c.state == csConnecting || c.state == csHandshaking) && now-c.connAt > w.timeout:
			w.fail(c, failConnect, now)
		case (c.state == csWriting || c.state == csReading) && now-c.sentAt > w.timeout:
			w.fail(c, failTimeout, now)
		}
	}
	if now >= w.measureAt && now-w.rateAt >= int64(rateSample) {
		w.rates = append(w.rates, float64(w.rateCount)*1e9/float64(now-w.rateAt))
		w.rateAt, w.rateCount = now, 0
	}
}

// finish accounts for what the end interrupted and closes every socket.
func (w *worker) finish(end int64) {
	for i := range w.conns {
		c := &w.conns[i]
		if c.hasReq && c.measured {
			if c.state == csWriting || c.state == csReading {
				w.c.inFlight += c.pending
			} else {
				w.c.notSent += c.pending
			}
		}
		if !w.closed {
			// Requests due before the end that never began.
			first := max(c.next, c.sched.countBefore(w.measureAt))
			if due := c.sched.countBefore(end); due > first {
				w.c.notSent += due - first
				w.c.intended += due - first
			}
		}
		w.closeConn(c)
	}
	if w.ep >= 0 {
		_ = unix.Close(w.ep)
		w.ep = -1
	}
	w.iv.finish(end)
}

// push schedules a start of conns[idx] at when.
func (w *worker) push(when int64, idx int) { w.timers.Push(when, int32(idx), nil) }
