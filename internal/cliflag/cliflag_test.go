package cliflag

import (
	"encoding/json"
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

func TestSwitch(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Switch
		wantErr bool
	}{
		{"auto", SwitchAuto, false}, {"true", SwitchOn, false}, {"1", SwitchOn, false},
		{"false", SwitchOff, false}, {"F", SwitchOff, false}, {"", 0, true}, {"on", 0, true}, {"Auto", 0, true},
	} {
		var s Switch
		err := s.Set(tc.in)
		if (err != nil) != tc.wantErr || err == nil && s != tc.want {
			t.Errorf("Set(%q) = %v, %v; want %v, error %v", tc.in, s, err, tc.want, tc.wantErr)
		}
	}
	for _, tc := range []struct {
		s          Switch
		auto, want bool
	}{{SwitchAuto, true, true}, {SwitchAuto, false, false}, {SwitchOn, false, true}, {SwitchOff, true, false}} {
		if got := tc.s.Resolve(tc.auto); got != tc.want {
			t.Errorf("%v.Resolve(%v) = %v", tc.s, tc.auto, got)
		}
	}
	// On the command line: the flag alone is on, =false off, the default auto.
	for _, tc := range []struct {
		args []string
		want Switch
	}{{nil, SwitchAuto}, {[]string{"--park"}, SwitchOn}, {[]string{"--park=false"}, SwitchOff}, {[]string{"--park=auto"}, SwitchAuto}} {
		var s Switch
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		fs.Var(&s, "park", "")
		if err := fs.Parse(tc.args); err != nil || s != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.args, s, err, tc.want)
		}
	}
	// In JSON: auto a string, on and off booleans, either read back.
	for _, s := range []Switch{SwitchAuto, SwitchOn, SwitchOff} {
		b, err := json.Marshal(struct{ P Switch }{s})
		var back struct{ P Switch }
		if err != nil || json.Unmarshal(b, &back) != nil || back.P != s {
			t.Errorf("%v: JSON %s (%v) read back as %v", s, b, err, back.P)
		}
	}
	var bad struct{ P Switch }
	if err := json.Unmarshal([]byte(`{"P": "maybe"}`), &bad); err == nil {
		t.Error(`"maybe" was read as a Switch`)
	}
}

func FuzzSwitch(f *testing.F) {
	for _, s := range []string{"auto", "true", "false", "1", "", "yes"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var s Switch
		if s.Set(in) != nil {
			return
		}
		var back Switch
		if err := back.Set(s.String()); err != nil || back != s {
			t.Errorf("%q: %v reads back as %v (%v)", in, s, back, err)
		}
	})
}
