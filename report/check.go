package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/latency"
)

// The checks a complete run must pass before its figures count (Check).
const (
	// MinAchievedShare: a fixed-rate run must achieve 95% of its rate.
	// One that fell further behind ran at another load than the runs it
	// is compared with (the server or the load generator saturated).
	MinAchievedShare = 0.95
	// MaxErrorShare: at most 1% of the requests may fail; beyond, the
	// latency and CPU figures describe failing requests, not the design.
	MaxErrorShare = 0.01
	// MaxOtherCPUs: other work on the machine may take at most half a
	// CPU in the observers' window: on the 2 to 4 CPUs a layout commonly
	// has, that is an eighth to a quarter of the machine taken from the
	// run, more than the differences the findings look for.
	MaxOtherCPUs = 0.5
	// MaxLoadBusy: the load generator may use at most 90% of its CPUs; a
	// saturated load generator makes the run load-bound, measuring the
	// load generator rather than the server.
	MaxLoadBusy = 0.9
	// MaxLoadWaitPct: the load generator's busy threads may wait at most
	// 25% of the time for a CPU (%wait) where the run has nothing better
	// to judge it by (a closed-loop run whose server had CPU to spare, or
	// a fixed-rate result written before the send lag was recorded).
	MaxLoadWaitPct = 25.0
	// MinServerBusy: a closed-loop run whose server kept 90% of its CPUs
	// busy (less the carriers' idle spinning) measured the server's
	// capacity, whatever the load generator waited: the server was the
	// bottleneck. Only a server with CPU to spare can have been held back
	// by its load.
	MinServerBusy = 0.9
	// SendLagPercentile, MaxSendLagShare and MinSendLagBound judge a
	// fixed-rate run by the load generator's punctuality: its p90 send lag
	// (load.Result.SendLag) may be at most half the run's median corrected
	// latency, and never needs to be under 500 µs. Measured on the 2-vCPU
	// development machine at the default compare's rate (docs/PERFORMANCE.md,
	// "Judging the load generator by its send lag"): a generator alone on
	// its CPU or sharing it with the mock had a p90 lag of 84-371 µs, one
	// sharing it with a busy loop 1.8-2.6 ms, against a p50 of 1.2-1.4 ms.
	// The p99 lag does not tell them apart there (0.25-2.9 ms alone, 3.8-4.2
	// ms starved): it is the host's stalls, which delay the server as much
	// as the generator; the p90 is the generator's own lateness.
	SendLagPercentile = 90.0
	MaxSendLagShare   = 0.5
	MinSendLagBound   = 500 * time.Microsecond
)

// Check returns why a complete run's figures must not count, "" when it
// passes every check: the fixed rate achieved (except by a sweep's
// points), few errors, little other load on the machine, and a load
// generator that kept up: at a fixed rate, one that sent on time (its send
// lag, see SendLagBound); closed loop, one that was not the bottleneck (a
// server that kept its CPUs busy, or a load generator with CPU to spare). A
// check whose figure the run lacks (no /proc sampling, no other-load gauge)
// passes; the report says which figures are missing.
func Check(s Summary) string {
	var why []string
	// A sweep point past saturation falls behind by design: it is plotted
	// at what it achieved, and capacity requires the rate achieved.
	if s.Rate > 0 && !IsSweepPhase(s.Phase) && s.Throughput < MinAchievedShare*float64(s.Rate) {
		why = append(why, fmt.Sprintf("achieved %.0f of %d req/s (%.0f%%, under %.0f%%)",
			s.Throughput, s.Rate, 100*s.Throughput/float64(s.Rate), 100*MinAchievedShare))
	}
	if total := s.Requests + s.Errors; total > 0 && float64(s.Errors) > MaxErrorShare*float64(total) {
		why = append(why, fmt.Sprintf("%d errors in %d requests (over %.0f%%)", s.Errors, total, 100*MaxErrorShare))
	}
	if s.OtherCPUs != nil && *s.OtherCPUs > MaxOtherCPUs {
		why = append(why, fmt.Sprintf("other load on the machine %.2f CPUs (over %.1f)", *s.OtherCPUs, MaxOtherCPUs))
	}
	if w := checkLoad(s); w != "" {
		why = append(why, w)
	}
	return strings.Join(why, "; ")
}

// checkLoad says why the load generator's figures make the run not count:
// at a fixed rate with a send lag, by the lag alone; closed loop or
// without one, by its CPU use and %wait, unless the server was the
// bottleneck (closed loop: it kept its CPUs busy).
func checkLoad(s Summary) string {
	if s.Rate > 0 && s.SendLag != nil {
		return checkSendLag(s)
	}
	l := s.Load
	if l == nil {
		return ""
	}
	var why []string
	if set, err := cpu.ParseList(s.LoadCPUs); err == nil && len(set) > 0 && l.CPUs > MaxLoadBusy*float64(len(set)) {
		why = append(why, fmt.Sprintf("the load generator used %.2f of its %s (over %.0f%%)",
			l.CPUs, Count(len(set), "CPU", "CPUs"), 100*MaxLoadBusy))
	}
	if l.WaitPct > MaxLoadWaitPct {
		why = append(why, fmt.Sprintf("the load generator's threads waited %.0f%% of the time for a CPU (over %.0f%%)",
			l.WaitPct, MaxLoadWaitPct))
	}
	if len(why) == 0 {
		return ""
	}
	msg := strings.Join(why, "; ")
	if s.Rate == 0 {
		busy, capacity := ServerBusy(s)
		switch {
		case math.IsNaN(busy):
		case busy >= MinServerBusy*capacity:
			return "" // the server was the bottleneck
		default:
			msg += fmt.Sprintf(" while the server used %.2f of its %s (under %.0f%%)",
				busy, Count(int(capacity), "CPU", "CPUs"), 100*MinServerBusy)
		}
	}
	return msg + ": the run is load-bound"
}

// checkSendLag judges a fixed-rate run by its send lag (see
// MaxSendLagShare).
func checkSendLag(s Summary) string {
	l := s.SendLag
	if l.Count == 0 {
		return "" // every connection was busy at every send time: the server's delay, not the generator's
	}
	at := func(p float64) time.Duration {
		return time.Duration(l.PercentilesUs[latency.PercentileKey(p)]) * time.Microsecond
	}
	lag, bound := at(SendLagPercentile), SendLagBound(s)
	if lag <= bound {
		return ""
	}
	return fmt.Sprintf("the load generator sent late: p%g send lag %s (p99 %s, max %s) over %s (%s)",
		SendLagPercentile, fmtUs(lag), fmtUs(at(99)), fmtUs(time.Duration(l.MaxUs)*time.Microsecond), fmtUs(bound), sendLagRule(s))
}

// SendLagBound is the largest p90 send lag a fixed-rate run passes with:
// MaxSendLagShare of its median corrected latency, at least
// MinSendLagBound.
func SendLagBound(s Summary) time.Duration {
	bound := MinSendLagBound
	if s.Latency != nil && s.Latency.Count > 0 {
		p50 := time.Duration(s.Latency.PercentilesUs[latency.PercentileKey(50)]) * time.Microsecond
		bound = max(bound, time.Duration(MaxSendLagShare*float64(p50)))
	}
	return bound
}

// sendLagRule says which part of SendLagBound applies.
func sendLagRule(s Summary) string {
	if SendLagBound(s) == MinSendLagBound {
		return fmt.Sprintf("the least bound, %s", fmtUs(MinSendLagBound))
	}
	return fmt.Sprintf("%.0f%% of the p50 %s", 100*MaxSendLagShare,
		fmtUs(time.Duration(s.Latency.PercentilesUs[latency.PercentileKey(50)])*time.Microsecond))
}

// fmtUs renders a duration as the load generator's text does ("38us",
// "1.20ms").
func fmtUs(d time.Duration) string {
	return latency.FormatTimeUs(float64(d) / float64(time.Microsecond))
}

// ServerBusy is the CPU a run's server spent working, in CPUs (its CPU
// time from /proc, else perf stat, less the carriers' idle spinning), and
// the CPUs it could use: its threads (carriers or GOMAXPROCS), at most its
// CPU set. busy is NaN when the run has no CPU figure.
func ServerBusy(s Summary) (busy, capacity float64) {
	busy = math.NaN()
	switch {
	case s.Server != nil:
		busy = s.Server.CPUs
	case s.Perf != nil && s.Perf.CPUsUtilized.NA == "":
		busy = s.Perf.CPUsUtilized.Value
	}
	if c := s.Carrier; c != nil && !math.IsNaN(float64(c.SpunCPUs)) {
		busy -= float64(c.SpunCPUs)
	}
	capacity = float64(s.Threads)
	if set, err := cpu.ParseList(s.ServerCPUs); err == nil && len(set) > 0 && (capacity <= 0 || float64(len(set)) < capacity) {
		capacity = float64(len(set))
	}
	if capacity <= 0 {
		capacity = 1
	}
	return busy, capacity
}

// StallFactor and MinStallLatencies make the warning "stalls seen"
// (Stalls): a run whose corrected p99.9 is more than StallFactor times its
// p99. A latency tail that grows smoothly (queueing, a busy CPU) keeps the
// two close: an exponential tail has p99.9 at 1.5 times p99 (ln 1000 over
// ln 100); the real comparison in testdata/dev2vcpu, on a busy 2-vCPU
// machine, had 1.07-1.31 times at its fixed rate and 1.13-3.48 times
// closed loop. Five times means some requests waited for something the
// others did not: a stall (a GC pause, a descheduled carrier thread, a
// sweep), as in issue 24's carrier runs at 10,131 req/s (p99.9 up to 66.6
// ms; fasthttp's 3.7-5.0 ms). Below MinStallLatencies latencies the p99.9
// is the max, one request: such a run is not judged.
const (
	StallFactor       = 5.0
	MinStallLatencies = 1000
)

// Stalls says why a complete run shows stalls ("stalls seen: p99.9
// 66.60ms is 38x p99 1.76ms (over 5x)"), "" when it shows none or has too
// few latencies to tell. It is a warning, not a check: a stall is the
// server's latency, which the figures must count, so a run with stalls
// stays in every figure and verdict. When the load generator's host also
// lost a burst to its hypervisor (load.StealBurst of a CPU in a sample:
// Summary.HostSteal), it says so ("; the host lost 60 ms to its
// hypervisor in the window (most: cpu1 40 ms in 100 ms at 9.3 s; 1 burst
// of 20 ms or more)"): on a virtual machine such a stall may be the
// host's, not the server's.
func Stalls(s Summary) string {
	l := s.Latency
	if l == nil || l.Count < MinStallLatencies {
		return ""
	}
	p99, p999 := l.PercentilesUs[latency.PercentileKey(99)], l.PercentilesUs[latency.PercentileKey(99.9)]
	if p99 <= 0 || float64(p999) <= StallFactor*float64(p99) {
		return ""
	}
	us := func(v int64) string { return fmtUs(time.Duration(v) * time.Microsecond) }
	ratio := float64(p999) / float64(p99)
	prec := 0 // "38x"; "5.4x" under 10, where a whole number could read as the factor itself
	if ratio < 10 {
		prec = 1
	}
	msg := fmt.Sprintf("stalls seen: p99.9 %s is %.*fx p99 %s (over %gx)", us(p999), prec, ratio, us(p99), StallFactor)
	if b := s.BackendBusy; b != nil && *b >= MaxBackendBusy {
		msg += fmt.Sprintf("; the backend's CPUs were %.0f%% busy (%.0f%% or more: it queues), so the stalls may be the backend's", 100**b, 100*MaxBackendBusy)
	}
	if rt := s.Runtime; rt != nil && float64(rt.GCPauseMaxUs) >= MaxGCPauseUs {
		msg += fmt.Sprintf("; the server's GC stopped the world for up to %s (GOMAXPROCS %d)", us(int64(rt.GCPauseMaxUs)), rt.GOMAXPROCS)
	}
	if h := s.HostSteal; h != nil && h.NA == "" && h.Bursts > 0 {
		who := "the host"
		if s.Hosts != "" {
			who = "the load generator's host"
		}
		msg += fmt.Sprintf("; %s lost %d ms to its hypervisor in the window (most: %s; %s)", who, h.TotalMs, h.Most(), h.BurstText())
	}
	return msg
}

// Stalled is a complete run with stalls seen (Stalls): warned of, and
// counted in the figures unless it also failed a check.
type Stalled struct {
	Result
	Why string
}

// Stalled lists the complete runs with stalls seen, by configuration in
// the report's order and then in run order; those that also failed a
// check are in LeftOut too.
func (r *Report) Stalled() []Stalled {
	var out []Stalled
	for _, g := range r.Groups {
		for _, run := range g.all {
			if why := Stalls(run.Summary); why != "" {
				out = append(out, Stalled{run, why})
			}
		}
	}
	return out
}

// LeftOut is a complete run that failed a check (Check): shown, and left
// out of every figure and verdict.
type LeftOut struct {
	Result
	Why string
}

// MaxBackendBusy is the share of time the backend's CPUs (the mock's, or
// the tfb app's database's) may be busy before a run's stalls are said to
// be possibly theirs (Stalls): from 90% a fixed-rate backend queues. On the
// 2-CPU development machine at 16,000 /db requests a second, the CPU the
// database shared with the load generator was 0.89-0.91 busy against the
// carrier mode, two of whose six runs stalled (uncorrected maxima 54-60
// ms), and 0.82-0.86 against net/http, whose runs peaked at 6.4-20.7 ms
// (docs/PERFORMANCE.md, sixteenth session).
const MaxBackendBusy = 0.9

// MaxGCPauseUs is the longest stop-the-world pause of the server's GC
// (µs) that a run's stalls do not name (Stalls). A blocking carrier on a
// CPU of its own, with the spare P's GC worker sharing that CPU, paused
// for up to 0.96-1.11 ms at 10,000 /fruits a second on the 2-CPU
// development machine, and 0.08 ms parked (docs/PERFORMANCE.md,
// seventeenth session); Go's pauses are usually tens of microseconds.
const MaxGCPauseUs = 500

// NearSaturation is the load factor above which a configuration at the
// fixed rate is flagged: above 85% of its own max throughput, queueing
// grows steeply and small changes in capacity move latency a lot.
const NearSaturation = 0.85

// loadFactor is the fixed rate over g's own median max throughput (NaN
// when either is unknown).
func (r *Report) loadFactor(g *Group) float64 {
	m := r.Find(PhaseMax, g.Name)
	if g.Phase != PhaseFixed || g.Rate <= 0 || m == nil || m.Throughput.N == 0 || m.Throughput.Median <= 0 {
		return math.NaN()
	}
	return float64(g.Rate) / m.Throughput.Median
}
