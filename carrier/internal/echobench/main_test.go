package main

import (
	"strings"
	"testing"
)

func TestParseLoadOutput(t *testing.T) {
	tests := []struct {
		in          string
		rate, total float64
		ok          bool
	}{
		{"rate 12345 total 30000\n", 12345, 30000, true},
		{"rate 0 total 0", 0, 0, true},
		{"rate 1.5e3 total 2", 1500, 2, true},
		{"", 0, 0, false},
		{"rate x total 1", 0, 0, false},
		{"rate 1 total", 0, 0, false},
		{"speed 1 total 2", 0, 0, false},
		{"rate -1 total 2", 0, 0, false},
	}
	for _, tt := range tests {
		rate, total, err := parseLoadOutput([]byte(tt.in))
		if (err == nil) != tt.ok || rate != tt.rate || total != tt.total {
			t.Errorf("parseLoadOutput(%q) = %v, %v, %v; want %v, %v, ok=%v", tt.in, rate, total, err, tt.rate, tt.total, tt.ok)
		}
	}
}

func FuzzParseLoadOutput(f *testing.F) {
	f.Add([]byte("rate 100 total 200\n"))
	f.Add([]byte("rate NaN total 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rate, total, err := parseLoadOutput(b)
		if err == nil && !(rate >= 0 && total >= 0) {
			t.Errorf("parseLoadOutput(%q) = %v, %v without an error", b, rate, total)
		}
	})
}

// A rate that cannot be paced is refused before any connection is made.
func TestLoadRejectsBadRate(t *testing.T) {
	for _, r := range []string{"-1", "NaN", "+Inf"} {
		// The refusal names the flag: a dial to port 1 would fail too.
		if err := load([]string{"-addr", "127.0.0.1:1", "-rate", r}); err == nil || !strings.Contains(err.Error(), "-rate") {
			t.Errorf("-rate %s: %v, want it refused", r, err)
		}
	}
}

// compare refuses bad input before it starts any process.
func TestCompareRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-rate", "-5"}, "-rate"},
		{[]string{"-client-cpus", ""}, "at least one CPU"},
		{[]string{"-server-cpus", "x"}, "-server-cpus"},
	} {
		if err := compare(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("compare(%q) = %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}
