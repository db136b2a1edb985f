package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/spindle-lab/spindle/server"
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
		{"connmem", "--json"}, // a FILE or -, as load's, bench's and compare's
		{"connmem", "--json", "/no/such/dir/connmem.json"},
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
			"--body", "65536", "--hold", "200ms", "--settle", "300ms", "--json", "-").Output()
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

// TestConnmemVerdict: "fallen back" means within max(--back, a quarter of
// the peak) of the baseline, so a mode that keeps its whole peak fails
// however small the peak.
func TestConnmemVerdict(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		name        string
		peak, final int64
		wantErr     bool
	}{
		{"carrier before the pool trim: whole peak kept", 12 * mb, 12 * mb, true},
		{"nethttp before the release: more than the peak kept", 23 * mb, 29 * mb, true},
		{"small peak fully back", 12 * mb, 3 * mb, false},
		{"within the floor", 2 * mb, 2 * mb, false},
		{"large peak, a quarter kept", 40 * mb, 10 * mb, false},
		{"large peak, more than a quarter kept", 40 * mb, 11 * mb, true},
		{"over the goal", 65 * mb, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &connmemResult{Conns: 1000, Goal: DefaultConnmemGoal, Peak: tt.peak, Final: tt.final, Settle: "10s"}
			r.Back = backTolerance(r.Peak, DefaultConnmemBack)
			if r.Final <= r.Back {
				r.BackAfter = "1s"
			}
			if err := r.verdict(); (err != nil) != tt.wantErr {
				t.Errorf("peak %d final %d (tolerance %d): verdict %v, want error %v", tt.peak, tt.final, r.Back, err, tt.wantErr)
			}
		})
	}
}

// connmem's help, its --mode refusal and what it runs agree: a server
// mode (serve's registry) or the mock.
func TestConnmemModes(t *testing.T) {
	var help strings.Builder
	fs, _ := connmemFlags()
	fs.SetOutput(&help)
	fs.Usage()
	err := run(context.Background(), []string{"connmem", "--mode", "fork-join"}, io.Discard, io.Discard)
	for _, m := range append(server.Modes(), "mock") {
		if !strings.Contains(help.String(), string(m)) {
			t.Errorf("connmem's help lacks %s", m)
		}
		if err == nil || !strings.Contains(err.Error(), string(m)) {
			t.Errorf("connmem --mode fork-join: %v, want it to list %s", err, m)
		}
		a := &connmemArgs{mode: string(m), body: 10, unsent: 1}
		if err := a.check(); err != nil {
			t.Errorf("connmem --mode %s: %v", m, err)
		}
	}
}
