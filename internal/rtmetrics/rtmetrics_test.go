package rtmetrics

import (
	"encoding/json"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

var inf = math.Inf(1)

// hist is a histogram over the boundaries -Inf, 0, 1, 2, 4, 8, +Inf.
func hist(counts ...uint64) Histogram {
	return Histogram{Counts: counts, Buckets: []float64{-inf, 0, 1, 2, 4, 8, inf}}
}

func TestHistogramSub(t *testing.T) {
	for _, tc := range []struct {
		name          string
		after, before Histogram
		want          []uint64
		err           string
	}{
		{"difference", hist(1, 5, 3, 0, 7, 2), hist(1, 2, 3, 0, 4, 0), []uint64{0, 3, 0, 0, 3, 2}, ""},
		{"no change", hist(1, 2, 0, 0, 0, 0), hist(1, 2, 0, 0, 0, 0), []uint64{0, 0, 0, 0, 0, 0}, ""},
		{"empty before", hist(0, 1, 0, 0, 0, 1), Histogram{}, []uint64{0, 1, 0, 0, 0, 1}, ""},
		{"went down", hist(0, 1, 0, 0, 0, 0), hist(0, 2, 0, 0, 0, 0), nil, "bucket 1 went down from 2 to 1"},
		{"other buckets", hist(0, 1, 0, 0, 0, 0), Histogram{Counts: []uint64{1}, Buckets: []float64{0, 1}}, nil, "buckets changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.after.Sub(tc.before)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Sub = %v, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got.Counts, tc.want) || !slices.Equal(got.Buckets, tc.after.Buckets) {
				t.Errorf("Sub = %v, %v; want counts %v", got, err, tc.want)
			}
		})
	}
}

func TestHistogramQuantile(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    Histogram
		q    float64
		want float64 // NaN: none
	}{
		{"median, upper bound", hist(0, 0, 10, 0, 0, 0), 0.5, 2},
		{"p99 of 100 in the last but one", hist(0, 99, 0, 0, 1, 0), 0.99, 1},
		{"p99 past the 99th", hist(0, 98, 0, 0, 2, 0), 0.99, 8},
		{"0.07 of 100 is the 7th, not the 8th", hist(0, 7, 93, 0, 0, 0), 0.07, 1},
		{"max", hist(0, 50, 0, 1, 0, 0), 1, 4},
		{"the (-Inf, 0] bucket", hist(3, 0, 0, 0, 0, 0), 0.5, 0},
		{"open last bucket: its lower bound", hist(0, 1, 0, 0, 0, 1), 1, 8},
		{"empty", hist(0, 0, 0, 0, 0, 0), 0.99, math.NaN()},
		{"zero histogram", Histogram{}, 0.5, math.NaN()},
		{"q 0", hist(0, 1, 0, 0, 0, 0), 0, math.NaN()},
		{"q over 1", hist(0, 1, 0, 0, 0, 0), 1.5, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.h.Quantile(tc.q)
			if math.IsNaN(tc.want) != math.IsNaN(got) || !math.IsNaN(got) && got != tc.want {
				t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

func TestHistogramJSON(t *testing.T) {
	h := hist(1, 0, 2, 0, 0, 3)
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"counts":[1,0,2,0,0,3],"buckets":[null,0,1,2,4,8,null]}`; string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	var back Histogram
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, h) {
		t.Errorf("read back %v, %v; want %v", back, err, h)
	}
	for _, tc := range []struct{ in, err string }{
		{`{"counts":[1],"buckets":[0,1,2]}`, "3 boundaries for 1 counts"},
		{`{"counts":[1,1],"buckets":[0,null,2]}`, "boundary 1 of 3 is null"},
		{`{"counts":[1,1],"buckets":[0,2,1]}`, "not above"},
		{`{"counts":[1],"buckets":[1,1]}`, "not above"},
		{`{"counts":"x"}`, "cannot unmarshal"},
	} {
		if err := json.Unmarshal([]byte(tc.in), &back); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want an error with %q", tc.in, err, tc.err)
		}
	}
	for _, empty := range []string{`null`, `{"counts":[],"buckets":[]}`, `{}`} {
		if err := json.Unmarshal([]byte(empty), &back); err != nil || len(back.Counts) != 0 || len(back.Buckets) != 0 {
			t.Errorf("%s: %v, %v; want an empty histogram", empty, back, err)
		}
	}
	if b, err := json.Marshal(Histogram{}); err != nil || string(b) != `{"counts":[],"buckets":[]}` {
		t.Errorf("empty histogram's JSON %s, %v", b, err)
	}
}

func FuzzHistogramJSON(f *testing.F) {
	f.Add([]byte(`{"counts":[1,0,2],"buckets":[null,0,1,null]}`))
	f.Add([]byte(`{"counts":[],"buckets":[]}`))
	f.Add([]byte(`{"counts":[1],"buckets":[0,null]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var h Histogram
		if json.Unmarshal(data, &h) != nil {
			return
		}
		if len(h.Counts) > 0 && len(h.Buckets) != len(h.Counts)+1 {
			t.Fatalf("%d boundaries for %d counts", len(h.Buckets), len(h.Counts))
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatalf("marshal %v: %v", h, err)
		}
		var back Histogram
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, h) {
			t.Fatalf("round trip of %s: %v, %v; want %v", b, back, err, h)
		}
		// Quantiles rise with q and stay within the boundaries.
		last := math.Inf(-1)
		for _, q := range []float64{0.01, 0.5, 0.99, 1} {
			v := h.Quantile(q)
			if h.Total() == 0 {
				if !math.IsNaN(v) {
					t.Fatalf("Quantile(%v) of an empty histogram = %v", q, v)
				}
				continue
			}
			if math.IsNaN(v) || v < last || v < h.Buckets[0] || v > h.Buckets[len(h.Buckets)-1] {
				t.Fatalf("Quantile(%v) = %v after %v, boundaries %v", q, v, last, h.Buckets)
			}
			last = v
		}
	})
}

// Read gives every metric, and a later snapshot's difference counts what
// happened in between: a forced GC is a cycle, forced, with a pause.
func TestReadSub(t *testing.T) {
	before, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	after, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	d, err := after.Sub(before)
	if err != nil {
		t.Fatal(err)
	}
	if d.GCCycles < 1 || d.GCCyclesForced < 1 || d.GCPauses.Total() < 1 || d.GCCPUSeconds < 0 || d.TotalCPUSeconds <= 0 ||
		d.GOMAXPROCS != uint64(runtime.GOMAXPROCS(0)) || len(d.SchedLatencies.Buckets) == 0 {
		t.Errorf("difference over a forced GC: %+v", d)
	}
	if got := d.GCPauses.Quantile(1); !(got > 0) {
		t.Errorf("max GC pause %v, want over 0", got)
	}
	// JSON keeps the runtime's names and every figure.
	b, err := json.Marshal(after)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range after.fields() {
		if !strings.Contains(string(b), `"`+f.name+`":`) {
			t.Errorf("JSON lacks %s", f.name)
		}
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, after) {
		t.Errorf("snapshot read back: %v", err)
	}
	// Snapshots of two processes (or taken in the wrong order).
	if _, err := before.Sub(after); err == nil || !strings.Contains(err.Error(), "went down") {
		t.Errorf("earlier minus later: %v, want went down", err)
	}
}
