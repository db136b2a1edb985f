package server

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The request-duration histogram of the carrier-hosted modes is kept per
// carrier, each part written by its carrier's tasks alone, and summed when
// /metrics is scraped. It is the same metric as the goroutine modes'
// prometheus.HistogramVec (classic buckets durationBuckets and a native
// histogram of schema 3, nativeFactor's; TestCarrierDurationsDifferential
// compares the two), without its atomic read-modify-writes, float
// compare-and-swap loop and sparse-bucket map: an observation is a few
// plain stores (docs/PERFORMANCE.md, "Request-duration histogram").

// nativeSchema is the native histogram's schema: the one client_golang
// picks for nativeFactor (buckets 2^(2^-3) = 1.09 wide).
const nativeSchema = 3

// nativeBounds are schema 3's bucket boundaries within one power of two
// (2^(i/8)/2, against the fraction of math.Frexp), with client_golang's
// roundings: math.Exp2 gives three of them one ulp higher, which would put
// an observation right at a boundary in the next bucket.
var nativeBounds = []float64{
	0.5, 0.5452538663326288, 0.5946035575013605, 0.6484197773255048,
	0.7071067811865475, 0.7711054127039704, 0.8408964152537144, 0.9170040432046711,
}

// nativeZeroThreshold is client_golang's default: observations at or below
// it count in the zero bucket.
var nativeZeroThreshold = prometheus.DefNativeHistogramZeroThreshold

// nativeKey is the native bucket of v > 0, as client_golang computes it
// (sort.SearchFloat64s, here a loop: no closure call per step).
func nativeKey(v float64) int {
	frac, exp := math.Frexp(v)
	i := 0
	for i < len(nativeBounds) && nativeBounds[i] < frac {
		i++
	}
	return i + (exp-1)*len(nativeBounds)
}

// classicIndex is the classic bucket of v: the first bound at or above it
// (len(durationBuckets): +Inf), as client_golang finds it.
func classicIndex(v float64) int {
	i := 0
	for i < len(durationBuckets) && durationBuckets[i] < v {
		i++
	}
	return i
}

// The native buckets kept in arrays: from a nanosecond to 2^14 s (4.5
// hours); longer requests go to a map under a lock.
var (
	nativeMinKey = nativeKey(1e-9)
	nativeMaxKey = nativeKey(1 << 14)
)

// durCounts is one status class's histogram in one carrier's part. Its
// count is that of its zero and native buckets, where every observation
// lands once.
type durCounts struct {
	sumNs   atomic.Uint64
	classic [durationBucketCount + 1]atomic.Uint64 // per bucket of durationBuckets (not cumulative), then +Inf
	zero    atomic.Uint64
	native  []atomic.Uint64 // key nativeMinKey+i, up to nativeMaxKey
}

// storeAdd increments a counter with a single writer: a plain load and
// store, never a locked read-modify-write.
func storeAdd(c *atomic.Uint64, d uint64) { c.Store(c.Load() + d) }

// carrierDurations is the request-duration histogram of a carrier-hosted
// mode: one part per carrier.
type carrierDurations struct {
	desc    *prometheus.Desc
	mode    string
	created time.Time
	// parts are by carrier, then status class 2xx-5xx; one more, under
	// sharedMu, takes requests answered outside any carrier.
	parts    [][4]durCounts
	sharedMu sync.Mutex
	farMu    sync.Mutex // guards far: native buckets past nativeMaxKey
	far      [4]map[int]int64
}

func newCarrierDurations(desc *prometheus.Desc, mode string, carriers int) *carrierDurations {
	h := &carrierDurations{desc: desc, mode: mode, created: time.Now(), parts: make([][4]durCounts, carriers+1)}
	for c := range h.parts {
		for class := range h.parts[c] {
			h.parts[c][class].native = make([]atomic.Uint64, nativeMaxKey-nativeMinKey+1)
		}
	}
	return h
}

// observeShared records a request answered outside the carriers (any
// goroutine).
func (h *carrierDurations) observeShared(class int, d time.Duration) {
	h.sharedMu.Lock()
	defer h.sharedMu.Unlock()
	h.observe(len(h.parts)-1, class, d)
}

// observe records a request of status class (2-5) that took d, on carrier
// c: only c's tasks may call it with c.
func (h *carrierDurations) observe(c, class int, d time.Duration) {
	d = max(d, 0)
	k := &h.parts[c][class-2]
	storeAdd(&k.sumNs, uint64(d))
	v := d.Seconds() // as the goroutine modes observe (the same float)
	storeAdd(&k.classic[classicIndex(v)], 1)
	if v <= nativeZeroThreshold {
		storeAdd(&k.zero, 1)
		return
	}
	key := nativeKey(v)
	if key <= nativeMaxKey {
		storeAdd(&k.native[key-nativeMinKey], 1)
		return
	}
	h.farMu.Lock()
	defer h.farMu.Unlock()
	if h.far[class-2] == nil {
		h.far[class-2] = map[int]int64{}
	}
	h.far[class-2][key]++
}

// Describe implements prometheus.Collector.
func (h *carrierDurations) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

// Collect implements prometheus.Collector: every carrier's parts summed,
// one histogram per status class (all four, as the HistogramVec's
// children made at start).
func (h *carrierDurations) Collect(ch chan<- prometheus.Metric) {
	for class := range 4 {
		var sumNs, zero uint64
		var classic [durationBucketCount + 1]uint64
		pos := map[int]int64{}
		for c := range h.parts {
			k := &h.parts[c][class]
			sumNs += k.sumNs.Load()
			zero += k.zero.Load()
			for i := range classic {
				classic[i] += k.classic[i].Load()
			}
			for i := range k.native {
				if n := k.native[i].Load(); n > 0 {
					pos[nativeMinKey+i] += int64(n)
				}
			}
		}
		h.farMu.Lock()
		for key, n := range h.far[class] {
			pos[key] += n
		}
		h.farMu.Unlock()
		count := zero
		for _, n := range pos {
			count += uint64(n)
		}
		native, err := prometheus.NewConstNativeHistogram(h.desc, count, float64(sumNs)/1e9, pos, nil, zero,
			nativeSchema, nativeZeroThreshold, h.created, h.mode, classLabel(class+2))
		if err != nil {
			ch <- prometheus.NewInvalidMetric(h.desc, err)
			continue
		}
		buckets := make([]*dto.Bucket, len(durationBuckets))
		var cum uint64
		for i, bound := range durationBuckets {
			// A scrape during observations reads the buckets one by one:
			// the classic ones never claim more than the count.
			cum = min(cum+classic[i], count)
			buckets[i] = &dto.Bucket{CumulativeCount: new(cum), UpperBound: new(bound)}
		}
		ch <- withClassic{native, buckets}
	}
}

// withClassic is a native histogram with classic buckets too, as a
// prometheus.Histogram with both kinds writes itself.
type withClassic struct {
	prometheus.Metric
	buckets []*dto.Bucket
}

func (m withClassic) Write(out *dto.Metric) error {
	if err := m.Metric.Write(out); err != nil {
		return err
	}
	out.Histogram.Bucket = m.buckets
	return nil
}

// classLabel is the class label of status class c (2: "2xx").
func classLabel(c int) string { return strconv.Itoa(c) + "xx" }
