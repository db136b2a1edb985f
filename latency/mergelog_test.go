package latency

import (
	"bytes"
	"testing"
	"time"
)

func TestMergeIntervals(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	iv := func(start time.Time, values ...int64) Interval {
		h := NewNs()
		for _, v := range values {
			RecordNs(h, v)
		}
		return Interval{Start: start, End: start.Add(time.Second), Histogram: h}
	}
	// Host b's clock is 2 s ahead: shifting by -2 s lines its intervals up.
	a := []Interval{iv(t0, 1e6, 2e6), iv(t0.Add(time.Second), 3e6)}
	b := []Interval{iv(t0.Add(2*time.Second), 5e6), iv(t0.Add(3*time.Second), 7e6, 9e6), iv(t0.Add(4*time.Second), 4e6)}
	m, err := MergeIntervals([][]Interval{a, b}, []time.Duration{0, -2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 {
		t.Fatalf("%d intervals, want 3", len(m))
	}
	for i, want := range []int64{3, 3, 1} {
		if got := m[i].Histogram.TotalCount(); got != want {
			t.Errorf("interval %d: %d values, want %d", i, got, want)
		}
		if wantStart := t0.Add(time.Duration(i) * time.Second); !m[i].Start.Equal(wantStart) || !m[i].End.Equal(wantStart.Add(time.Second)) {
			t.Errorf("interval %d: %v..%v, want from %v", i, m[i].Start, m[i].End, wantStart)
		}
	}
	// HDR buckets keep 3 significant digits: 9 ms reads back within its
	// bucket.
	if got := m[1].Histogram.Max(); got < 8.99e6 || got > 9.01e6 {
		t.Errorf("interval 2 max %d ns, want 9 ms", got)
	}
	// The merge writes and reads back as an interval log.
	var buf bytes.Buffer
	log := NewIntervalLog(&buf)
	for _, x := range m {
		if err := log.Write(x.Start, x.End, x.Histogram); err != nil {
			t.Fatal(err)
		}
	}
	back, err := ReadIntervalLog(&buf)
	if err != nil || len(back) != 3 || back[1].Histogram.TotalCount() != 3 {
		t.Errorf("read back %d intervals, %v", len(back), err)
	}
	if _, err := MergeIntervals([][]Interval{a}, nil); err == nil {
		t.Error("shifts missing: no error")
	}
}
