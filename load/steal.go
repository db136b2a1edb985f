package load

import (
	"fmt"
	"maps"
	"time"

	"github.com/spindle-lab/spindle/observe"
)

// Host steal: the time this host's hypervisor ran something else while its
// CPUs wanted to run (/proc/stat's per-CPU steal counter), read every
// StealSample over the measured window, so that a 60 ms burst shows in a
// 10 s run instead of averaging away.
const (
	// StealSample is how often a run reads /proc/stat: ten of the
	// counter's 10 ms ticks (USER_HZ is 100), fine enough to place a
	// stall of tens of milliseconds, for one read (tens of µs, more on a
	// host with hundreds of CPUs) off the load threads.
	StealSample = 100 * time.Millisecond
	// StealBurst is the steal from one CPU in one sample that counts as a
	// burst: two ticks, the least the counter shows that is more than
	// one tick's rounding, and twice the 10 ms p99.9 over which issue 24
	// calls a run stalled.
	StealBurst = 20 * time.Millisecond
)

// HostSteal is the host steal of a run's measured window (Result.HostSteal),
// from /proc/stat read at the window's start and every StealSample after.
// Times are whole milliseconds (the counter's unit is 10 ms).
type HostSteal struct {
	// NA is why there is no figure ("open /proc/stat: no such file or
	// directory"); the other fields are then zero and mean nothing.
	NA string `json:"na,omitempty"`
	// Samples counts the intervals between readings; SampleMs is their
	// intended length (StealSample). The last one may be shorter (the
	// window's end), and one the sampler was late for longer.
	Samples  int   `json:"samples"`
	SampleMs int64 `json:"sample_ms"`
	// TotalMs is the steal of every CPU in the window, summed; PerCPUMs
	// splits it by CPU number (every CPU read, none left out for a 0).
	TotalMs  int64         `json:"total_ms"`
	PerCPUMs map[int]int64 `json:"per_cpu_ms"`
	// MaxMs is the most stolen from one CPU in one sample: from CPU
	// MaxCPU, in the sample that began MaxAtS seconds into the window
	// and lasted MaxSampleMs. When MaxMs is 0 there is none.
	MaxMs       int64   `json:"max_ms"`
	MaxCPU      int     `json:"max_cpu"`
	MaxAtS      float64 `json:"max_at_s"`
	MaxSampleMs int64   `json:"max_sample_ms"`
	// Bursts counts the samples in which some CPU lost StealBurst or
	// more.
	Bursts int `json:"bursts"`
	// Backwards counts the times a CPU's counter read less than the time
	// before (some kernels and hypervisors step it back, after a live
	// migration): that sample counts 0 for the CPU.
	Backwards int `json:"backwards,omitempty"`
	// Parts and PartsNA are set by Merge: the figure is that of the part
	// (one load generator's host) that lost the most in one sample, of
	// Parts, PartsNA of which had no figure.
	Parts   int `json:"parts,omitempty"`
	PartsNA int `json:"parts_na,omitempty"`
}

// stealSampler turns readings of the steal counters into a HostSteal.
type stealSampler struct {
	hs     HostSteal
	prev   []int64       // the last reading: ticks by CPU number, -1 for none
	prevAt time.Duration // since the start of the window
	read   bool          // prev holds a reading
}

// tickMs is one UserHZ tick in milliseconds.
const tickMs = 1000 / observe.UserHZ

// add takes the reading steal (observe.StealReader.Read's) made at into the
// window. A CPU that is in one of two readings only (brought on or off
// line) has no steal in that sample. It allocates only for a CPU it has not
// seen before.
func (s *stealSampler) add(at time.Duration, steal []int64) {
	if s.hs.PerCPUMs == nil {
		s.hs.PerCPUMs = map[int]int64{}
	}
	if !s.read {
		s.prev, s.prevAt, s.read = append(s.prev[:0], steal...), at, true
		return
	}
	s.hs.Samples++
	worst, worstCPU := int64(0), 0
	for c, b := range steal {
		if b < 0 || c >= len(s.prev) || s.prev[c] < 0 {
			continue
		}
		d := (b - s.prev[c]) * tickMs
		if d < 0 {
			s.hs.Backwards++
			d = 0
		}
		s.hs.PerCPUMs[c] += d
		s.hs.TotalMs += d
		if d > worst { // the lowest CPU of a tie
			worst, worstCPU = d, c
		}
	}
	if worst >= StealBurst.Milliseconds() {
		s.hs.Bursts++
	}
	if worst > s.hs.MaxMs {
		s.hs.MaxMs, s.hs.MaxCPU = worst, worstCPU
		s.hs.MaxAtS, s.hs.MaxSampleMs = s.prevAt.Seconds(), (at - s.prevAt).Milliseconds()
	}
	s.prev, s.prevAt = append(s.prev[:0], steal...), at
}

// result is the HostSteal of the readings taken, n/a without two of them.
func (s *stealSampler) result() *HostSteal {
	h := s.hs
	h.SampleMs = StealSample.Milliseconds()
	if h.NA == "" && h.Samples == 0 {
		h.NA = "no sample in the window"
	}
	if h.NA != "" {
		return &HostSteal{NA: h.NA}
	}
	return &h
}

// sampleSteal reads procRoot's stat ("": /proc) at the start of the measured
// window (measureAt on clock, in ns) and every StealSample after, until a
// reading at or past end or until stop is closed (one last reading then).
// A file that cannot be opened or read makes the figure n/a with the
// reason. Once the window has begun it allocates nothing but for the CPUs
// of its first samples.
func sampleSteal(procRoot string, clock func() int64, measureAt, end int64, stop <-chan struct{}) *HostSteal {
	var s stealSampler
	r, err := observe.OpenStealReader(procRoot)
	if err != nil {
		s.hs.NA = err.Error()
		return s.result()
	}
	defer r.Close()
	wait := time.NewTimer(time.Duration(measureAt - clock()))
	defer wait.Stop()
	select {
	case <-wait.C:
	case <-stop:
		s.hs.NA = "the run ended before its measured window"
		return s.result()
	}
	// read reads the counters, false when it failed or the window is over.
	read := func() bool {
		at := clock()
		steal, err := r.Read()
		if err != nil {
			s.hs.NA = fmt.Sprintf("%.1f s into the window: %v", float64(at-measureAt)/1e9, err)
			return false
		}
		s.add(time.Duration(at-measureAt), steal)
		return at < end
	}
	if !read() {
		return s.result()
	}
	tick := time.NewTicker(StealSample)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if !read() {
				return s.result()
			}
		case <-stop:
			read()
			return s.result()
		}
	}
}

// HostStealLine describes the host steal in one line of the wrk2 layout's
// footer: "Host steal: 60 ms in the window (cpu1 40 ms in 100 ms at 9.3 s;
// 2 bursts of 20 ms or more)", "Host steal: none", "Host steal: n/a
// (reason)"; "" for a result written before the figure existed.
func (r *Result) HostStealLine() string {
	h := r.HostSteal
	switch {
	case h == nil:
		return ""
	case h.NA != "":
		return "Host steal: " + observe.NA(h.NA)
	}
	var notes string
	switch {
	case h.Backwards == 1:
		notes += "; a CPU's counter went back once, counted as 0"
	case h.Backwards > 1:
		notes += fmt.Sprintf("; CPUs' counters went back %d times, counted as 0", h.Backwards)
	}
	if h.Parts > 0 {
		notes += fmt.Sprintf("; the most of %d load generators", h.Parts)
		if h.PartsNA > 0 {
			notes += fmt.Sprintf(", %d n/a", h.PartsNA)
		}
	}
	if h.TotalMs == 0 {
		if notes != "" {
			return "Host steal: none (" + notes[2:] + ")"
		}
		return "Host steal: none"
	}
	return fmt.Sprintf("Host steal: %d ms in the window (%s; %s%s)", h.TotalMs, h.Most(), h.BurstText(), notes)
}

// Most says where the most was stolen in one sample: "cpu1 40 ms in 100 ms
// at 9.3 s" (seconds into the window).
func (h *HostSteal) Most() string {
	return fmt.Sprintf("cpu%d %d ms in %d ms at %.1f s", h.MaxCPU, h.MaxMs, h.MaxSampleMs, h.MaxAtS)
}

// BurstText counts the bursts: "2 bursts of 20 ms or more".
func (h *HostSteal) BurstText() string {
	switch h.Bursts {
	case 0:
		return fmt.Sprintf("no burst of %d ms or more", StealBurst.Milliseconds())
	case 1:
		return fmt.Sprintf("1 burst of %d ms or more", StealBurst.Milliseconds())
	}
	return fmt.Sprintf("%d bursts of %d ms or more", h.Bursts, StealBurst.Milliseconds())
}

// mergeSteal is the host steal of the part that lost the most to its
// hypervisor in one sample (then in the window), whole: the parts ran on
// other hosts (or, several on one, each counted the same steal), whose
// CPUs' figures do not add up. Parts without the field (written before it
// existed) count as n/a; nil when no part has it, and the first part's
// reason when none has a figure. Parts is set for two parts or more.
func mergeSteal(parts []*Result) *HostSteal {
	var worst, first *HostSteal
	na := 0
	for _, p := range parts {
		h := p.HostSteal
		if h != nil && first == nil {
			first = h
		}
		if h == nil || h.NA != "" {
			na++
			continue
		}
		if worst == nil || h.MaxMs > worst.MaxMs || (h.MaxMs == worst.MaxMs && h.TotalMs > worst.TotalMs) {
			worst = h
		}
	}
	if first == nil {
		return nil
	}
	if worst == nil {
		return &HostSteal{NA: first.NA} // the first part's reason
	}
	m := *worst
	m.PerCPUMs = maps.Clone(worst.PerCPUMs)
	if len(parts) > 1 {
		m.Parts, m.PartsNA = len(parts), na
	}
	return &m
}
