// Package cliflagtest checks, in tests, that a role's flags (a Register
// method and cliflag.Args) are each other's inverse: that the arguments
// written for a value parse back to it.
package cliflagtest

import (
	"flag"
	"reflect"
	"slices"
	"testing"

	"github.com/spindle-lab/spindle/internal/cliflag"
)

// Parse parses args with the flag set register defines, as the spindle
// command does, failing t on an error or a positional argument left over.
func Parse[T any](t testing.TB, register func(*T, *flag.FlagSet), args []string) T {
	t.Helper()
	var v T
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	register(&v, fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	if fs.NArg() > 0 {
		t.Fatalf("parse %q: left %q", args, fs.Args())
	}
	return v
}

// RoundTrip checks that v's arguments (cliflag.Args) parse back to v and,
// when want is not nil, that they are want; name labels the failures.
func RoundTrip[T any](t testing.TB, name string, v T, register func(*T, *flag.FlagSet), want []string) {
	t.Helper()
	args := cliflag.Args(v, register)
	if want != nil && !slices.Equal(args, want) {
		t.Errorf("%s: args %q, want %q", name, args, want)
	}
	if got := Parse(t, register, args); !reflect.DeepEqual(got, v) {
		t.Errorf("%s: args %q parse to %+v, want %+v", name, args, got, v)
	}
}
