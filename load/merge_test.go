package load

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/latency"
)

// part builds a checked result whose latencies are values (µs).
func part(t *testing.T, conns int, start time.Time, dur float64, values []int64, failed int64, rates []float64) *Result {
	t.Helper()
	h := latency.New()
	u := latency.New()
	for _, v := range values {
		h.RecordValue(v)
		u.RecordValue(v / 2)
	}
	cs, err := latency.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	us, err := latency.Summarize(u)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(values))
	r := &Result{SchemaVersion: SchemaVersion, Config: Config{URL: "http://s/fruits", Threads: 2, Connections: conns, Rate: 1000},
		Start: start, DurationS: dur, Intended: n + failed + 3, Completed: n, ByStatus: StatusCounts{C2xx: n - 1, C5xx: 1},
		Failed: failed, Errors: ErrorCounts{Timeout: failed}, InFlight: 1, NotSent: 2, Sent: n + failed + 1,
		BytesRead: 600 * n, AchievedRate: float64(n) / dur, TransferRate: 600 * float64(n) / dur,
		ThreadReqPerSec: summarizeRates(rates), Corrected: cs, Uncorrected: us}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := part(t, 50, t0.Add(time.Millisecond), 1.0, []int64{100, 200, 300, 4000}, 2, []float64{10, 20, 30})
	b := part(t, 50, t0, 1.2, []int64{150, 250, 90000}, 0, []float64{40, 50})
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Corrected.Count != a.Corrected.Count+b.Corrected.Count || m.Uncorrected.Count != a.Uncorrected.Count+b.Uncorrected.Count {
		t.Errorf("merged counts %d/%d, want the sums", m.Corrected.Count, m.Uncorrected.Count)
	}
	if m.Completed != 7 || m.Intended != a.Intended+b.Intended || m.Failed != 2 || m.ByStatus.C5xx != 2 || m.Sent != a.Sent+b.Sent {
		t.Errorf("merged accounting %+v", m)
	}
	if err := m.Check(); err != nil {
		t.Errorf("merged result fails its accounting: %v", err)
	}
	if m.SendLag != nil {
		t.Errorf("merged a send lag no part has: %+v", m.SendLag)
	}
	a.SendLag, b.SendLag = &a.Uncorrected, &b.Uncorrected
	if m, err = Merge(a, b); err != nil {
		t.Fatal(err)
	}
	if m.SendLag == nil || m.SendLag.Count != a.Uncorrected.Count+b.Uncorrected.Count || m.SendLag.MaxUs != b.Uncorrected.MaxUs {
		t.Errorf("merged send lag %+v, want both parts' %d values, max %d", m.SendLag, a.Uncorrected.Count+b.Uncorrected.Count, b.Uncorrected.MaxUs)
	}
	b.SendLag = nil // a closed-loop part: no send lag to merge
	if m, err = Merge(a, b); err != nil || m.SendLag != nil {
		t.Errorf("merged a send lag of one part of two: %+v (%v)", m.SendLag, err)
	}
	if m.Config.Connections != 100 || m.Config.Threads != 4 || m.Config.Rate != 2000 {
		t.Errorf("merged config %+v", m.Config)
	}
	if !m.Start.Equal(t0) || m.DurationS != 1.2 || m.AchievedRate != a.AchievedRate+b.AchievedRate {
		t.Errorf("merged start %v, window %v, rate %v", m.Start, m.DurationS, m.AchievedRate)
	}
	// Lossless: the merged histogram is the one a single generator would
	// have recorded.
	all := latency.New()
	for _, v := range []int64{100, 200, 300, 4000, 150, 250, 90000} {
		all.RecordValue(v)
	}
	for _, p := range []float64{50, 90, 99, 100} {
		mh, _ := m.Corrected.Decode()
		if got, want := mh.ValueAtPercentile(p), all.ValueAtPercentile(p); got != want {
			t.Errorf("p%v = %d, want %d", p, got, want)
		}
	}
	if m.Corrected.MaxUs != all.Max() || m.Corrected.MinUs != all.Min() {
		t.Errorf("merged min/max %d/%d, want %d/%d", m.Corrected.MinUs, m.Corrected.MaxUs, all.Min(), all.Max())
	}
	// Pooled thread rates equal those of all the samples together.
	want := summarizeRates([]float64{10, 20, 30, 40, 50})
	got := m.ThreadReqPerSec
	if got.Samples != want.Samples || math.Abs(got.Mean-want.Mean) > 1e-9 || math.Abs(got.StdDev-want.StdDev) > 1e-9 || got.Max != want.Max {
		t.Errorf("pooled rates %+v, want %+v", got, want)
	}
}

func TestMergeBad(t *testing.T) {
	if _, err := Merge(); err == nil {
		t.Error("no parts: no error")
	}
	if _, err := Merge(nil); err == nil {
		t.Error("nil part: no error")
	}
	bad := part(t, 1, time.Now(), 1, []int64{100}, 0, nil)
	bad.Completed++ // accounting broken
	if _, err := Merge(bad); err == nil || !strings.Contains(err.Error(), "accounting") {
		t.Errorf("broken part: %v", err)
	}
	garbled := part(t, 1, time.Now(), 1, []int64{100}, 0, nil)
	garbled.Corrected.Histogram = "not base64!"
	if _, err := Merge(garbled); err == nil {
		t.Error("garbled histogram: no error")
	}
}

func TestMergeTLS(t *testing.T) {
	a := part(t, 1, time.Now(), 1, []int64{100}, 0, nil)
	b := part(t, 1, time.Now(), 1, []int64{100}, 0, nil)
	hs := latency.New()
	hs.RecordValue(500)
	s, _ := latency.Summarize(hs)
	a.TLS = &TLSResult{Min: "1.2", Max: "1.3", Handshakes: 3, TLS13: 3, Resumed: 1, Handshake: s}
	b.TLS = &TLSResult{Min: "1.2", Max: "1.3", Handshakes: 2, TLS12: 2, HandshakeErrors: 1, Handshake: s}
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if m.TLS == nil || m.TLS.Handshakes != 5 || m.TLS.TLS12 != 2 || m.TLS.TLS13 != 3 || m.TLS.Resumed != 1 ||
		m.TLS.HandshakeErrors != 1 || m.TLS.Handshake.Count != 2 {
		t.Errorf("merged TLS %+v", m.TLS)
	}
	if m2, _ := Merge(part(t, 1, time.Now(), 1, []int64{1}, 0, nil)); m2.TLS != nil {
		t.Error("http parts merged into a TLS result")
	}
}

// withMix splits part r (built from values) into two mix entries: the
// first value, the 5xx, is /block's; the rest and the failures /fruits'.
func withMix(t *testing.T, r *Result, values []int64) *Result {
	t.Helper()
	sum := func(vs []int64) latency.Summary {
		h := latency.New()
		for _, v := range vs {
			h.RecordValue(v)
		}
		s, err := latency.Summarize(h)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	n := int64(len(values))
	r.Mix = []MixResult{
		{Target: "/fruits", Weight: 95, Sent: r.Sent - 1, Completed: n - 1, ByStatus: StatusCounts{C2xx: n - 1}, Failed: r.Failed,
			Queued: 2, Corrected: sum(values[1:]), Uncorrected: sum(values[1:])},
		{Target: "/block?d=20ms", Weight: 5, Sent: 1, Completed: 1, ByStatus: StatusCounts{C5xx: 1},
			Corrected: sum(values[:1]), Uncorrected: sum(values[:1])},
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	return r
}

// The entries of a mix merge as the totals: counts add up, histograms
// merge without loss; parts that ran other mixes do not merge.
func TestMergeMix(t *testing.T) {
	av, bv := []int64{20000, 200, 300, 4000}, []int64{21000, 250, 90000}
	a := withMix(t, part(t, 50, time.Now(), 1, av, 2, nil), av)
	b := withMix(t, part(t, 50, time.Now(), 1, bv, 0, nil), bv)
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Mix) != 2 {
		t.Fatalf("merged mix %+v", m.Mix)
	}
	f, blk := m.Mix[0], m.Mix[1]
	if f.Target != "/fruits" || f.Weight != 95 || f.Sent != a.Mix[0].Sent+b.Mix[0].Sent || f.Completed != 5 ||
		f.ByStatus.C2xx != 5 || f.Failed != 2 || f.Queued != 4 || f.Corrected.Count != 5 || f.Corrected.MaxUs != b.Mix[0].Corrected.MaxUs {
		t.Errorf("merged /fruits %+v", f)
	}
	if blk.Completed != 2 || blk.ByStatus.C5xx != 2 || blk.Sent != 2 || blk.Uncorrected.Count != 2 || blk.Corrected.MinUs != 20000 {
		t.Errorf("merged /block %+v", blk)
	}
	want := latency.New()
	want.RecordValue(20000)
	want.RecordValue(21000)
	if h, _ := blk.Corrected.Decode(); h.ValueAtPercentile(50) != want.ValueAtPercentile(50) || blk.Corrected.MaxUs != want.Max() {
		t.Errorf("merged /block p50 %d, max %d; want %d, %d", h.ValueAtPercentile(50), blk.Corrected.MaxUs, want.ValueAtPercentile(50), want.Max())
	}

	plain := part(t, 50, time.Now(), 1, bv, 0, nil)
	other := withMix(t, part(t, 50, time.Now(), 1, bv, 0, nil), bv)
	other.Mix[1].Weight = 6
	for name, p := range map[string]*Result{"no mix": plain, "other weights": other} {
		if _, err := Merge(a, p); err == nil || !strings.Contains(err.Error(), "another request mix") {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
	if m, err := Merge(plain, plain); err != nil || m.Mix != nil {
		t.Errorf("parts without a mix merged to %+v, %v", m.Mix, err)
	}
	broken := withMix(t, part(t, 50, time.Now(), 1, bv, 0, nil), bv)
	broken.Mix[0].Completed--
	broken.Mix[0].ByStatus.C2xx--
	if err := broken.Check(); err == nil || !strings.Contains(err.Error(), "mix entries sum to") {
		t.Errorf("entries that do not add up to the totals: %v", err)
	}
}

// Merge keeps the host steal of the part that lost the most in one sample,
// whole (its own per-CPU figures, not added to another host's), and says of
// how many parts and how many had none.
func TestMergeHostSteal(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	small := &HostSteal{Samples: 10, SampleMs: 100, TotalMs: 90, PerCPUMs: map[int]int64{0: 50, 1: 40}, MaxMs: 30, MaxCPU: 0, MaxSampleMs: 100, Bursts: 1}
	big := &HostSteal{Samples: 10, SampleMs: 100, TotalMs: 60, PerCPUMs: map[int]int64{0: 0, 1: 60}, MaxMs: 60, MaxCPU: 1, MaxAtS: 9.3, MaxSampleMs: 100, Bursts: 1}
	sameMax := &HostSteal{Samples: 10, SampleMs: 100, TotalMs: 70, PerCPUMs: map[int]int64{0: 10, 1: 60}, MaxMs: 60, MaxCPU: 1, MaxSampleMs: 100, Bursts: 1}
	na := &HostSteal{NA: "open /proc/stat: no such file or directory"}
	for _, tc := range []struct {
		name   string
		steals []*HostSteal
		want   *HostSteal // nil: none
		parts  [2]int     // Parts, PartsNA
	}{
		{"older parts", []*HostSteal{nil, nil}, nil, [2]int{}},
		{"the most in one sample, not in the window", []*HostSteal{small, big}, big, [2]int{2, 0}},
		{"a tie goes to the larger total", []*HostSteal{big, sameMax}, sameMax, [2]int{2, 0}},
		{"n/a and older parts counted", []*HostSteal{na, small, nil}, small, [2]int{3, 2}},
		{"every part n/a", []*HostSteal{nil, na}, &HostSteal{NA: na.NA}, [2]int{}},
		{"one part", []*HostSteal{small}, small, [2]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var parts []*Result
			for _, h := range tc.steals {
				p := part(t, 50, t0, 1, []int64{100, 200}, 0, []float64{10})
				p.HostSteal = h
				parts = append(parts, p)
			}
			m, err := Merge(parts...)
			if err != nil {
				t.Fatal(err)
			}
			h := m.HostSteal
			switch {
			case tc.want == nil && h != nil:
				t.Fatalf("merged host steal %+v from parts without one", h)
			case tc.want == nil:
				return
			case h == nil:
				t.Fatal("no merged host steal")
			}
			got := *h
			if [2]int{got.Parts, got.PartsNA} != tc.parts {
				t.Errorf("parts %d, n/a %d, want %v", got.Parts, got.PartsNA, tc.parts)
			}
			got.Parts, got.PartsNA = 0, 0
			if !reflect.DeepEqual(got, *tc.want) {
				t.Errorf("merged %+v, want %+v", got, *tc.want)
			}
			if got.PerCPUMs != nil {
				got.PerCPUMs[0]++
				if tc.want.PerCPUMs[0] == got.PerCPUMs[0] {
					t.Error("the merged result shares its per-CPU map with a part")
				}
			}
		})
	}
}
