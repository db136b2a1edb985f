package cliflag

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

// headers is a Repeated value for the test.
type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(s string) error { *h = append(*h, s); return nil }
func (h *headers) Values() []string   { return *h }

type testFlags struct {
	Threads int
	On, Off bool
	Wait    time.Duration
	H       headers
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
		{"repeated, one letter, empty text", testFlags{Threads: 1, Off: true, Wait: 1500 * time.Microsecond, H: headers{"A: b", "C: d"}, X: ""},
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
