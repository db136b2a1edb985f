package wait

import (
	"math"
	"math/bits"
	"time"
)

// Policy learns how long an idle thread should spin before it blocks. It is
// a pure type: it reads no clock; callers feed it the idle periods they saw
// and the block-and-wake costs they measured, and ask for the threshold.
//
// # Model
//
// An idle period lasts t (from the moment the thread runs out of work to the
// moment work arrives). With threshold θ the thread spins until work comes
// or θ passes, then blocks; blocking and being woken costs B. So one period
// costs
//
//	cost(θ, t) = t        if t ≤ θ (spun through it)
//	           = θ + B    if t > θ (spun θ, then blocked)
//
// and the offline optimum, knowing t, is min(t, B).
//
// # Learning
//
// The policy keeps a histogram of idle lengths in logarithmic buckets (8 per
// power of two, so a bucket's upper edge is at most 12.5% above any length
// in it), each observation weighted so that its weight halves after HalfLife
// newer ones. It picks the θ that minimises the histogram's expected cost:
// every bucket edge is a candidate, spinning through the buckets below it and
// paying θ+B for the rest. This is the empirical form of the hazard-rate
// rule (the best θ is where f(θ)/(1-F(θ)) = 1/B), but it stays right when
// the hazard crosses 1/B several times, as with bimodal idle times.
//
// # Robustness
//
// The learned θ is clamped to [λB, B/λ], λ being Options.Trust in (0, 1].
// For any single period, whatever its length, cost(θ, t) / min(t, B) is at
// most (θ+B)/min(θ, B) (the worst t is just above θ), which over the clamp
// range is at most 1 + 1/λ: with the default λ = 0.1 a period never costs
// more than 11 times the optimum, even against an adversary that sees θ.
// On a stationary workload the learned θ does at least as well as the
// bucket edge just above B (at most 12.5% above it, a candidate whenever
// λ ≤ 1), which costs at most 2.125 times the optimum on every period, so
// the learned policy converges to within about 2x of the offline optimum,
// and to the best fixed threshold within [λB, B/λ] up to the bucket width.
// The price of the clamp: where blocking at once is best (long idle
// periods), the policy pays λB + B instead of B, a factor 1+λ (1.1).
type Policy struct {
	b      float64 // B, ns
	trust  float64 // λ
	decay  float64 // weight multiplier per observation: 2^(-1/HalfLife)
	inc    float64 // weight of the next observation (decay applied lazily)
	total  float64 // sum of weights
	weight [policyBuckets]float64
	sum    [policyBuckets]float64 // weighted sum of lengths, ns
	theta  float64                // current threshold, ns
	stale  bool                   // theta must be recomputed before it is read
	since  int                    // observations since the last recompute
	count  uint64                 // observations ever
}

const (
	// policySubBits gives 2^3 = 8 buckets per power of two.
	policySubBits = 3
	policySub     = 1 << policySubBits
	// policyMaxBits caps lengths at 2^40 ns (about 18 minutes); longer
	// idle periods count as that long, which changes no decision as long
	// as B/λ is far below it.
	policyMaxBits = 40
	policyBuckets = (policyMaxBits - policySubBits + 1) * policySub
	// policyRecompute is how many observations pass between two threshold
	// recomputations (about 100 buckets scanned each time), after the
	// first policyRecompute observations, each of which recomputes (at
	// the next Threshold).
	policyRecompute = 8
	// policyRescale bounds the lazily grown increment before the histogram
	// is rescaled, far from float64 overflow.
	policyRescale = 1e100
	// policyBStep is the relative step of B's running median per
	// block-and-wake observation: B can follow a doubling in about 22
	// wake-ups and stays within about 3% of the median.
	policyBStep = 1.0 / 32
)

// NewPolicy returns a policy for block-and-wake cost b, trust λ in (0, 1]
// and memory halfLife (idle periods). Until it has seen an idle period its
// threshold is B, the deterministic 2-competitive choice. Out-of-range
// arguments select the defaults (and b below 1ns becomes 1ns).
func NewPolicy(b time.Duration, trust float64, halfLife int) *Policy {
	if trust <= 0 || trust > 1 {
		trust = DefaultTrust
	}
	if halfLife <= 0 {
		halfLife = DefaultHalfLife
	}
	p := &Policy{
		b:     math.Max(float64(b), 1),
		trust: trust,
		decay: math.Exp2(-1 / float64(halfLife)),
		inc:   1,
	}
	p.theta = p.b
	return p
}

// Threshold returns how long to spin before blocking. Observations only
// mark the threshold stale; it is recomputed here, when the next idle
// period begins, so that the work stays off the path of a wake-up.
func (p *Policy) Threshold() time.Duration {
	if p.stale {
		p.recompute()
	}
	return time.Duration(p.theta)
}

// BlockWake returns the B the policy currently uses.
func (p *Policy) BlockWake() time.Duration { return time.Duration(p.b) }

// ObserveBlockWake folds one measured block-and-wake cost into B; the
// threshold follows at the next Threshold. B tracks the median of the observations (a
// stochastic-approximation median: each observation moves B 1/32 of its
// value up or down), like the start-up measurement, so that the rare wake-up
// delayed by milliseconds on a loaded machine does not drag it as it would
// a mean.
func (p *Policy) ObserveBlockWake(d time.Duration) {
	if d <= 0 {
		return
	}
	switch {
	case float64(d) > p.b:
		p.b *= 1 + policyBStep
	case float64(d) < p.b:
		p.b *= 1 - policyBStep
	}
	p.stale = true
}

// Observe records one idle period of length idle: from running out of work
// to work arriving, whether the thread spun or blocked through it.
func (p *Policy) Observe(idle time.Duration) {
	v := uint64(max(idle, 0))
	i := bucketOf(v)
	p.inc /= p.decay
	if p.inc > policyRescale {
		s := 1 / p.inc
		for k := range p.weight {
			p.weight[k] *= s
			p.sum[k] *= s
		}
		p.total *= s
		p.inc = 1
	}
	p.weight[i] += p.inc
	p.sum[i] += p.inc * float64(min(v, 1<<policyMaxBits-1))
	p.total += p.inc
	p.count++
	p.since++
	if p.count <= policyRecompute || p.since >= policyRecompute {
		p.stale = true
	}
}

// recompute picks the threshold that minimises the histogram's expected cost
// within [λB, B/λ].
func (p *Policy) recompute() {
	p.since = 0
	p.stale = false
	lo, hi := p.trust*p.b, p.b/p.trust
	if p.total == 0 {
		p.theta = p.b
		return
	}
	best, bestTheta := math.Inf(1), p.b
	var spunSum, spunWeight, edge float64 // buckets below k: spun
	for k := 0; k <= policyBuckets; k++ {
		// Candidate: spin through buckets < k, block the rest; the
		// cheapest θ that spins through them is their upper edge.
		theta := math.Max(edge, lo)
		if theta > hi {
			break
		}
		if k == 0 || p.weight[k-1] > 0 {
			c := spunSum + (p.total-spunWeight)*(theta+p.b)
			if c < best {
				best, bestTheta = c, theta
			}
		}
		if k == policyBuckets {
			break
		}
		spunSum += p.sum[k]
		spunWeight += p.weight[k]
		edge = float64(bucketEdge(k))
	}
	// Blocking the rest at hi is a candidate too when the scan stopped at
	// the clamp with buckets below hi unspun.
	if lo < hi {
		var s, w float64
		for k := 0; k < policyBuckets && float64(bucketEdge(k)) <= hi; k++ {
			s += p.sum[k]
			w += p.weight[k]
		}
		if c := s + (p.total-w)*(hi+p.b); c < best {
			bestTheta = hi
		}
	}
	p.theta = bestTheta
}

// bucketOf returns the histogram bucket of a length in ns: exact below 8,
// then 8 buckets per power of two.
func bucketOf(v uint64) int {
	if v >= 1<<policyMaxBits {
		v = 1<<policyMaxBits - 1
	}
	if v < policySub {
		return int(v)
	}
	e := bits.Len64(v) - 1 // v in [2^e, 2^(e+1))
	m := v >> (e - policySubBits)
	return (e-policySubBits+1)*policySub + int(m-policySub)
}

// bucketEdge returns the exclusive upper bound of bucket k in ns.
func bucketEdge(k int) uint64 {
	if k < policySub {
		return uint64(k) + 1
	}
	e := k/policySub + policySubBits - 1
	m := uint64(k%policySub + policySub)
	return (m + 1) << (e - policySubBits)
}

// Cost is the model's cost of one idle period of length idle under threshold
// θ with block-and-wake cost b: idle if the thread spun through it, else
// θ + b. Tests and the spectrum suite score strategies with it.
func Cost(threshold, idle, b time.Duration) time.Duration {
	if idle <= threshold {
		return idle
	}
	return threshold + b
}
