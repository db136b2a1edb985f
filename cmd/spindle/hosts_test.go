package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestHostFlagsBadInput: bad host flags are bad input (exit 2) with one
// line naming the problem, before anything is reached or started.
func TestHostFlagsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--load-hosts", "h2,h 3"}, "--load-hosts"},
		{[]string{"--load-hosts", "h2,h2"}, "listed twice"},
		{[]string{"--server-host", "-oProxyCommand=sh"}, "starts with '-'"},
		{[]string{"--mock-host", "h1:99999", "--server-host", "h1"}, "--mock-host"},
		{[]string{"--server-addr", "10.0.0.1"}, "need --server-host"},
		{[]string{"--server-host", "h1", "--server-addr", "h1.example"}, "want an IP address"},
		{[]string{"--load-hosts", "h2"}, "--server-addr"},
		{[]string{"--server-host", "h1", "--ssh-option", "BatchMode"}, "want KEY=VALUE"},
		{[]string{"--server-host", "h1", "--ssh-config", "/nonexistent/ssh_config"}, "ssh config"},
	} {
		for _, cmd := range []string{"bench", "compare"} {
			args := append([]string{cmd, "--output-dir", t.TempDir()}, tc.args...)
			err := run(context.Background(), args, io.Discard, io.Discard)
			if !errors.Is(err, errBadInput) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("spindle %s %q: %v; want one line of bad input with %q", cmd, tc.args, err, tc.want)
			}
		}
	}
}

func TestParseStartAt(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  string
	}{
		{"2026-01-02T15:00:02.5Z", now.Add(2500 * time.Millisecond), ""},
		{"2026-01-02T16:00:02+01:00", now.Add(2 * time.Second), ""},
		{"2026-01-02T14:00:00Z", time.Time{}, "has passed"}, // at once would lose the other hosts' start
		{"2026-01-02T14:59:59.999Z", time.Time{}, "has passed"},
		{"2026-01-02T15:00:00Z", now, ""},
		{"2026-01-02T17:00:00Z", time.Time{}, "ahead"},
		{"2026-01-02 15:00:00", time.Time{}, "RFC 3339"},
		{"", time.Time{}, "RFC 3339"},
		{"15:00", time.Time{}, "RFC 3339"},
	} {
		got, err := parseStartAt(tc.in, now)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseStartAt(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("parseStartAt(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseStartAt(f *testing.F) {
	f.Add("2026-01-02T15:00:02.5Z")
	f.Add("2026-13-02T15:00:00Z")
	now := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if got, err := parseStartAt(s, now); err == nil && got.Sub(now) > maxStartAhead {
			t.Fatalf("parseStartAt(%q) = %v: beyond %v", s, got, maxStartAhead)
		}
	})
}

func TestLoadStartAtBadInput(t *testing.T) {
	err := run(context.Background(), []string{"load", "--start-at", "tomorrow", "http://127.0.0.1:1/"}, io.Discard, io.Discard)
	if !errors.Is(err, errBadInput) || !strings.Contains(err.Error(), "--start-at") {
		t.Errorf("load --start-at tomorrow: %v, want bad input", err)
	}
}

func TestRemoteCommandBadInput(t *testing.T) {
	for _, args := range [][]string{{"remote"}, {"remote", "frob"}, {"remote", "cleanup"}, {"remote", "cleanup", ""}, {"remote", "exec"}} {
		if err := run(context.Background(), args, io.Discard, io.Discard); !errors.Is(err, errBadInput) {
			t.Errorf("spindle %q: %v, want bad input", args, err)
		}
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"help"}, &out, io.Discard); err != nil || strings.Contains(out.String(), "remote") {
		t.Errorf("help lists the hidden remote command: %v\n%s", err, out.String())
	}
}
