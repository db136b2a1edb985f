package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/bench"
)

// compare's flags mean what they say where they are typed: --warmup 0 is
// no warm-up, --time-budget 0 no extra rounds; a 0 that cannot mean
// anything (--duration, --connections) is refused as bench refuses it;
// left out, each is the preset's. Conflicts and empty lists are refused.
func TestCompareOptions(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    string // a refusal's message, "" for options
		check   func(o bench.CompareOptions, a *compareArgs) bool
		explain string
	}{
		{args: nil, check: func(o bench.CompareOptions, a *compareArgs) bool {
			return !o.NoWarmup && o.Warmup == 0 && o.Duration == 0 && o.Connections == 0 && !a.budgetGiven
		}, explain: "the presets'"},
		{args: []string{"--warmup", "0"}, check: func(o bench.CompareOptions, _ *compareArgs) bool { return o.NoWarmup }, explain: "no warm-up"},
		{args: []string{"--warmup", "2s"}, check: func(o bench.CompareOptions, _ *compareArgs) bool { return !o.NoWarmup && o.Warmup == 2*time.Second }, explain: "2s"},
		{args: []string{"--time-budget", "0"}, check: func(_ bench.CompareOptions, a *compareArgs) bool { return a.budgetGiven && a.budget == 0 }, explain: "no extra rounds"},
		{args: []string{"--rates", "20k,1.5M, 700"}, check: func(o bench.CompareOptions, _ *compareArgs) bool {
			return slices.Equal(o.Rates, []int{20000, 1500000, 700})
		}, explain: "rates as bench --rate reads them"},
		{args: []string{"--rates", "2e9"}, want: `--rates "2e9": want a whole number from 1 to 1000000000`},
		{args: []string{"--duration", "0"}, want: `--duration "0": want a duration above 0`},
		{args: []string{"--connections", "0"}, want: `--connections "0": want a whole number of at least 1`},
		{args: []string{"--blocking-share", "10"}, want: "--blocking-share 10 goes with --blocking KIND"},
		{args: []string{"--only", ""}, want: `--only "": want a comma-separated list of configurations (nethttp, handoff,`},
		{args: []string{"--only", " , "}, want: `--only " , ": want a comma-separated list`},
	} {
		fs, a := compareFlags()
		_, err := fs.parse(tc.args, io.Discard)
		var o bench.CompareOptions
		if err == nil {
			o, err = a.options(fs)
		}
		if tc.want != "" {
			if !errors.Is(err, errBadInput) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("compare %q: %v, want bad input starting %q", tc.args, err, tc.want)
			}
			continue
		}
		if err != nil || !tc.check(o, a) {
			t.Errorf("compare %q: %+v, %v; want %s", tc.args, o, err, tc.explain)
		}
	}
}

// compare's help lists every configuration --only accepts (it left out
// carrier+park, which --only took and its error listed).
func TestCompareHelpListsVariants(t *testing.T) {
	var out strings.Builder
	fs, _ := compareFlags()
	fs.SetOutput(&out)
	fs.Usage()
	for _, name := range bench.VariantNames() {
		if !strings.Contains(out.String(), "\n  "+name+" ") {
			t.Errorf("compare's help lacks %s:\n%s", name, out.String())
		}
	}
}
