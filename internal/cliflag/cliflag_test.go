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
