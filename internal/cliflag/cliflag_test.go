package cliflag

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

type testFlags struct {
	Threads int
	On, Off bool
	Wait    time.Duration
	H       Strings
	X       string
}

func (f *testFlags) register(fs *flag.FlagSet) {
	for _, n := range []string{"t", "threads"} {
		fs.IntVar(&f.Threads, n, 1, "")
	}
	fs.BoolVar(&f.On, "on", false, "")
	fs.BoolVar(&f.Off, "keep", true, "")
	DurationVar(fs, &f.Wait, "wait", time.Second, "")
	fs.Var(&f.H, "H", "")
	fs.StringVar(&f.X, "x", "a", "")
}

// Args writes each changed flag once under its longest name, booleans
// alone or with =false, one-letter names with one dash, repeated values
// once each; parsing the arguments gives the values back.
func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		v    testFlags
		want []string
	}{
		{"defaults", Defaults((*testFlags).register), nil},
		{"alias and booleans", testFlags{Threads: 4, On: true, Off: false, Wait: time.Second, X: "a"},
			[]string{"--keep=false", "--on", "--threads", "4"}},
		{"repeated, one letter, empty text", testFlags{Threads: 1, Off: true, Wait: 1500 * time.Microsecond, H: Strings{"A: b", "C: d"}, X: ""},
			[]string{"-H", "A: b", "-H", "C: d", "--wait", "1.5ms", "-x", ""}},
	}
	for _, tc := range tests {
		got := Args(tc.v, (*testFlags).register)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		var back testFlags
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		back.register(fs)
		if err := fs.Parse(got); err != nil {
			t.Fatalf("%s: parse %q: %v", tc.name, got, err)
		}
		if back.Threads != tc.v.Threads || back.On != tc.v.On || back.Off != tc.v.Off || back.Wait != tc.v.Wait ||
			!slices.Equal(back.H, tc.v.H) || back.X != tc.v.X {
			t.Errorf("%s: %q parses to %+v, want %+v", tc.name, got, back, tc.v)
		}
	}
}

// Duration refuses a bare number other than 0 and text that is no
// duration.
func TestDurationSet(t *testing.T) {
	var d time.Duration
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{{"10s", 10 * time.Second, true}, {"0", 0, true}, {"5", 0, false}, {"soon", 0, false}} {
		d = -1
		err := Duration{&d}.Set(tc.in)
		if (err == nil) != tc.ok || (tc.ok && d != tc.want) {
			t.Errorf("Set(%q) = %v, %v; want %v, ok %v", tc.in, d, err, tc.want, tc.ok)
		}
	}
}

// Metric and Count read k/M/G suffixes; Metric records that it was given,
// Count refuses fractions and counts beyond an int32.
func TestMetricCountSet(t *testing.T) {
	for _, tc := range []struct {
		in       string
		want     float64
		metricOK bool
		countOK  bool
	}{
		{"20k", 20000, true, true},
		{"1.5M", 1.5e6, true, true},
		{"3G", 3e9, true, false}, // beyond an int32
		{"0", 0, true, true},
		{"-3", -3, true, true},
		{" 7K ", 7000, true, true},
		{"2.5", 2.5, true, false},
		{"fast", 0, false, false},
		{"NaN", 0, false, false},
		{"", 0, false, false},
		{"k", 0, false, false},
	} {
		var v float64
		var given bool
		err := Metric{&v, &given}.Set(tc.in)
		if (err == nil) != tc.metricOK || given != tc.metricOK || (tc.metricOK && v != tc.want) {
			t.Errorf("Metric.Set(%q) = %v, given %v, %v; want %v, ok %v", tc.in, v, given, err, tc.want, tc.metricOK)
		}
		n := -1
		err = Count{&n}.Set(tc.in)
		if (err == nil) != tc.countOK || (tc.countOK && float64(n) != tc.want) || (!tc.countOK && n != -1) {
			t.Errorf("Count.Set(%q) = %v, %v; want %v, ok %v", tc.in, n, err, tc.want, tc.countOK)
		}
	}
	var v float64
	var given bool
	if s := (Metric{&v, &given}).String(); s != "" {
		t.Errorf("Metric not given: String %q, want \"\"", s)
	}
}

// A value Set accepts is written by String so that Set reads it back.
func FuzzMetricSet(f *testing.F) {
	for _, s := range []string{"20k", "1.5M", "2G", "0", "-3", "2.5", "fast", "1e400", "0x10", "Inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v, back float64
		var given, backGiven bool
		if err := (Metric{&v, &given}).Set(s); err == nil {
			out := Metric{&v, &given}.String()
			if err := (Metric{&back, &backGiven}).Set(out); err != nil || back != v || !backGiven {
				t.Errorf("Set(%q) = %v; String %q reads back %v, %v", s, v, out, back, err)
			}
		}
		n := 0
		if err := (Count{&n}).Set(s); err == nil {
			m := 0
			if err := (Count{&m}).Set(Count{&n}.String()); err != nil || m != n {
				t.Errorf("Count.Set(%q) = %d reads back %d, %v", s, n, m, err)
			}
		}
	})
}

// sliceValue is a flag.Value whose type cannot be a map key.
type sliceValue []string

func (v sliceValue) String() string     { return strings.Join(v, ",") }
func (v sliceValue) Set(s string) error { return nil }

// TestArgsNonComparableValue: Args handles a flag whose Value type cannot
// be compared (it used the Value as a map key, which panicked); at its
// default, the flag is left out.
func TestArgsNonComparableValue(t *testing.T) {
	type opts struct{ tags sliceValue }
	got := Args(opts{tags: sliceValue{"a", "b"}}, func(o *opts, fs *flag.FlagSet) {
		fs.Var(sliceValue{"x"}, "tags", "tags") // a copy: reads its default, not o
	})
	if len(got) != 0 {
		t.Errorf("Args = %q, want nothing (the flag is at its default)", got)
	}
}
