package main

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// wrongValues are what a new user types into a numeric flag by mistake:
// letters, nothing, a number beyond any type, a fraction, a sign, a bare
// number for a duration. refusedBy are the kinds of flag that must refuse
// it ("*": every kind); a value some flags accept, such as -1 for a flag
// that takes any duration, is checked when refused.
var wrongValues = []struct {
	value     string
	refusedBy []string
}{
	{"abc", []string{"*"}},
	{"", []string{"*"}},
	{"1e400", []string{"*"}},
	{"99999999999999999999999", []string{"whole", "duration"}},
	{"1.5", []string{"whole", "duration"}},
	{"-1", []string{"duration"}},
	{"-1s", nil},
	{"0", nil},
}

// Every numeric, duration and count flag of every command refuses a wrong
// value at parse time, as bad input (exit 2), with one line that names the
// command and the flag as typed, quotes the value, and says what is valid.
func TestFlagsSayWhatIsValid(t *testing.T) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	checked := 0
	for _, name := range names {
		c := commands[name]
		if c.flags == nil {
			continue
		}
		c.flags().VisitAll(func(f *flag.Flag) {
			if stdNumeric(f.Value) {
				t.Errorf("%s --%s: a flag package value (%T), whose errors say only \"parse error\": use a cliflag Range", name, f.Name, f.Value)
				return
			}
			ph, _ := f.Value.(interface{ Placeholder() string })
			if ph == nil || !slices.Contains([]string{"N", "NUMBER", "DURATION"}, ph.Placeholder()) {
				return
			}
			kind := "number" // -R 1.5: a rate need not be whole
			switch _, err := c.flags().parse([]string{dashes(f.Name), "abc"}, io.Discard); {
			case ph.Placeholder() == "DURATION":
				kind = "duration"
			case err != nil && strings.Contains(err.Error(), "want a whole number"):
				kind = "whole"
			}
			for _, w := range wrongValues {
				fs := c.flags() // a fresh set: a value accepted does not carry over
				_, err := fs.parse([]string{dashes(f.Name), w.value}, io.Discard)
				mustRefuse := slices.Contains(w.refusedBy, "*") || slices.Contains(w.refusedBy, kind)
				if err == nil {
					if mustRefuse {
						t.Errorf("%s %s %q: accepted", name, dashes(f.Name), w.value)
					}
					continue
				}
				checked++
				err = withCommand(name, err)
				prefix := name + ": " + dashes(f.Name) + " " + strconv.Quote(w.value) + ": "
				msg := err.Error()
				reason, ok := strings.CutPrefix(msg, prefix)
				switch {
				case !errors.Is(err, errBadInput):
					t.Errorf("%s %s %q: %v is not bad input (exit 2)", name, dashes(f.Name), w.value, err)
				case !ok || strings.Contains(msg, "\n"):
					t.Errorf("%s %s %q: %q, want one line starting %q", name, dashes(f.Name), w.value, msg, prefix)
				case !strings.HasPrefix(reason, "want ") && !strings.HasPrefix(reason, "needs a unit: "):
					t.Errorf("%s %s %q: %q does not say what is valid", name, dashes(f.Name), w.value, msg)
				case strings.Contains(reason, "parse error") || strings.Contains(reason, "out of range"):
					t.Errorf("%s %s %q: %q", name, dashes(f.Name), w.value, msg)
				}
			}
		})
	}
	if checked < 100 {
		t.Errorf("only %d wrong values checked: the commands' flags were not found", checked)
	}
}

// stdNumeric reports whether v is one of the flag package's own numeric
// values (flag.IntVar, DurationVar...), which answer a wrong value with
// "parse error" alone.
func stdNumeric(v flag.Value) bool {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() != "flag" {
		return false
	}
	g, ok := v.(flag.Getter)
	if !ok {
		return false
	}
	switch g.Get().(type) {
	case bool, string:
		return false
	}
	return true
}

// The messages for a few wrong values, word for word.
func TestFlagErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--threads", "abc"}, `serve: --threads "abc": want a whole number of at least 0`},
		{[]string{"serve", "--port", "70000"}, `serve: --port "70000": want a whole number from 0 to 65535`},
		{[]string{"serve", "--backend-timeout", "0"}, `serve: --backend-timeout "0": want a duration above 0 such as 10s, 500ms or 2m`},
		{[]string{"serve", "--read-header-timeout", "5"}, `serve: --read-header-timeout "5": needs a unit: 5s, 5ms or 5us`},
		{[]string{"mock", "--threads", "0"}, `mock: --threads "0": want a whole number of at least 1`},
		{[]string{"mock", "--fail-rate", "1.5"}, `mock: --fail-rate "1.5": want a number from 0 to 1`},
		{[]string{"mock", "--seed", "-1"}, `mock: --seed "-1": want a whole number of at least 0`},
		{[]string{"load", "-c", "1.5", "http://x/"}, `load: -c "1.5": want a whole number from 1 to 2147483647`},
		{[]string{"load", "-R", "-5", "http://x/"}, `load: -R "-5": want a number above 0 and at most 1e+09 (k, M, G suffixes allowed)`},
		{[]string{"load", "--mix", "95/fruits", "http://x/"}, `load: --mix "95/fruits": want WEIGHT:TARGET such as 95:/fruits`},
		{[]string{"load", "--mix", "5:/a\tb", "http://x/"}, `load: --mix "5:/a\tb": want a target without spaces or control characters ('\t' at byte 2)`},
		{[]string{"compare", "--rounds", "99999999999999999999"}, `compare: --rounds "99999999999999999999": want a whole number of at least 1, at most 9223372036854775807`},
		{[]string{"connmem", "--body", "2000000"}, `connmem: --body "2000000": want a whole number from 1 to 1048576`},
		{[]string{"spectrum", "--repeats", ""}, `spectrum: --repeats "": want a whole number of at least 1`},
		{[]string{"bench", "--warmup", "-1s"}, `bench: --warmup "-1s": want a duration of at least 0 such as 10s, 500ms or 2m`},
		{[]string{"bench", "--mock-cpuset", "-1"}, `bench: --mock-cpuset "-1": want a CPU list such as 0-3,8 or 0-15:2 ("-1" is not a CPU number or range: CPUs count from 0, a range is FIRST-LAST)`},
		{[]string{"serve", "--ws=maybe"}, `serve: --ws "maybe": want true or false (or the flag alone for true)`},
		{[]string{"serve", "--park-idle=maybe"}, `serve: --park-idle "maybe": want true, false or auto, not "maybe"`},
		{[]string{"bench", "--park-idle=2"}, `bench: --park-idle "2": want true, false or auto, not "2"`},
	} {
		c := commands[tc.args[0]]
		_, err := c.flags().parse(tc.args[1:], io.Discard)
		err = withCommand(tc.args[0], err)
		if err == nil || err.Error() != tc.want || !errors.Is(err, errBadInput) {
			t.Errorf("%q: %v, want bad input %q", tc.args, err, tc.want)
		}
	}
}

// helpArtefactRE finds what a float or a duration's String leaves in
// text for people: "110.00000000000001%", "0.30000000000000004", "1m0s".
var helpArtefactRE = regexp.MustCompile(`\d\.\d*(0{6,}|9{6,})\d|\dm0s\b|\dh0m\b`)

// No command's help prints a binary fraction's or time.Duration's
// artefacts (compare --help printed "110.00000000000001%").
func TestHelpHasNoArtefacts(t *testing.T) {
	for name, c := range commands {
		if c.flags == nil {
			continue
		}
		var out strings.Builder
		if err := help([]string{name}, &out); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if helpArtefactRE.MatchString(line) {
				t.Errorf("help %s: %q", name, line)
			}
		}
	}
	for def, want := range map[string]string{"1m0s": "1m", "10m0s": "10m", "2h0m0s": "2h", "1h10m0s": "1h10m", "1m30s": "1m30s",
		"10s": "10s", "1.5ms": "1.5ms", "0s": "", "carrier": "carrier", "100": "100"} {
		if got := defaultText(&flag.Flag{DefValue: def}); got != want {
			t.Errorf("defaultText(%q) = %q, want %q", def, got, want)
		}
	}
	for share, want := range map[float64]string{1.10: "110%", 0.10: "10%", 0.7: "70%", 0.125: "12.5%", 0.29: "29%"} {
		if got := percent(share); got != want {
			t.Errorf("percent(%v) = %q, want %q", share, got, want)
		}
	}
}
