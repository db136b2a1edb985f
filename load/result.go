package load

import (
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/slo"
)

// SchemaVersion is Result's schema_version: raised when a field changes
// meaning or goes away (adding one does not raise it). Results written before
// versioning read as 0.
const SchemaVersion = 1

// Result is the outcome of a run, written by spindle load --json. Field
// names are stable (snake_case); latencies are in microseconds.
//
// Accounting: Intended = Completed + Failed + InFlight + NotSent, exactly.
// Completed = the sum of ByStatus; Failed = the sum of Errors. Only requests
// whose intended send time falls in the measured window (after the warm-up)
// are counted; warm-up requests are counted in Warmup alone.
type Result struct {
	// SchemaVersion is SchemaVersion when written by this version.
	SchemaVersion int       `json:"schema_version"`
	Config        Config    `json:"config"`
	Start         time.Time `json:"start"`      // start of the run (warm-up included), UTC
	DurationS     float64   `json:"duration_s"` // measured window actually run, seconds
	// Intended is the number of requests the run intended to send in the
	// measured window: at a fixed rate, every scheduled send time before the
	// end; closed loop, every request a connection began.
	Intended  int64        `json:"intended"`
	Completed int64        `json:"completed"` // responses received
	ByStatus  StatusCounts `json:"by_status"` // completed, by status class
	Failed    int64        `json:"failed"`    // requests that failed
	Errors    ErrorCounts  `json:"errors"`    // failed, by kind
	// InFlight counts requests sent whose response had not fully arrived
	// when the run ended.
	InFlight int64 `json:"in_flight"`
	// NotSent counts intended requests not sent by the end: their
	// connection was still busy, waiting to reconnect, or connecting.
	NotSent int64 `json:"not_sent"`
	// Sent counts requests written (completed + in flight + failed after
	// the write).
	Sent      int64 `json:"sent"`
	BytesRead int64 `json:"bytes_read"` // response bytes of the measured window
	Warmup    int64 `json:"warmup_requests"`
	// AchievedRate is Completed per second of the measured window.
	AchievedRate float64 `json:"achieved_rate"`
	// TransferRate is BytesRead per second of the measured window.
	TransferRate float64 `json:"transfer_bytes_per_s"`
	// ThreadReqPerSec summarizes each thread's completions per second,
	// sampled every 100 ms (wrk's "Req/Sec" thread statistic).
	ThreadReqPerSec RateStats `json:"thread_req_per_s"`
	// Corrected latency runs from the intended send time (coordinated
	// omission corrected); Uncorrected from the actual send. They are the
	// same closed loop, where a request is intended when it is sent.
	Corrected   latency.Summary `json:"corrected"`
	Uncorrected latency.Summary `json:"uncorrected"`
	// SendLag says whether the generator itself kept the schedule (fixed
	// rate only; absent closed loop): for each measured request whose
	// connection was free at its intended send time, how late the thread
	// began it, in µs (values under 1 µs are recorded as 1 µs). A request
	// whose connection was still busy then (its previous response not back:
	// the server's delay, which the corrected latency accounts for) is not
	// in it, so a slow server does not make the generator look late; a
	// thread that waited for a CPU, or had more to do than it could at
	// once, does.
	SendLag *latency.Summary `json:"send_lag,omitempty"`
	// SLO holds the outcomes of spindle load --slo, checked at the end
	// (absent without --slo).
	SLO []slo.Outcome `json:"slo,omitempty"`
	// TLS describes the TLS handshakes of an https run (absent for http).
	TLS *TLSResult `json:"tls,omitempty"`
	// Mix has each request mix entry's figures, in the order of
	// Options.Mix (absent without a mix). Their sent, completed and failed
	// requests add up to the totals above.
	Mix []MixResult `json:"mix,omitempty"`
	// HostSteal is the time this host's hypervisor took from its CPUs in
	// the measured window, sampled every StealSample; its NA says why
	// there is none (no /proc/stat). Absent from results written before
	// it existed.
	HostSteal *HostSteal `json:"host_steal,omitempty"`
}

// TLSResult is the TLS part of an https run. Handshakes are counted over the
// whole run, set-up and warm-up included (most connections shake hands
// before the measured window), and their time is not part of any request's
// uncorrected latency; a request that waited for its connection's handshake
// has it in its corrected latency, as it would a connect.
type TLSResult struct {
	Min      string `json:"min_version"` // "1.2" or "1.3"
	Max      string `json:"max_version"`
	SNI      string `json:"sni"`      // the server name set with --sni; empty: the URL's host
	Insecure bool   `json:"insecure"` // certificate verification skipped
	Resume   bool   `json:"resume"`   // session resumption enabled
	// Handshakes counts completed handshakes; TLS12 and TLS13 split them
	// by negotiated version.
	Handshakes int64 `json:"handshakes"`
	TLS12      int64 `json:"tls12"`
	TLS13      int64 `json:"tls13"`
	// Resumed counts the completed handshakes that resumed a session.
	Resumed int64 `json:"resumed"`
	// HandshakeErrors counts handshakes that failed or timed out.
	HandshakeErrors int64 `json:"handshake_errors"`
	// Handshake is the distribution of handshake times, from TCP
	// connected to handshake done, in µs.
	Handshake latency.Summary `json:"handshake"`
}

// Config echoes the options of the run.
type Config struct {
	URL         string   `json:"url"`
	Threads     int      `json:"threads"`
	Connections int      `json:"connections"`
	DurationS   float64  `json:"duration_s"`
	WarmupS     float64  `json:"warmup_s"`
	Rate        float64  `json:"rate"` // intended requests/s; 0: closed loop
	TimeoutS    float64  `json:"timeout_s"`
	Method      string   `json:"method"`
	Headers     []string `json:"headers"`
	BodyBytes   int      `json:"body_bytes"`
	CPUs        string   `json:"cpus"`               // pinned CPU list; empty: not pinned
	Pipeline    int      `json:"pipeline,omitempty"` // requests a connection sends at once (closed loop); 0: 1
}

// StatusCounts counts responses by status class.
type StatusCounts struct {
	C1xx  int64 `json:"1xx"`
	C2xx  int64 `json:"2xx"`
	C3xx  int64 `json:"3xx"`
	C4xx  int64 `json:"4xx"`
	C5xx  int64 `json:"5xx"`
	Other int64 `json:"other"` // 600-999
}

// Total is the number of responses.
func (s StatusCounts) Total() int64 { return s.C1xx + s.C2xx + s.C3xx + s.C4xx + s.C5xx + s.Other }

// ErrorCounts counts failed requests by kind.
type ErrorCounts struct {
	Connect int64 `json:"connect"` // connection refused, reset or timed out while connecting
	Read    int64 `json:"read"`    // connection failed or closed before the response completed
	Write   int64 `json:"write"`   // the request could not be written
	Timeout int64 `json:"timeout"` // no complete response within the timeout
	Parse   int64 `json:"parse"`   // malformed response
	// ParseLate counts, of Parse, the responses found malformed only after
	// they completed: more body bytes than their Content-Length arrived in
	// a later read, before the next request began. Their latencies are in
	// the histograms (a histogram cannot take a value back), so the
	// histograms' count is Completed+ParseLate. Not added again by Total.
	ParseLate int64 `json:"parse_late,omitempty"`
}

// Total is the number of failed requests.
func (e ErrorCounts) Total() int64 { return e.Connect + e.Read + e.Write + e.Timeout + e.Parse }

// RateStats summarizes rate samples (requests/s).
type RateStats struct {
	Samples     int     `json:"samples"`
	Mean        float64 `json:"mean"`
	StdDev      float64 `json:"stdev"`
	Max         float64 `json:"max"`
	WithinStdev float64 `json:"within_stdev"` // percent of samples within one stdev
}

func summarizeRates(xs []float64) RateStats {
	s := RateStats{Samples: len(xs)}
	if len(xs) == 0 {
		return s
	}
	for _, x := range xs {
		s.Mean += x
		s.Max = math.Max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.StdDev = math.Sqrt(ss / float64(len(xs)-1))
	}
	within := 0
	for _, x := range xs {
		if x >= s.Mean-s.StdDev && x <= s.Mean+s.StdDev {
			within++
		}
	}
	s.WithinStdev = 100 * float64(within) / float64(len(xs))
	return s
}

// Check verifies the accounting identities; a Result read from a file that
// fails them was edited or truncated.
func (r *Result) Check() error {
	if got := r.Completed + r.Failed + r.InFlight + r.NotSent; got != r.Intended {
		return fmt.Errorf("accounting: completed %d + failed %d + in flight %d + not sent %d = %d, intended %d",
			r.Completed, r.Failed, r.InFlight, r.NotSent, got, r.Intended)
	}
	if r.ByStatus.Total() != r.Completed {
		return fmt.Errorf("accounting: status classes sum to %d, completed %d", r.ByStatus.Total(), r.Completed)
	}
	if r.Errors.Total() != r.Failed {
		return fmt.Errorf("accounting: error kinds sum to %d, failed %d", r.Errors.Total(), r.Failed)
	}
	return r.checkMix()
}

// ReadResult reads a Result written by spindle load --json and checks its
// accounting.
func ReadResult(path string) (*Result, error) {
	var r Result
	if err := latency.ReadJSONFile(path, &r); err != nil {
		return nil, err
	}
	if err := r.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// WriteText writes r in wrk2's layout. withLatency adds the corrected latency
// distribution and spectrum (wrk2's --latency), withUncorrected the
// uncorrected one as well (wrk2's -U).
func (r *Result) WriteText(w io.Writer, withLatency, withUncorrected bool) error {
	corrected, err := r.Corrected.Decode()
	if err != nil {
		return err
	}
	ew := &errWriter{w: w}
	ew.printf("  Thread Stats%6s%11s%8s%12s\n", "Avg", "Stdev", "Max", "+/- Stdev")
	if r.Corrected.Count == 0 {
		ew.printf("    %-10s%s\n", "Latency", latency.NoLatency)
	} else {
		ew.printf("    %-10s%s%s%s%8.2f%%\n", "Latency",
			latency.Units(latency.FormatTimeUs(r.Corrected.MeanUs), 8),
			latency.Units(latency.FormatTimeUs(r.Corrected.StdDevUs), 10),
			latency.Units(latency.FormatTimeUs(float64(r.Corrected.MaxUs)), 9),
			r.Corrected.WithinStdev)
	}
	q := r.ThreadReqPerSec
	if q.Samples == 0 {
		ew.printf("    %-10sn/a (no %v rate sample in the %v window)\n", "Req/Sec", rateSample, r.window())
	} else {
		ew.printf("    %-10s%s%s%s%8.2f%%\n", "Req/Sec",
			latency.Units(latency.FormatMetric(q.Mean), 8),
			latency.Units(latency.FormatMetric(q.StdDev), 10),
			latency.Units(latency.FormatMetric(q.Max), 9),
			q.WithinStdev)
	}
	if withLatency || withUncorrected {
		if ew.err == nil {
			ew.err = latency.WriteDistribution(w, corrected, "Recorded Latency")
		}
		ew.printf("----------------------------------------------------------\n")
	}
	if withUncorrected {
		uncorrected, err := r.Uncorrected.Decode()
		if err != nil {
			return err
		}
		ew.printf("\n")
		if ew.err == nil {
			ew.err = latency.WriteDistribution(w, uncorrected,
				"Uncorrected Latency (measured without taking delayed starts into account)")
		}
		ew.printf("----------------------------------------------------------\n")
	}
	ew.printf("  %d requests in %s, %sB read\n", r.Completed,
		latency.FormatTimeUs(r.DurationS*1e6), latency.FormatBinary(float64(r.BytesRead)))
	if r.SendLag != nil {
		ew.printf("  %s\n", r.SendLagLine())
	}
	if r.HostSteal != nil {
		ew.printf("  %s\n", r.HostStealLine())
	}
	e := r.Errors
	if e.Connect+e.Read+e.Write+e.Timeout > 0 {
		ew.printf("  Socket errors: connect %d, read %d, write %d, timeout %d\n", e.Connect, e.Read, e.Write, e.Timeout)
	}
	if e.Parse > 0 {
		ew.printf("  Malformed responses: %d\n", e.Parse)
		if e.ParseLate > 0 {
			ew.printf("  (of which %d had their extra body bytes arrive after the response, their latencies recorded)\n", e.ParseLate)
		}
	}
	if n := r.Completed - r.ByStatus.C2xx - r.ByStatus.C3xx; n > 0 {
		ew.printf("  Non-2xx or 3xx responses: %d\n", n)
	}
	if r.InFlight+r.NotSent > 0 {
		ew.printf("  Unfinished: %d in flight, %d not sent (of %d intended)\n", r.InFlight, r.NotSent, r.Intended)
	}
	if t := r.TLS; t != nil {
		ew.printf("  TLS handshakes: %d (1.2: %d, 1.3: %d, resumed %d), failed %d", t.Handshakes, t.TLS12, t.TLS13, t.Resumed, t.HandshakeErrors)
		if t.Handshake.Count > 0 {
			ew.printf(", avg %s, p99 %s, max %s",
				latency.FormatTimeUs(t.Handshake.MeanUs),
				latency.FormatTimeUs(float64(t.Handshake.PercentilesUs[latency.PercentileKey(99)])),
				latency.FormatTimeUs(float64(t.Handshake.MaxUs)))
		}
		ew.printf("\n")
	}
	if r.Completed == 0 && r.window() < rateSample {
		// A window this short cannot hold a request: 0 would be no figure.
		na := fmt.Sprintf("n/a (no request completed in the %v window)", r.window())
		ew.printf("Requests/sec: %s\nTransfer/sec: %s\n", na, na)
	} else {
		ew.printf("Requests/sec: %9.2f\n", r.AchievedRate)
		ew.printf("Transfer/sec: %10sB\n", latency.FormatBinary(r.TransferRate))
	}
	r.writeMix(ew)
	return ew.err
}

// window is the measured window.
func (r *Result) window() time.Duration { return time.Duration(r.DurationS * float64(time.Second)) }

// SendLagLine describes the send lag in one line of the wrk2 layout's
// footer: "Send lag: p50 4us, p99 38us, p99.9 120us, max 1.20ms (29,870
// scheduled sends)"; "" closed loop.
func (r *Result) SendLagLine() string {
	l := r.SendLag
	if l == nil {
		return ""
	}
	if l.Count == 0 {
		return "Send lag: no scheduled send in the window"
	}
	p := func(q float64) string {
		return latency.FormatTimeUs(float64(l.PercentilesUs[latency.PercentileKey(q)]))
	}
	return fmt.Sprintf("Send lag: p50 %s, p99 %s, p99.9 %s, max %s (%d scheduled sends)",
		p(50), p(99), p(99.9), latency.FormatTimeUs(float64(l.MaxUs)), l.Count)
}

// WriteHgrm writes the corrected and uncorrected spectra to
// PREFIX.corrected.hgrm and PREFIX.uncorrected.hgrm.
func (r *Result) WriteHgrm(prefix string) error {
	for _, part := range []struct {
		name string
		s    latency.Summary
	}{{"corrected", r.Corrected}, {"uncorrected", r.Uncorrected}} {
		h, err := part.s.Decode()
		if err != nil {
			return err
		}
		path := prefix + "." + part.name + ".hgrm"
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := latency.WriteSpectrum(f, h); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// errWriter keeps the first write error so a report can be printed without
// checking every line.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// SLOFigures returns the figures --slo thresholds are checked against:
// corrected latency, the achieved rate, and as errors the failed requests
// plus the responses that are neither 2xx nor 3xx, out of every request
// that completed or failed.
func (r *Result) SLOFigures() (slo.Figures, error) { return SLOFiguresOf(r) }

// SLOFiguresOf returns the figures of several runs of one configuration
// (a comparison's rounds) taken together: latency from their corrected
// histograms merged, errors and requests summed, and as the rate the mean
// of their achieved rates. With one run it is that run's SLOFigures.
func SLOFiguresOf(rs ...*Result) (slo.Figures, error) {
	var (
		f    slo.Figures
		sums = make([]latency.Summary, len(rs))
		rate float64
	)
	for i, r := range rs {
		sums[i] = r.Corrected
		f.Requests += r.Completed + r.Failed
		f.Errors += r.Failed + r.Completed - r.ByStatus.C2xx - r.ByStatus.C3xx
		rate += r.AchievedRate
	}
	if len(rs) == 0 {
		return f, nil
	}
	h, err := latency.MergeSummaries(sums...)
	if err != nil {
		return slo.Figures{}, err
	}
	f.Latency = func(p float64) time.Duration {
		return time.Duration(h.ValueAtPercentile(p)) * time.Microsecond
	}
	f.MeanLatency = time.Duration(h.Mean() * float64(time.Microsecond))
	f.LatencyCount = h.TotalCount()
	f.RPS = rate / float64(len(rs))
	return f, nil
}
