package main

import (
	"bytes"
	"context"
	"errors"
	"io"
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
