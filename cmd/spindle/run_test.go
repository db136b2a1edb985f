package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunDispatch(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr error
		wantOut string
	}{
		{[]string{}, errBadInput, ""},
		{[]string{"nope"}, errBadInput, ""},
		{[]string{"help"}, nil, "commands:"},
		{[]string{"help", "version"}, nil, "spindle version"},
		{[]string{"help", "nope"}, errBadInput, ""},
		{[]string{"version"}, nil, "spindle "},
		{[]string{"version", "x"}, errBadInput, ""},
		{[]string{"help", "bench", "extra"}, errBadInput, ""},
		{[]string{"help", "version", "extra"}, errBadInput, ""},
		{[]string{"help", "load"}, nil, "usage: spindle load"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tt.args, &out, &errOut)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr != nil && err == nil) {
			t.Errorf("run(%q) error = %v, want %v", tt.args, err, tt.wantErr)
		}
		if !strings.Contains(out.String(), tt.wantOut) {
			t.Errorf("run(%q) stdout = %q, want it to contain %q", tt.args, out.String(), tt.wantOut)
		}
		if tt.wantErr != nil && (out.Len() > 0 || errOut.Len() > 0) { // main prints the one line
			t.Errorf("run(%q) printed %q and %q besides its error %v", tt.args, out.String(), errOut.String(), err)
		}
	}
}

// spindle alone, or help with more than a command, is bad input in one
// line: the 16 lines of usage went to stderr before the error, and help's
// extra words were ignored with exit 0.
func TestDispatchOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command; spindle help lists them"},
		{[]string{"help", "bench", "extra"}, `help takes one command, got ["extra"] after bench`},
		{[]string{"help", "version", "extra", "more"}, `help takes one command, got ["extra" "more"] after version`},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errOut)
		if !errors.Is(err, errBadInput) || err.Error() != tc.want || out.Len()+errOut.Len() > 0 {
			t.Errorf("run(%q) = %v, printed %q %q; want bad input %q and nothing else", tc.args, err, out.String(), errOut.String(), tc.want)
		}
	}
}

func TestFlagSetInterspersed(t *testing.T) {
	fs := newFlagSet("x", "URL", "")
	d := fs.String("d", "", "")
	v := fs.Bool("v", false, "")
	pos, err := fs.parse([]string{"a", "-d", "5s", "b", "-v", "--", "-c"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if *d != "5s" || !*v || strings.Join(pos, " ") != "a b -c" {
		t.Fatalf("d=%q v=%v pos=%q", *d, *v, pos)
	}
	if _, err := fs.parse([]string{"--bogus"}, io.Discard); !errors.Is(err, errBadInput) {
		t.Fatalf("unknown flag: %v, want bad input", err)
	}
}

// An output directory is never one with an earlier run in it: a given one
// must be new or empty, a default one is made unique.
func TestOutputDir(t *testing.T) {
	root := t.TempDir()
	full := filepath.Join(root, "full")
	empty := filepath.Join(root, "empty")
	taken := filepath.Join(root, "taken")
	for _, d := range []string{full, empty, taken, taken + "-2"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(full, "summary.json"), []byte("{}"), 0o644)
	for _, tc := range []struct {
		given, def string
		want       string
		wantErr    bool
	}{
		{given: filepath.Join(root, "new"), want: filepath.Join(root, "new")},
		{given: empty, want: empty},
		{given: full, wantErr: true},
		{def: filepath.Join(root, "fresh"), want: filepath.Join(root, "fresh")},
		{def: taken, want: taken + "-3"},
	} {
		got, err := outputDir("output-dir", tc.given, tc.def)
		if tc.wantErr {
			if !errors.Is(err, errBadInput) || !strings.Contains(err.Error(), "not empty") {
				t.Errorf("outputDir(%q): %v, want bad input: not empty", tc.given, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("outputDir(%q, %q) = %q, %v; want %q", tc.given, tc.def, got, err, tc.want)
		}
	}
}

// Every command's help speaks one voice: a flag and its alias on one line
// (-c, --connections N), long names with two dashes, a typed placeholder,
// the default once, examples at the end; "COMMAND --help" works as well.
func TestHelpVoice(t *testing.T) {
	for name := range commands {
		if commands[name].hidden {
			continue // spindle's own, run by spindle on other hosts: no user help
		}
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(context.Background(), []string{"help", name}, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			var viaFlag bytes.Buffer
			if err := run(context.Background(), []string{name, "--help"}, &viaFlag, io.Discard); !errors.Is(err, errHelp) || viaFlag.String() != out.String() {
				t.Errorf("%s --help: %v, output differs from help %s", name, err, name)
			}
			help := out.String()
			if !strings.HasPrefix(help, "usage: spindle "+name) {
				t.Errorf("help starts %q", help[:min(len(help), 40)])
			}
			ex := strings.LastIndex(help, "\nexamples:\n")
			if ex < 0 || !strings.Contains(help[ex:], "  spindle "+name) {
				t.Errorf("no examples of %s at the end:\n%s", name, help)
			}
			for _, line := range strings.Split(help, "\n") {
				if strings.Count(line, "(default") > 1 || strings.Contains(line, "(the default") && strings.Contains(line, "(default") {
					t.Errorf("doubled default: %q", line)
				}
				if !strings.HasPrefix(line, "  -") {
					continue
				}
				for _, word := range strings.Fields(strings.ReplaceAll(line, ",", " ")) {
					if strings.HasPrefix(word, "-") && !strings.HasPrefix(word, "--") && len(word) > 2 {
						t.Errorf("long flag with one dash: %q", line)
					}
					if word == "value" || word == "string" || word == "duration" || word == "int" {
						t.Errorf("untyped placeholder: %q", line)
					}
				}
			}
		})
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"help", "load"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"\n  -c, --connections N\n", "\n  -d, --duration DURATION\n", "\n  -t, --threads N\n      load threads (event loops on their own OS threads) (default 2)\n", "\n  --hlog FILE\n"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("help load lacks %q", w)
		}
	}
}

// Errors name the command once, with flags as typed, on one line.
func TestErrorsNameCommandOnce(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"load", "--bogus", "http://x/"}, "load: flag provided but not defined: --bogus"},
		{[]string{"load", "-d", "3", "http://x/"}, `load: -d "3": needs a unit: 3s, 3ms or 3us`},
		{[]string{"bench", "--load-cpuset", "99999"}, `bench: --load-cpuset "99999": want a CPU list such as 0-3,8 or 0-15:2 (CPU 99999 is beyond`},
		{[]string{"serve", "--threads", "abc"}, `serve: --threads "abc": want a whole number of at least 0`},
		{[]string{"serve", "--ws=maybe"}, `serve: --ws "maybe": want true or false`},
		{[]string{"load"}, "load: want exactly one URL"},
		{[]string{"mock", "extra"}, "mock takes no arguments"},
		{[]string{"version", "x"}, "version takes no arguments"},
		{[]string{"version", "--x"}, "version: flag provided but not defined: --x"},
		{[]string{"version", "-x"}, "version: flag provided but not defined: -x"},
		{[]string{"load", "--v=1", "http://x/"}, "load: flag provided but not defined: --v"},
		{[]string{"load", "-d", "1s", "-R", "1e20", "http://127.0.0.1:1/"}, `load: -R "1e20": want a number above 0 and at most 1e+09`},
		{[]string{"load", "--rate", "1e300", "http://127.0.0.1:1/"}, `load: --rate "1e300": want a number above 0 and at most 1e+09`},
		{[]string{"mock", "--fail-rate", "0.7", "--close-rate", "0.7"}, "mock: --fail-rate 0.7 and --close-rate 0.7 add up to 1.4: want at most 1"},
		{[]string{"bench", "--rate", "2G"}, `bench: --rate "2G": want a whole number from 0 to 1000000000`},
	} {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "spindle "+tc.args[0]+":") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line starting %q", tc.args, err, tc.want)
		}
		if !errors.Is(err, errBadInput) {
			t.Errorf("%q: %v is not bad input", tc.args, err)
		}
	}
}
