package server

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// durationSamples are request durations for the histogram tests: zero, a
// nanosecond, every classic bucket's bound exactly and just past it,
// native bucket boundaries, a spread from a nanosecond to a minute, and
// requests past the arrays' 4.5 hours.
func durationSamples() []time.Duration {
	ds := []time.Duration{0, 1, 999, time.Microsecond, time.Second, 5 * time.Hour, 100 * time.Hour}
	for _, b := range durationBuckets {
		ns := time.Duration(math.Round(b * 1e9))
		ds = append(ds, ns, ns+1)
	}
	for k := -20; k <= 4; k++ { // powers of two seconds: the native boundaries at frac 0.5
		ds = append(ds, time.Duration(math.Exp2(float64(k))*1e9))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		ds = append(ds, time.Duration(math.Exp(r.Float64()*math.Log(60e9)))) // 1ns..60s, log-uniform
	}
	return ds
}

// histogramsOf gathers reg's request-duration histograms by class label.
func histogramsOf(t *testing.T, reg *prometheus.Registry) map[string]*dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Histogram{}
	for _, mf := range mfs {
		if mf.GetName() != durationName {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" {
					out[l.GetValue()] = m.GetHistogram()
				}
			}
		}
	}
	return out
}

// TestCarrierDurationsDifferential: the per-carrier histogram of the
// carrier-hosted modes exposes what the goroutine modes' HistogramVec
// exposes for the same observations (counts, classic and native buckets,
// schema, zero bucket; the sum within rounding), whichever carrier (or no
// carrier) recorded each.
func TestCarrierDurationsDifferential(t *testing.T) {
	want, got := newMetrics("carrier"), newMetrics("carrier")
	const carriers = 3
	got.usePerCarrier(carriers)
	r := rand.New(rand.NewPCG(3, 4))
	for i, d := range durationSamples() {
		code := []int{200, 200, 200, 404, 502, 504, 301}[i%7]
		want.handled(code, d)
		if c := r.IntN(carriers + 1); c < carriers {
			got.perCarrier.observe(c, code/100, d)
		} else {
			got.handledIn(nil, code, d) // outside any carrier
		}
	}
	w, g := histogramsOf(t, want.reg), histogramsOf(t, got.reg)
	if len(w) != 4 || len(g) != 4 {
		t.Fatalf("classes: HistogramVec %d, per carrier %d; want 4 each", len(w), len(g))
	}
	for class, wh := range w {
		gh := g[class]
		if gh.GetSampleCount() != wh.GetSampleCount() {
			t.Errorf("%s: count %d, want %d", class, gh.GetSampleCount(), wh.GetSampleCount())
		}
		if ws, gs := wh.GetSampleSum(), gh.GetSampleSum(); math.Abs(ws-gs) > 1e-9*math.Max(1, ws) {
			t.Errorf("%s: sum %v, want %v", class, gs, ws)
		}
		if len(gh.GetBucket()) != len(wh.GetBucket()) {
			t.Fatalf("%s: %d classic buckets, want %d", class, len(gh.GetBucket()), len(wh.GetBucket()))
		}
		for i, wb := range wh.GetBucket() {
			gb := gh.GetBucket()[i]
			if gb.GetUpperBound() != wb.GetUpperBound() || gb.GetCumulativeCount() != wb.GetCumulativeCount() {
				t.Errorf("%s: bucket %d: le %v count %d, want le %v count %d", class, i,
					gb.GetUpperBound(), gb.GetCumulativeCount(), wb.GetUpperBound(), wb.GetCumulativeCount())
			}
		}
		if gh.GetSchema() != wh.GetSchema() || gh.GetZeroThreshold() != wh.GetZeroThreshold() || gh.GetZeroCount() != wh.GetZeroCount() {
			t.Errorf("%s: schema %d, zero threshold %v, zero count %d; want %d, %v, %d", class,
				gh.GetSchema(), gh.GetZeroThreshold(), gh.GetZeroCount(), wh.GetSchema(), wh.GetZeroThreshold(), wh.GetZeroCount())
		}
		if a, b := nativeCounts(gh), nativeCounts(wh); !equalCounts(a, b) {
			t.Errorf("%s: native buckets differ:\n got  %v\n want %v", class, a, b)
		}
	}
}

// nativeCounts decodes a histogram's positive native buckets (spans and
// deltas) into counts by key.
func nativeCounts(h *dto.Histogram) map[int32]int64 {
	out := map[int32]int64{}
	key, count, i := int32(0), int64(0), 0
	for _, s := range h.GetPositiveSpan() {
		key += s.GetOffset()
		for range s.GetLength() {
			count += h.GetPositiveDelta()[i]
			i++
			if count != 0 {
				out[key] = count
			}
			key++
		}
	}
	return out
}

func equalCounts(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCarrierDurationsConcurrent: carriers record their own parts while
// /metrics is scraped (run with -race): no race, and the last scrape
// counts every observation.
func TestCarrierDurationsConcurrent(t *testing.T) {
	m := newMetrics("carrier")
	const carriers, each = 4, 2000
	m.usePerCarrier(carriers)
	var wg sync.WaitGroup
	for c := range carriers {
		wg.Go(func() { // a carrier: the one writer of part c
			for i := range each {
				m.perCarrier.observe(c, 2, time.Duration(i)*time.Microsecond)
			}
		})
	}
	wg.Go(func() { m.perCarrier.observeShared(5, 10*time.Hour) }) // the locked path, meanwhile
	for range 20 {
		histogramsOf(t, m.reg)
	}
	wg.Wait()
	h := histogramsOf(t, m.reg)
	if n := h["2xx"].GetSampleCount(); n != carriers*each {
		t.Errorf("2xx count %d, want %d", n, carriers*each)
	}
	if n := h["5xx"].GetSampleCount(); n != 1 {
		t.Errorf("5xx count %d, want 1", n)
	}
}

// TestNativeKeyBoundaries: nativeKey puts values at, just below and just
// above every boundary of schema 3 in the bucket client_golang does (one
// ulp decides: its boundaries are rounded values).
func TestNativeKeyBoundaries(t *testing.T) {
	for _, b := range nativeBounds {
		for _, exp := range []int{-30, -10, 0, 3, 14} {
			at := math.Ldexp(b, exp)
			for _, v := range []float64{math.Nextafter(at, 0), at, math.Nextafter(at, math.Inf(1))} {
				h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h", Help: "h", NativeHistogramBucketFactor: nativeFactor})
				h.Observe(v)
				var m dto.Metric
				if err := h.Write(&m); err != nil {
					t.Fatal(err)
				}
				keys := nativeCounts(m.GetHistogram())
				if len(keys) != 1 {
					t.Fatalf("%v: client_golang made %d native buckets", v, len(keys))
				}
				for k := range keys {
					if got := nativeKey(v); got != int(k) {
						t.Errorf("nativeKey(%v) = %d, client_golang's bucket %d", v, got, k)
					}
				}
			}
		}
	}
}
