package wait

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// traceB is the block-and-wake cost the scripted traces assume (the issue's
// bursty example).
const traceB = 6 * time.Microsecond

// traceLen is the number of idle periods in each scripted trace.
const traceLen = 20000

type trace struct {
	name string
	gaps []time.Duration
}

func gen(n int, f func(i int) time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// scriptedTraces are the workloads the policy is scored on, seeded so that
// every run sees the same ones.
func scriptedTraces() []trace {
	r := rand.New(rand.NewPCG(1, 2))
	us := func(f float64) time.Duration { return time.Duration(f * float64(time.Microsecond)) }
	bursty := func(int) time.Duration {
		if r.Float64() < 0.9 {
			return 2 * time.Microsecond
		}
		return 10 * time.Millisecond
	}
	return []trace{
		{"constant short (1µs)", gen(traceLen, func(int) time.Duration { return time.Microsecond })},
		{"constant long (10ms)", gen(traceLen, func(int) time.Duration { return 10 * time.Millisecond })},
		{"bimodal 90% 2µs / 10% 10ms", gen(traceLen, bursty)},
		{"bimodal 50% 1µs / 50% 20µs", gen(traceLen, func(int) time.Duration {
			return us([]float64{1, 20}[r.IntN(2)])
		})},
		{"uniform 0-24µs", gen(traceLen, func(int) time.Duration { return us(24 * r.Float64()) })},
		{"exponential mean 3µs", gen(traceLen, func(int) time.Duration { return us(3 * r.ExpFloat64()) })},
		{"exponential mean 24µs", gen(traceLen, func(int) time.Duration { return us(24 * r.ExpFloat64()) })},
		{"adversarial (B+1ns)", gen(traceLen, func(int) time.Duration { return traceB + 1 })},
		{"flip-flop 0.9B / 10B every 32", gen(traceLen, func(i int) time.Duration {
			if i/32%2 == 0 {
				return traceB * 9 / 10
			}
			return 10 * traceB
		})},
		{"phase change bimodal -> exp 24µs -> 1µs", gen(traceLen, func(i int) time.Duration {
			switch {
			case i < traceLen/3:
				return bursty(i)
			case i < 2*traceLen/3:
				return us(24 * r.ExpFloat64())
			}
			return time.Microsecond
		})},
	}
}

// simulate runs the policy over a trace with the fake clock of the model:
// each period costs Cost(threshold, gap, B), then the gap is observed.
func simulate(p *Policy, gaps []time.Duration) time.Duration {
	var total time.Duration
	for _, g := range gaps {
		total += Cost(p.Threshold(), g, traceB)
		p.Observe(g)
	}
	return total
}

func fixedCost(gaps []time.Duration, theta time.Duration) time.Duration {
	var total time.Duration
	for _, g := range gaps {
		total += Cost(theta, g, traceB)
	}
	return total
}

// bestFixed returns the cheapest fixed threshold for the trace, searched
// exactly: the optimum is always-block, always-spin, or one of the gaps.
func bestFixed(gaps []time.Duration) (time.Duration, time.Duration) {
	s := slices.Clone(gaps)
	slices.Sort(s)
	best, theta := time.Duration(len(s))*traceB, time.Duration(0) // block always
	var prefix time.Duration
	for i, g := range s {
		prefix += g
		if i+1 < len(s) && s[i+1] == g {
			continue
		}
		if c := prefix + time.Duration(len(s)-i-1)*(g+traceB); c < best {
			best, theta = c, g
		}
	}
	return best, theta
}

func offlineOpt(gaps []time.Duration) time.Duration {
	var total time.Duration
	for _, g := range gaps {
		total += min(g, traceB)
	}
	return total
}

const never = time.Duration(1<<63 - 1) // a threshold that always spins

func TestPolicyScriptedTraces(t *testing.T) {
	var tab strings.Builder
	fmt.Fprintf(&tab, "B = %v, %d periods; mean cost per period:\n", traceB, traceLen)
	fmt.Fprintf(&tab, "%-40s %9s %9s %9s %9s %14s %9s %8s %8s\n",
		"trace", "optimum", "spin", "block", "θ=B", "best fixed (θ)", "adaptive", "/best", "/opt")
	for _, tr := range scriptedTraces() {
		n := time.Duration(len(tr.gaps))
		opt := offlineOpt(tr.gaps)
		best, theta := bestFixed(tr.gaps)
		got := simulate(NewPolicy(traceB, DefaultTrust, DefaultHalfLife), tr.gaps)
		rb, ro := float64(got)/float64(best), float64(got)/float64(opt)
		fmt.Fprintf(&tab, "%-40s %9v %9v %9v %9v %14s %9v %8.3f %8.3f\n", tr.name,
			opt/n, fixedCost(tr.gaps, never)/n, fixedCost(tr.gaps, 0)/n, fixedCost(tr.gaps, traceB)/n,
			fmt.Sprintf("%v (%v)", best/n, theta), got/n, rb, ro)
		if rb > 1.2 {
			t.Errorf("%s: adaptive costs %.3fx the best fixed threshold (%v), want at most 1.2x", tr.name, rb, theta)
		}
		if ro > 2 {
			t.Errorf("%s: adaptive costs %.3fx the offline optimum, want at most 2x", tr.name, ro)
		}
	}
	t.Log("\n" + tab.String())
}

func TestPolicyBursty(t *testing.T) {
	// 90% 2µs gaps, 10% 10ms, B = 6µs: after warming up, the policy must
	// spin through the short gaps and block on the long ones.
	r := rand.New(rand.NewPCG(3, 4))
	p := NewPolicy(traceB, DefaultTrust, DefaultHalfLife)
	const warm = 4 * DefaultHalfLife
	var shortSpun, short, longBlocked, long int
	for i := range traceLen {
		g := 2 * time.Microsecond
		if r.Float64() >= 0.9 {
			g = 10 * time.Millisecond
		}
		if i >= warm {
			th := p.Threshold()
			if g < time.Millisecond {
				short++
				if g <= th {
					shortSpun++
				}
			} else {
				long++
				if g > th {
					longBlocked++
				}
			}
		}
		p.Observe(g)
	}
	t.Logf("after %d periods: spun through %d of %d short gaps, blocked on %d of %d long ones; threshold %v",
		warm, shortSpun, short, longBlocked, long, p.Threshold())
	if shortSpun < short*99/100 || longBlocked != long {
		t.Errorf("spun %d/%d short, blocked %d/%d long; want >= 99%% and all", shortSpun, short, longBlocked, long)
	}
}

func TestPolicyAdaptiveAdversary(t *testing.T) {
	// An adversary that sees the threshold and ends every idle period just
	// after it: the clamp bounds each period at 1+1/λ times the optimum.
	for _, trust := range []float64{0.1, 0.5, 1} {
		p := NewPolicy(traceB, trust, DefaultHalfLife)
		bound := 1 + 1/trust
		var total, opt time.Duration
		worst := 0.0
		for range traceLen {
			g := p.Threshold() + 1
			c, o := Cost(p.Threshold(), g, traceB), min(g, traceB)
			total, opt = total+c, opt+o
			worst = max(worst, float64(c)/float64(o))
			p.Observe(g)
		}
		t.Logf("trust %.1f: adaptive adversary: mean %.3fx, worst period %.3fx the optimum (bound %.1fx)",
			trust, float64(total)/float64(opt), worst, bound)
		if worst > bound*1.001 {
			t.Errorf("trust %.1f: a period cost %.3fx the optimum, above the bound %.1fx", trust, worst, bound)
		}
	}
}

func TestPolicyReconverges(t *testing.T) {
	// After the idle distribution changes, the threshold settles on the
	// new best within a bounded number of periods (4 half-lives).
	limit := 4 * DefaultHalfLife
	for _, tc := range []struct {
		name          string
		before, after time.Duration
		settled       func(th time.Duration) bool
	}{
		{"long -> short", 10 * time.Millisecond, 2 * time.Microsecond, func(th time.Duration) bool { return th >= 2*time.Microsecond }},
		{"short -> long", 2 * time.Microsecond, 10 * time.Millisecond, func(th time.Duration) bool { return th < 2*time.Microsecond }},
	} {
		p := NewPolicy(traceB, DefaultTrust, DefaultHalfLife)
		for range 2000 {
			p.Observe(tc.before)
		}
		n := 0
		for ; n < 10*limit && !tc.settled(p.Threshold()); n++ {
			p.Observe(tc.after)
		}
		t.Logf("%s: settled after %d periods (threshold %v)", tc.name, n, p.Threshold())
		if n > limit {
			t.Errorf("%s: took %d periods to re-converge, want at most %d", tc.name, n, limit)
		}
	}
}

func TestPolicyBlockWake(t *testing.T) {
	p := NewPolicy(traceB, 1, DefaultHalfLife)
	if p.Threshold() != traceB {
		t.Fatalf("initial threshold %v, want B = %v", p.Threshold(), traceB)
	}
	for range 100 {
		p.ObserveBlockWake(20 * time.Microsecond)
	}
	// With trust 1 the clamp pins θ to B, so θ follows the measured B.
	if th := p.Threshold(); th < 18*time.Microsecond || th > 22*time.Microsecond {
		t.Errorf("after B observations of 20µs, threshold %v", th)
	}
	for i := range 1000 { // a median: rare outliers barely move it
		d := 20 * time.Microsecond
		if i%10 == 0 {
			d = 10 * time.Millisecond
		}
		p.ObserveBlockWake(d)
	}
	p.ObserveBlockWake(-1) // ignored
	if p.BlockWake() < 18*time.Microsecond || p.BlockWake() > 25*time.Microsecond {
		t.Errorf("B = %v", p.BlockWake())
	}
}

func TestBuckets(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 7, 8, 9, 15, 16, 100, 2000, 2047, 2048, 1 << 30, 1<<40 - 1, 1 << 40, 1 << 62} {
		k := bucketOf(v)
		if k < prev || k >= policyBuckets {
			t.Fatalf("bucketOf(%d) = %d (previous %d, %d buckets)", v, k, prev, policyBuckets)
		}
		prev = k
		if v < 1<<40 && (v >= bucketEdge(k) || (k > 0 && v < bucketEdge(k-1))) {
			t.Errorf("%d not in bucket %d [%d, %d)", v, k, bucketEdge(k-1), bucketEdge(k))
		}
		if k >= policySub && float64(bucketEdge(k)) > 1.125*float64(bucketEdge(k-1))+1 {
			t.Errorf("bucket %d too wide: [%d, %d)", k, bucketEdge(k-1), bucketEdge(k))
		}
	}
}

func FuzzPolicy(f *testing.F) {
	f.Add(int64(2000), int64(10_000_000), int64(6000), 0.1)
	f.Add(int64(0), int64(-5), int64(1), 2.0)
	f.Fuzz(func(t *testing.T, a, b, bw int64, trust float64) {
		p := NewPolicy(time.Duration(bw), trust, 16)
		lo, hi := p.trust*p.b, p.b/p.trust
		for i := range 100 {
			g := a
			if i%3 == 0 {
				g = b
			}
			p.Observe(time.Duration(g))
			if th := float64(p.Threshold()); th < lo-1 || th > hi+1 {
				t.Fatalf("threshold %v outside [%v, %v]", th, lo, hi)
			}
		}
	})
}

func BenchmarkPolicyObserve(b *testing.B) {
	b.ReportAllocs()
	p := NewPolicy(traceB, DefaultTrust, DefaultHalfLife)
	r := rand.New(rand.NewPCG(5, 6))
	gaps := gen(1024, func(int) time.Duration { return time.Duration(r.ExpFloat64() * 10000) })
	for i := 0; b.Loop(); i++ {
		p.Observe(gaps[i%len(gaps)])
	}
}

// BenchmarkPolicyAfterBlock measures the policy's work after a blocked
// wait: wake-path is what the adaptive strategy does before Wait returns
// (Observe and ObserveBlockWake), period adds the next wait's Threshold.
func BenchmarkPolicyAfterBlock(b *testing.B) {
	for _, withThreshold := range []bool{false, true} {
		name := "wake-path"
		if withThreshold {
			name = "period"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			p := NewPolicy(traceB, DefaultTrust, DefaultHalfLife)
			r := rand.New(rand.NewPCG(7, 8))
			gaps := gen(1024, func(int) time.Duration { return time.Duration(r.ExpFloat64() * 100000) })
			for i := 0; b.Loop(); i++ {
				if withThreshold {
					p.Threshold()
				}
				p.Observe(gaps[i%len(gaps)])
				p.ObserveBlockWake(traceB + time.Duration(i%7-3)*time.Microsecond)
			}
		})
	}
}
