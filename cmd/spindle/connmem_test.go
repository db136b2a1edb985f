package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"testing"
)

func TestConnmemFlagsRejected(t *testing.T) {
	for _, args := range [][]string{
		{"connmem", "--mode", "fork-join"},
		{"connmem", "--conns", "0"},
		{"connmem", "--body", "2000000"},
		{"connmem", "--unsent", "0"},
		{"connmem", "--body", "10", "--unsent", "11"},
		{"connmem", "--threads", "-1"},
		{"connmem", "--goal", "0"},
		{"connmem", "--settle", "0s"},
		{"connmem", "extra"},
	} {
		if err := run(context.Background(), args, io.Discard, io.Discard); !errors.Is(err, errBadInput) {
			t.Errorf("run(%q) = %v, want bad input", args, err)
		}
	}
}

// TestConnmemCommand runs a small connmem against each kind of child: it
// reports a baseline and figures, and passes a goal far over them.
func TestConnmemCommand(t *testing.T) {
	exe := spindleBinary(t)
	for _, mode := range []string{"carrier", "mock"} {
		out, err := exec.Command(exe, "connmem", "--mode", mode, "--threads", "1", "--conns", "20",
			"--body", "65536", "--hold", "200ms", "--settle", "300ms", "--json").Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, out)
		}
		var r connmemResult
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: %v in %q", mode, err, out)
		}
		if r.Mode != mode || r.Conns != 20 || r.Baseline <= 0 || r.Sent != 65536-DefaultConnmemUnsent || r.BackAfter == "" {
			t.Fatalf("%s: %+v", mode, r)
		}
	}
}
