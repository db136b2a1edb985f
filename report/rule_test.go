package report

import (
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	st := func(med, lo, hi float64, n int) Stat { return Stat{Median: med, Min: lo, Max: hi, N: n} }
	one := func(v float64) Stat { return st(v, v, v, 1) }
	tests := []struct {
		name     string
		a, b, pr Stat
		want     order
		wantWhy  string // part of why when unclear
	}{
		{name: "no figures", a: Stat{}, b: one(1), want: unclear, wantWhy: "no figures"},
		{name: "equal medians", a: st(2, 1, 3, 3), b: st(2, 1.9, 2.1, 3), want: unclear, wantWhy: "equal medians"},
		// Condition 1: the medians' ratio against MinEffect.
		{name: "4% apart, rounds agree", a: st(1.04, 1.03, 1.05, 3), b: st(1, 0.99, 1.01, 3),
			pr: st(1.04, 1.02, 1.06, 3), want: unclear, wantWhy: "within 5%"},
		{name: "6% apart, rounds agree", a: st(1.06, 1.05, 1.07, 3), b: st(1, 0.99, 1.01, 3),
			pr: st(1.06, 1.04, 1.08, 3), want: higher},
		// Condition 2 with paired rounds: every ratio on one side of 1,
		// even where the ranges overlap.
		{name: "paired all below 1, ranges overlap", a: st(0.22, 0.20, 0.24, 2), b: st(0.27, 0.23, 0.30, 2),
			pr: st(0.81, 0.80, 0.83, 2), want: lower},
		{name: "paired on both sides", a: st(0.8, 0.5, 1.2, 3), b: st(1, 0.9, 1.1, 3),
			pr: st(0.8, 0.6, 1.1, 3), want: unclear, wantWhy: "not all on one side"},
		{name: "paired touching 1", a: st(3, 2, 4, 2), b: st(2, 1, 2, 2),
			pr: st(2, 1, 3, 2), want: unclear, wantWhy: "not all on one side"},
		{name: "paired all above 1, ranges overlap", a: st(3, 2, 4, 2), b: st(2, 1, 2.5, 2),
			pr: st(1.5, 1.2, 1.8, 2), want: higher},
		// Condition 2 without pairs (one paired round at most): ranges.
		{name: "ranges apart", a: st(10, 9, 11, 3), b: st(20, 18, 22, 3), pr: one(0.5), want: lower},
		{name: "ranges overlap", a: st(10, 5, 19, 3), b: st(20, 18, 22, 3), want: unclear, wantWhy: "ranges over rounds overlap"},
		{name: "ranges touch", a: st(10, 5, 18, 2), b: st(20, 18, 22, 2), want: unclear, wantWhy: "overlap"},
		// A single run of either side: no spread.
		{name: "one run each", a: one(1), b: one(2), pr: one(0.5), want: unclear, wantWhy: "single run"},
		{name: "one run against three", a: one(1), b: st(2, 1.9, 2.1, 3), want: unclear, wantWhy: "single run"},
		// A zero base is a difference of any size.
		{name: "zero base, ranges apart", a: st(3, 2, 4, 2), b: st(0, 0, 0, 2), want: higher},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := decide(tt.a, tt.b, tt.pr)
			if got != tt.want {
				t.Errorf("decide = %v (%q), want %v", got, why, tt.want)
			}
			if (got == unclear) != (why != "") || !strings.Contains(why, tt.wantWhy) {
				t.Errorf("why = %q, want it to contain %q (and be empty only when decided)", why, tt.wantWhy)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	c := func(o order) compared {
		return compared{what: "p50", aName: "a", bName: "b", prec: 1, order: o, why: "w",
			a: Stat{Median: 1.1, Min: 1, Max: 1.2, N: 2}, b: Stat{Median: 1, Min: 0.9, Max: 1.1, N: 2},
			paired: Stat{Median: 1.1, Min: 0.9, Max: 1.3, N: 2}}
	}
	tests := []struct {
		name      string
		parts     []expect
		want      string
		wantNotes string
	}{
		{"all as claimed", []expect{{c: c(lower), want: lower}, {c: c(higher), want: higher}}, Confirmed, ""},
		{"one opposite", []expect{{c: c(lower), want: lower}, {c: c(higher), want: lower}}, Refuted, ""},
		{"opposite beats unclear", []expect{{c: c(unclear), want: lower}, {c: c(higher), want: lower}}, Refuted, "p50 inconclusive"},
		{"one unclear", []expect{{c: c(lower), want: lower}, {c: c(unclear), want: lower}},
			Inconclusive, "; p50 inconclusive: a/b 1.10 (per round 0.90–1.30); a 1.0–1.2, b 0.9–1.1: w"},
		{"unclear but or-equal", []expect{{c: c(lower), want: lower}, {c: c(unclear), want: lower, orEqual: true}}, Confirmed, ""},
		{"opposite with or-equal", []expect{{c: c(higher), want: lower, orEqual: true}}, Refuted, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes := judge(tt.parts...)
			if got != tt.want || !strings.Contains(notes, tt.wantNotes) || (tt.wantNotes == "" && notes != "") {
				t.Errorf("judge = %q, %q; want %q with notes %q", got, notes, tt.want, tt.wantNotes)
			}
		})
	}
}
