package load

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spindle-lab/spindle/latency"
)

// Limits of a request mix (Options.Mix).
const (
	// MaxMixEntries bounds the entries of a mix. Each entry keeps two
	// latency histograms per load thread (about 190 KB each), so 16 entries
	// cost a thread about 6 MB; a mix of more paths is a crawl, not a mix.
	MaxMixEntries = 16
	// MaxMixWeight bounds the sum of a mix's weights: the selection is a
	// table of that many slots, one byte each (64 KB at most), shared by
	// the threads. It allows shares down to 1/65536.
	MaxMixWeight = 1 << 16
)

// MixEntry is one request of a mix: Target (path and query, same host as
// Options.URL) is sent in proportion to Weight among the entries.
type MixEntry struct {
	Weight int    `json:"weight"`
	Target string `json:"target"`
}

// String is the entry as --mix takes it, "WEIGHT:TARGET".
func (e MixEntry) String() string { return strconv.Itoa(e.Weight) + ":" + e.Target }

// ParseMixEntry parses "WEIGHT:TARGET" (95:/fruits, 5:/block?kind=sleep&d=20ms):
// a whole weight from 1 to MaxMixWeight, written in digits alone, and a
// request target in origin form (starts with '/') without spaces, control
// characters, other bytes beyond ASCII, or a fragment. An error says what
// is valid in one line, without repeating s.
func ParseMixEntry(s string) (MixEntry, error) {
	w, target, ok := strings.Cut(s, ":")
	if !ok {
		return MixEntry{}, errors.New("want WEIGHT:TARGET such as 95:/fruits")
	}
	weight, err := parseWeight(w)
	if err != nil {
		return MixEntry{}, err
	}
	if err := checkMixTarget(target); err != nil {
		return MixEntry{}, err
	}
	return MixEntry{Weight: weight, Target: target}, nil
}

// parseWeight parses a mix weight: digits alone (no sign, no space, no
// suffix), from 1 to MaxMixWeight.
func parseWeight(s string) (int, error) {
	bad := fmt.Errorf("want WEIGHT:TARGET with a whole weight from 1 to %d, got weight %q", MaxMixWeight, s)
	if s == "" || len(s) > len(strconv.Itoa(MaxMixWeight))+2 { // a few leading zeros allowed, not an overflow
		return 0, bad
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, bad
		}
		n = n*10 + int(s[i]-'0')
	}
	if n < 1 || n > MaxMixWeight {
		return 0, bad
	}
	return n, nil
}

// checkMixTarget checks a request target of a mix entry.
func checkMixTarget(t string) error {
	if t == "" || t[0] != '/' {
		return fmt.Errorf("want a target that starts with / (a path and query such as /fruits?x=1), got %q", t)
	}
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c <= ' ' || c == 0x7f:
			return fmt.Errorf("want a target without spaces or control characters (%q at byte %d)", c, i)
		case c >= 0x80:
			return fmt.Errorf("want a target in ASCII: percent-encode byte %#x at byte %d", c, i)
		case c == '#':
			return fmt.Errorf("want a target without a fragment ('#' at byte %d)", i)
		}
	}
	return nil
}

// CheckMix checks a whole mix: each entry, their number and their
// weights' sum.
func CheckMix(mix []MixEntry) error {
	if len(mix) > MaxMixEntries {
		return fmt.Errorf("want at most %d mix entries, got %d", MaxMixEntries, len(mix))
	}
	sum := 0
	for _, e := range mix {
		if e.Weight < 1 || e.Weight > MaxMixWeight {
			return fmt.Errorf("mix entry %q: want a weight from 1 to %d", e, MaxMixWeight)
		}
		if err := checkMixTarget(e.Target); err != nil {
			return fmt.Errorf("mix entry %q: %w", e, err)
		}
		sum += e.Weight
	}
	if sum > MaxMixWeight {
		return fmt.Errorf("want mix weights that sum to at most %d, got %d", MaxMixWeight, sum)
	}
	return nil
}

// Mix is the --mix flag's value: each use adds an entry, parsed and
// checked (ParseMixEntry, and the limits on the whole) as it is given. It
// is a cliflag.Repeated, so Flags.Args gives it once per entry.
type Mix []MixEntry

// Placeholder names the value in help.
func (m *Mix) Placeholder() string { return "WEIGHT:TARGET" }

// String is the entries joined by ", ".
func (m *Mix) String() string {
	if m == nil {
		return ""
	}
	return strings.Join(m.Values(), ", ")
}

// Set adds the entry s.
func (m *Mix) Set(s string) error {
	e, err := ParseMixEntry(s)
	if err != nil {
		return err
	}
	next := append(*m, e)
	if err := CheckMix(next); err != nil {
		return err
	}
	*m = next
	return nil
}

// Values are the entries as --mix takes them, in order.
func (m *Mix) Values() []string {
	v := make([]string, len(*m))
	for i, e := range *m {
		v[i] = e.String()
	}
	return v
}

// MixCycle is the length of mix's cycle, the sum of its weights: every
// cycle of requests has each entry weight times. At a fixed rate, with a
// connection count that is a multiple of it, each connection sends one
// entry only (request k of connection i is request i + k*connections of
// the intended send order, whose entry is the cycle's slot at that rank).
func MixCycle(mix []MixEntry) int {
	sum := 0
	for _, e := range mix {
		sum += e.Weight
	}
	return sum
}

// mixTable lays the entries out over a cycle of sum(weights) slots by
// smooth weighted round-robin (nginx's): at each slot every entry's credit
// grows by its weight and the entry with the most credit (the first on a
// tie) is taken and loses the sum. Each entry i then fills exactly
// weight_i slots of the cycle, spread evenly: over the first n slots of
// any cycle it has had n*weight_i/sum slots, less than one off. Request n
// of a sequence is sent to entry table[n % len(table)].
func mixTable(mix []MixEntry) []uint8 {
	sum := MixCycle(mix)
	table := make([]uint8, sum)
	credit := make([]int, len(mix))
	for slot := range table {
		best := 0
		for i, e := range mix {
			credit[i] += e.Weight
			if credit[i] > credit[best] {
				best = i
			}
		}
		credit[best] -= sum
		table[slot] = uint8(best)
	}
	return table
}

// entryTally is one thread's figures of one mix entry, in the measured
// window.
type entryTally struct {
	sent    int64
	byClass [6]int64 // as counts.byClass
	failed  int64
	queued  int64 // fixed rate: due while the connection still waited for an earlier response
	// corrected and uncorrected are the entry's latencies, as the
	// worker's own histograms.
	corrected, uncorrected *latency.Histogram
}

func newEntryTallies(n int) []entryTally {
	ts := make([]entryTally, n)
	for i := range ts {
		ts[i].corrected, ts[i].uncorrected = latency.New(), latency.New()
	}
	return ts
}

// MixResult is one entry's part of a run with a mix (Result.Mix), counted
// as the totals are: only requests intended in the measured window.
type MixResult struct {
	Target string `json:"target"`
	Weight int    `json:"weight"`
	// Sent counts the entry's requests written; Completed its responses,
	// ByStatus by status class; Failed its failed requests (of every kind).
	Sent      int64        `json:"sent"`
	Completed int64        `json:"completed"`
	ByStatus  StatusCounts `json:"by_status"`
	Failed    int64        `json:"failed"`
	// Queued counts, at a fixed rate, the entry's requests whose intended
	// send time came while their connection still waited for an earlier
	// response (of any entry): they were sent late, and their corrected
	// latency holds the wait (head-of-line blocking in the generator's
	// connection, not the server's doing for this request).
	Queued int64 `json:"queued"`
	// Corrected and Uncorrected are the entry's latency distributions,
	// as Result's.
	Corrected   latency.Summary `json:"corrected"`
	Uncorrected latency.Summary `json:"uncorrected"`
}

// collectMix merges the threads' entry figures; nil without a mix.
func collectMix(mix []MixEntry, workers []*worker) ([]MixResult, error) {
	if len(mix) == 0 {
		return nil, nil
	}
	rs := make([]MixResult, len(mix))
	for i, e := range mix {
		r := &rs[i]
		r.Target, r.Weight = e.Target, e.Weight
		var byClass [6]int64
		hc := make([]*latency.Histogram, 0, len(workers))
		hu := make([]*latency.Histogram, 0, len(workers))
		for _, w := range workers {
			t := &w.mix[i]
			r.Sent += t.sent
			r.Failed += t.failed
			r.Queued += t.queued
			for c := range byClass {
				byClass[c] += t.byClass[c]
			}
			hc = append(hc, t.corrected)
			hu = append(hu, t.uncorrected)
		}
		r.ByStatus = statusCounts(byClass)
		r.Completed = r.ByStatus.Total()
		var err error
		if r.Corrected, err = summarizeMerged(hc); err != nil {
			return nil, err
		}
		if r.Uncorrected, err = summarizeMerged(hu); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// summarizeMerged merges histograms and summarizes the sum.
func summarizeMerged(hs []*latency.Histogram) (latency.Summary, error) {
	h, err := latency.Merge(hs...)
	if err != nil {
		return latency.Summary{}, err
	}
	return latency.Summarize(h)
}

// checkMix verifies that the entries add up to the totals.
func (r *Result) checkMix() error {
	if len(r.Mix) == 0 {
		return nil
	}
	var sent, completed, failed int64
	for _, e := range r.Mix {
		if e.ByStatus.Total() != e.Completed {
			return fmt.Errorf("accounting: mix entry %s: status classes sum to %d, completed %d", e.Target, e.ByStatus.Total(), e.Completed)
		}
		sent += e.Sent
		completed += e.Completed
		failed += e.Failed
	}
	if sent != r.Sent || completed != r.Completed || failed != r.Failed {
		return fmt.Errorf("accounting: mix entries sum to %d sent, %d completed, %d failed; totals %d, %d, %d",
			sent, completed, failed, r.Sent, r.Completed, r.Failed)
	}
	return nil
}

// mergeMix adds the parts' entry figures: every part must have run the same
// mix (targets and weights, in order), or none.
func mergeMix(parts []*Result) ([]MixResult, error) {
	first := parts[0].Mix
	for i, p := range parts {
		if !sameMix(p.Mix, first) {
			return nil, fmt.Errorf("merge load results: part %d ran another request mix than part 0", i)
		}
	}
	if len(first) == 0 {
		return nil, nil
	}
	m := make([]MixResult, len(first))
	for i := range m {
		m[i] = MixResult{Target: first[i].Target, Weight: first[i].Weight}
		var corrected, uncorrected []latency.Summary
		for _, p := range parts {
			e := &p.Mix[i]
			m[i].Sent += e.Sent
			m[i].Completed += e.Completed
			m[i].ByStatus = m[i].ByStatus.Add(e.ByStatus)
			m[i].Failed += e.Failed
			m[i].Queued += e.Queued
			corrected = append(corrected, e.Corrected)
			uncorrected = append(uncorrected, e.Uncorrected)
		}
		var err error
		if m[i].Corrected, err = mergeSummaries(corrected); err != nil {
			return nil, fmt.Errorf("merge mix entry %s corrected latency: %w", first[i].Target, err)
		}
		if m[i].Uncorrected, err = mergeSummaries(uncorrected); err != nil {
			return nil, fmt.Errorf("merge mix entry %s uncorrected latency: %w", first[i].Target, err)
		}
	}
	return m, nil
}

func sameMix(a, b []MixResult) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Target != b[i].Target || a[i].Weight != b[i].Weight {
			return false
		}
	}
	return true
}

// writeMix prints the entries' table after the totals: each entry's share
// of the requests sent and its corrected latency; at a fixed rate also how
// many of its requests waited for their connection (MixResult.Queued).
func (r *Result) writeMix(ew *errWriter) {
	if len(r.Mix) == 0 {
		return
	}
	width := len("Target")
	for _, e := range r.Mix {
		width = max(width, len(e.Target))
	}
	fixed := r.Config.Rate > 0
	ew.printf("  Request mix (corrected latency):\n")
	ew.printf("    %-*s %6s %8s %10s %9s %9s %9s %9s", width, "Target", "Weight", "Share", "Completed", "p50", "p99", "p99.9", "Max")
	if fixed {
		ew.printf(" %8s", "Queued")
	}
	ew.printf("\n")
	for _, e := range r.Mix {
		share := "-"
		if r.Sent > 0 {
			share = fmt.Sprintf("%.2f%%", 100*float64(e.Sent)/float64(r.Sent))
		}
		ew.printf("    %-*s %6d %8s %10d", width, e.Target, e.Weight, share, e.Completed)
		c := e.Corrected
		for _, p := range []float64{50, 99, 99.9} {
			ew.printf(" %9s", mixLatency(c, float64(c.PercentilesUs[latency.PercentileKey(p)])))
		}
		ew.printf(" %9s", mixLatency(c, float64(c.MaxUs)))
		if fixed {
			ew.printf(" %8d", e.Queued)
		}
		ew.printf("\n")
	}
}

// mixLatency formats a latency of s, "-" when s holds none.
func mixLatency(s latency.Summary, us float64) string {
	if s.Count == 0 {
		return "-"
	}
	return latency.FormatTimeUs(us)
}
