package latency

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

func TestIntervalLogRoundTrip(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	// Three 1 s intervals: ordinary, empty (a stall), and a slow one.
	samples := [][]int64{
		{150_000, 200_000, 210_000, 1_500_000},
		nil,
		{900 * int64(time.Millisecond), 2 * int64(time.Second), 500}, // 500 ns: clamped to 1 µs
	}
	var buf bytes.Buffer
	l := NewIntervalLog(&buf)
	var want []*Histogram
	for i, ss := range samples {
		h := NewNs()
		for _, ns := range ss {
			RecordNs(h, ns)
		}
		want = append(want, h)
		from := start.Add(time.Duration(i) * time.Second)
		if err := l.Write(from, from.Add(time.Second), h); err != nil {
			t.Fatal(err)
		}
	}
	text := buf.String()
	epoch := strconv.FormatInt(start.Unix(), 10)
	for _, w := range []string{"#[Histogram log format version 1.3]", "#[StartTime: " + epoch + " (seconds since epoch), 2026-12-01T10:00:00Z]",
		"#[BaseTime: " + epoch + " (seconds since epoch)]", "\"StartTimestamp\",\"Interval_Length\"", "\n0.000000,1.000000,1.500159,HIST",
		"\n2.000000,1.000000,2000.683007,HIST"} {
		if !strings.Contains(text, w) {
			t.Errorf("log lacks %q:\n%s", w, text)
		}
	}

	// hdrhistogram-go's reader, directly and through ReadIntervalLog.
	lr := hdr.NewHistogramLogReader(strings.NewReader(text))
	for i := range samples {
		h, err := lr.NextIntervalHistogram()
		if err != nil || h == nil {
			t.Fatalf("hdr reader, interval %d: %v, %v", i, h, err)
		}
		if !h.Equals(want[i]) {
			t.Errorf("hdr reader, interval %d: histogram differs", i)
		}
	}
	got, err := ReadIntervalLog(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(samples) {
		t.Fatalf("read %d intervals, wrote %d", len(got), len(samples))
	}
	for i, iv := range got {
		from := start.Add(time.Duration(i) * time.Second)
		if !iv.Start.Equal(from) || !iv.End.Equal(from.Add(time.Second)) {
			t.Errorf("interval %d: %s..%s, want %s..%s", i, iv.Start, iv.End, from, from.Add(time.Second))
		}
		if iv.Histogram.TotalCount() != int64(len(samples[i])) || !iv.Histogram.Equals(want[i]) {
			t.Errorf("interval %d: %d values, want %d", i, iv.Histogram.TotalCount(), len(samples[i]))
		}
	}
	if min := got[2].Histogram.Min(); !got[2].Histogram.ValuesAreEquivalent(min, 1000) {
		t.Errorf("500 ns read back as min %d ns, want the clamp to 1000", min)
	}
	if p := got[0].Histogram.ValueAtPercentile(50); p < 199_000 || p > 201_000 {
		t.Errorf("p50 of the first interval %d ns, want 200 µs within 3 digits", p)
	}
}

func TestReadIntervalLogErrors(t *testing.T) {
	for _, in := range []string{
		"0.0,1.0,1.0,HISTnotbase64!\n",
		"0.0,1.0,1.0," + strings.Repeat("A", maxLogLine+1),
	} {
		if _, err := ReadIntervalLog(strings.NewReader(in)); !errors.Is(err, ErrBadIntervalLog) {
			t.Errorf("ReadIntervalLog(%.40q): %v, want ErrBadIntervalLog", in, err)
		}
	}
	got, err := ReadIntervalLog(strings.NewReader("#just a comment\n"))
	if err != nil || len(got) != 0 {
		t.Errorf("a log without intervals: %v, %v", got, err)
	}
}

func FuzzReadIntervalLog(f *testing.F) {
	var buf bytes.Buffer
	h := NewNs()
	RecordNs(h, 123456)
	NewIntervalLog(&buf).Write(time.Unix(1, 0), time.Unix(2, 0), h)
	f.Add(buf.String())
	f.Add("Tag=x,0.1,0.2,0.3,HISTFAAAAB\n")
	f.Add("#[StartTime: 99999999999999999999999]\n1,1,1,x")
	f.Fuzz(func(t *testing.T, s string) {
		ivs, err := ReadIntervalLog(strings.NewReader(s))
		if err != nil && !errors.Is(err, ErrBadIntervalLog) {
			t.Fatalf("error %v does not wrap ErrBadIntervalLog", err)
		}
		for _, iv := range ivs {
			if iv.Histogram == nil || iv.End.Before(iv.Start) {
				t.Fatalf("bad interval %+v", iv)
			}
		}
	})
}
