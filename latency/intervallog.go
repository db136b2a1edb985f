package latency

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Interval logs (.hlog): a histogram per interval of a run, in HdrHistogram's
// log format, written and read with hdrhistogram-go's log writer and reader.
// The HdrHistogram tools (HistogramLogProcessor, HistogramLogAnalyzer,
// hdr-plot) read it; by their convention the values are in nanoseconds (the
// writer's Interval_Max column divides by 1e6 to print milliseconds), so the
// interval histograms hold nanoseconds, unlike the µs of New. Their range and
// precision match New's: 1 µs to 1 hour, 3 significant digits.

// ErrBadIntervalLog is wrapped by every error reading an interval log.
var ErrBadIntervalLog = errors.New("bad interval log")

// NewNs returns an empty interval histogram (ns, 1 µs to 1 h, 3 digits).
func NewNs() *Histogram {
	return hdr.New(LowestUs*int64(time.Microsecond), HighestUs*int64(time.Microsecond), SigFigs)
}

// RecordNs adds one latency in nanoseconds to an interval histogram,
// clamped to its range as Record clamps.
func RecordNs(h *Histogram, ns int64) {
	ns = min(max(ns, LowestUs*int64(time.Microsecond)), HighestUs*int64(time.Microsecond))
	_ = h.RecordValue(ns) // cannot fail: ns is within the histogram's range
}

// IntervalLog writes interval histograms to an .hlog file.
type IntervalLog struct {
	w       io.Writer
	lw      *hdr.HistogramLogWriter
	started bool
}

// NewIntervalLog returns a log writing to w. Nothing is written before the
// first interval.
func NewIntervalLog(w io.Writer) *IntervalLog {
	return &IntervalLog{w: w, lw: hdr.NewHistogramLogWriter(w)}
}

// Write logs h (nanoseconds: NewNs) as the interval from start to end. The
// first call writes the header, with start as the log's start and base
// time: the intervals' timestamps are then seconds since the first began.
func (l *IntervalLog) Write(start, end time.Time, h *Histogram) error {
	if !l.started {
		l.started = true
		ms := start.UnixMilli()
		l.lw.SetBaseTime(ms)
		for _, err := range []error{
			l.lw.OutputLogFormatVersion(),
			l.lw.OutputComment("[spindle load: corrected latency per interval, in nanoseconds]"),
			l.lw.OutputStartTime(ms),
			l.lw.OutputBaseTime(ms),
			l.lw.OutputLegend(),
		} {
			if err != nil {
				return fmt.Errorf("write interval log: %w", err)
			}
		}
	}
	h.SetStartTimeMs(start.UnixMilli())
	h.SetEndTimeMs(end.UnixMilli())
	if err := l.lw.OutputIntervalHistogram(h); err != nil {
		return fmt.Errorf("write interval log: %w", err)
	}
	return nil
}

// Interval is one histogram of an interval log.
type Interval struct {
	Start, End time.Time  // millisecond precision, as the log format keeps them
	Histogram  *Histogram // nanoseconds
}

// maxLogLine bounds what ReadIntervalLog accepts: a histogram line of a
// 1 µs..1 h histogram is at most a few hundred kB (every bucket non-zero),
// far below it; a longer line is not a histogram this package wrote.
const maxLogLine = 16 << 20

// ReadIntervalLog reads every interval of an interval log with
// hdrhistogram-go's reader.
func ReadIntervalLog(r io.Reader) ([]Interval, error) {
	lr := hdr.NewHistogramLogReader(&limitedLines{r: r})
	var out []Interval
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			return out, fmt.Errorf("%w: interval %d: %v", ErrBadIntervalLog, len(out)+1, err)
		}
		if h == nil {
			return out, nil
		}
		start, end := h.StartTimeMs(), h.EndTimeMs()
		if end < start || start < 0 || end > math.MaxInt64/int64(time.Millisecond) {
			return out, fmt.Errorf("%w: interval %d: bad times %d..%d ms", ErrBadIntervalLog, len(out)+1, start, end)
		}
		out = append(out, Interval{Start: time.UnixMilli(start), End: time.UnixMilli(end), Histogram: h})
	}
}

// limitedLines fails a read once maxLogLine bytes came without a newline,
// so that a file that is not a log cannot make the reader buffer without
// bound.
type limitedLines struct {
	r   io.Reader
	run int // bytes since the last newline
}

func (l *limitedLines) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			l.run = 0
		} else if l.run++; l.run > maxLogLine {
			return 0, fmt.Errorf("a line longer than %d bytes", maxLogLine)
		}
	}
	return n, err
}
