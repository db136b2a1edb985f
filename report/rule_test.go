package report

import (
	"strings"
	"testing"
)

// st is a Stat of n runs.
func st(med, lo, hi float64, n int) Stat { return Stat{Median: med, Min: lo, Max: hi, N: n} }

func TestDecide(t *testing.T) {
	one := func(v float64) Stat { return st(v, v, v, 1) }
	// The mechanism is tested with fixed floors (the figures' own floors
	// are measured, and move when they are measured again): a relative
	// figure whose medians each move 2.5% (so a ratio 5.06%), and %wait
	// whose medians each move 2.3 points (a difference 4.6).
	rel := metric{name: "p50", prec: 2, spread: 0.025, stat: figP50.stat}
	wait := figWait
	wait.spread = 2.3
	tests := []struct {
		name     string
		fig      metric
		a, b, pr Stat
		want     order
		weak     bool
		wantWhy  string // part of why when unclear or weak
	}{
		{name: "no figures", fig: rel, a: Stat{}, b: one(1), want: unclear, wantWhy: "no figures"},
		{name: "equal medians", fig: rel, a: st(2, 1, 3, 3), b: st(2, 1.9, 2.1, 3), want: unclear, wantWhy: "equal medians"},
		// The effect against the floor: 4% is under it, 12% over.
		{name: "4% apart, rounds agree", fig: rel, a: st(1.04, 1.03, 1.05, 3), b: st(1, 0.99, 1.01, 3),
			pr: st(1.04, 1.03, 1.05, 3), want: higher, weak: true, wantWhy: "under the p50 run-to-run spread (1.10x between comparisons)"},
		{name: "12% apart, rounds agree", fig: rel, a: st(1.12, 1.11, 1.13, 3), b: st(1, 0.99, 1.01, 3),
			pr: st(1.12, 1.11, 1.13, 3), want: higher},
		// Paired rounds: every ratio on one side of 1, even where the
		// ranges overlap; the effect against the ratios' spread.
		{name: "paired all below 1, ranges overlap", fig: rel, a: st(0.22, 0.20, 0.24, 2), b: st(0.27, 0.23, 0.30, 2),
			pr: st(0.81, 0.80, 0.83, 2), want: lower},
		{name: "paired below 1, ratios spread wider than the effect", fig: rel, a: st(0.8, 0.5, 0.9, 3), b: st(1, 0.9, 1.1, 3),
			pr: st(0.8, 0.5, 0.95, 3), want: lower, weak: true, wantWhy: "of the per-round ratios"},
		{name: "paired on both sides", fig: rel, a: st(0.8, 0.5, 1.2, 3), b: st(1, 0.9, 1.1, 3),
			pr: st(0.8, 0.6, 1.1, 3), want: unclear, wantWhy: "not all on one side"},
		{name: "paired touching 1", fig: rel, a: st(3, 2, 4, 2), b: st(2, 1, 2, 2),
			pr: st(2, 1, 3, 2), want: unclear, wantWhy: "not all on one side"},
		// Without pairs: the ranges, and the effect against the wider.
		{name: "ranges apart", fig: rel, a: st(10, 9, 11, 3), b: st(20, 18, 22, 3), pr: one(0.5), want: lower},
		{name: "ranges apart, one range wide", fig: rel, a: st(10, 4, 11, 3), b: st(20, 18, 22, 3), want: lower, weak: true,
			wantWhy: "(2.75x over rounds)"},
		{name: "ranges overlap", fig: rel, a: st(10, 5, 19, 3), b: st(20, 18, 22, 3), want: unclear, wantWhy: "ranges over rounds overlap"},
		{name: "ranges touch", fig: rel, a: st(10, 5, 18, 2), b: st(20, 18, 22, 2), want: unclear, wantWhy: "overlap"},
		// A single run of either side: an order only beyond the spread,
		// and weak.
		{name: "one run each", fig: rel, a: one(1), b: one(2), pr: one(0.5), want: lower, weak: true,
			wantWhy: "a single run cannot show the rounds agree, but the difference (2.00x) exceeds the p50 run-to-run spread (1.10x between comparisons)"},
		{name: "one run against three", fig: rel, a: one(1), b: st(2, 1.9, 2.1, 3), want: lower, weak: true, wantWhy: "exceeds"},
		{name: "one run, within the spread", fig: rel, a: one(1.04), b: one(1), pr: one(1.04), want: unclear,
			wantWhy: "a single run, and the difference (1.04x) is within the p50 run-to-run spread (1.10x between comparisons)"},
		{name: "one run, within the other side's range", fig: rel, a: one(1.5), b: st(1, 0.6, 1.4, 3), want: unclear,
			wantWhy: "(2.33x over rounds)"},
		{name: "one run, the req/s of the issue", fig: figReqs, a: one(10626), b: st(6434, 6116, 6753, 2), want: higher, weak: true,
			wantWhy: "the difference (1.65x) exceeds the req/s run-to-run spread (1.56x between comparisons)"},
		// A zero base is a difference of any size.
		{name: "zero base, ranges apart", fig: rel, a: st(3, 2, 4, 2), b: st(0, 0, 0, 2), want: higher},
		// An absolute figure: %wait in points against its floor.
		{name: "%wait 1 point apart", fig: wait, a: st(3, 2.9, 3.1, 3), b: st(2, 1.9, 2.1, 3), want: higher, weak: true,
			wantWhy: "(1.0 points) is under the %wait run-to-run spread (4.6 points between comparisons)"},
		{name: "%wait 20 points apart", fig: wait, a: st(31, 30, 33, 3), b: st(11, 10, 12, 3), want: higher},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, weak, why := decide(tt.fig, tt.a, tt.b, tt.pr)
			if got != tt.want || weak != tt.weak {
				t.Errorf("decide = %v weak %v (%q), want %v weak %v", got, weak, why, tt.want, tt.weak)
			}
			if (got == unclear || weak) != (why != "") || !strings.Contains(why, tt.wantWhy) {
				t.Errorf("why = %q, want it to contain %q (and be empty only when decided firmly)", why, tt.wantWhy)
			}
		})
	}
}

// TestIssue12Runs judges the claims of the two comparisons issue 12
// recorded, 20 minutes apart on an unchanged machine, whose verdicts
// flipped under the old rule (a fixed 5% and ranges): claim 3 went from
// inconclusive to refuted although its CPU half supported the claim, and
// claim 5 from confirmed to refuted on a 1-2 point %wait difference. The
// issue gives each figure as median (min–max) over three rounds, without
// the paired ratios. Now every claim's parts have their own verdicts, the
// claim says which part decided it, and the two runs of claim 5 agree or
// say the evidence is weak.
func TestIssue12Runs(t *testing.T) {
	part := func(fig metric, a, b Stat, want order) expect {
		c := compared{fig: fig, aName: "a", bName: "b", a: a, b: b}
		c.order, c.weak, c.why = decide(fig, a, b, Stat{})
		return expect{c: c, want: want}
	}
	// Active threads are not in the issue; both runs had 5 against 3 as
	// in the study, which decides nothing here: the %wait part does.
	threads := part(figThreads, st(5, 5, 5, 3), st(3, 3, 3, 3), higher)
	tests := []struct {
		name     string
		parts    []expect
		verdict  string
		weak     bool
		decided  string
		partWant []string // each part's verdict, "weak" appended when weak
	}{
		{"claim 3 run 2: carrier's context switches higher, CPUs lower",
			[]expect{
				part(figSwitches, st(9106, 7691, 9885, 3), st(3455, 2072, 4665, 3), lower), // carrier, nethttp
				part(figCPUs, st(0.60, 0.58, 0.65, 3), st(0.92, 0.91, 0.96, 3), lower),
			},
			Refuted, false, "context switches/s", []string{"refuted", "confirmed weak"}},
		{"claim 5 run 1: nethttp %wait 2.2 points above carrier's",
			[]expect{threads, part(figWait, st(7.3, 6.2, 8.0, 3), st(5.1, 4.2, 5.4, 3), higher)}, // nethttp, carrier
			Confirmed, true, "%wait", []string{"confirmed", "confirmed weak"}},
		{"claim 5 run 2: nethttp %wait 1.4 points below carrier's",
			[]expect{threads, part(figWait, st(2.7, 1.6, 3.5, 3), st(4.1, 3.8, 6.9, 3), higher)},
			Refuted, true, "%wait", []string{"confirmed", "refuted weak"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := judge(tt.parts...)
			if j.verdict != tt.verdict || j.weak != tt.weak || j.decided != tt.decided {
				t.Errorf("judge = %s weak %v decided by %q, want %s weak %v by %q (%s)",
					j.verdict, j.weak, j.decided, tt.verdict, tt.weak, tt.decided, j.notes)
			}
			var got []string
			for _, p := range j.parts {
				v := p.Verdict
				if p.Weak {
					v += " weak"
				}
				got = append(got, v)
			}
			if strings.Join(got, ",") != strings.Join(tt.partWant, ",") {
				t.Errorf("parts %v, want %v", got, tt.partWant)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	c := func(o order, weak bool) compared {
		return compared{fig: metric{name: "p50", prec: 1}, aName: "a", bName: "b", order: o, weak: weak, why: "w",
			a: Stat{Median: 1.1, Min: 1, Max: 1.2, N: 2}, b: Stat{Median: 1, Min: 0.9, Max: 1.1, N: 2},
			paired: Stat{Median: 1.1, Min: 0.9, Max: 1.3, N: 2}}
	}
	tests := []struct {
		name      string
		parts     []expect
		want      string
		weak      bool
		wantNotes string
	}{
		{"all as claimed", []expect{{c: c(lower, false), want: lower}, {c: c(higher, false), want: higher}}, Confirmed, false, ""},
		{"one opposite", []expect{{c: c(lower, false), want: lower}, {c: c(higher, false), want: lower}}, Refuted, false, ""},
		{"opposite beats unclear", []expect{{c: c(unclear, false), want: lower}, {c: c(higher, false), want: lower}}, Refuted, false, "p50 inconclusive"},
		{"unclear beats weakly opposite", []expect{{c: c(unclear, false), want: lower}, {c: c(higher, true), want: lower}}, Inconclusive, false, "p50 weak: w"},
		{"one unclear", []expect{{c: c(lower, false), want: lower}, {c: c(unclear, false), want: lower}},
			Inconclusive, false, "; p50 inconclusive: a 1.1 (1.0–1.2), b 1.0 (0.9–1.1); a/b 1.10 (per round 0.90–1.30): w"},
		{"weak as claimed", []expect{{c: c(lower, true), want: lower}, {c: c(lower, false), want: lower}}, Confirmed, true, "p50 weak"},
		{"unclear but or-equal", []expect{{c: c(lower, false), want: lower}, {c: c(unclear, false), want: lower, orEqual: true}}, Confirmed, false, ""},
		{"opposite with or-equal", []expect{{c: c(higher, false), want: lower, orEqual: true}}, Refuted, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := judge(tt.parts...)
			if j.verdict != tt.want || j.weak != tt.weak || !strings.Contains(j.notes, tt.wantNotes) || (tt.wantNotes == "" && j.notes != "") {
				t.Errorf("judge = %q weak %v, %q; want %q weak %v with notes %q", j.verdict, j.weak, j.notes, tt.want, tt.weak, tt.wantNotes)
			}
		})
	}
}

func TestAgreement(t *testing.T) {
	f := func(v string, weak bool) Finding { return Finding{Verdict: v, Weak: weak} }
	tests := []struct {
		a, b Finding
		want string
	}{
		{f(Confirmed, false), f(Confirmed, true), "same"},
		{f(Confirmed, true), f(Refuted, true), "differs, one not firm"},      // issue 12's claim 5 now
		{f(Inconclusive, false), f(Refuted, false), "differs, one not firm"}, // issue 12's claim 3
		{f(Confirmed, false), f(Refuted, false), "differs"},
	}
	for _, tt := range tests {
		if got := Agreement(tt.a, tt.b); got != tt.want {
			t.Errorf("Agreement(%+v, %+v) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}
