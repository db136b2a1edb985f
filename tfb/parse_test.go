package tfb

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseQueries(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"", 1}, {"0", 1}, {"1", 1}, {"2", 2}, {"20", 20}, {"499", 499}, {"500", 500}, {"501", 500},
		{"-1", 1}, {"+7", 7}, {"007", 7}, {"foo", 1}, {"1.5", 1}, {" 2", 1}, {"2 ", 1}, {"0x10", 1},
		{"99999999999999999999", 500}, {"-99999999999999999999", 1}, {"18700000000000000000A", 1},
		{"+", 1}, {"-", 1}, {"+-1", 1}, {"-0", 1}, {"0500", 500}, {"٣", 1},
	} {
		if got := parseQueries(c.in); got != c.want {
			t.Errorf("parseQueries(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

// FuzzParseQueries checks parseQueries on any input: always in
// MinQueries..MaxQueries; a number of one to three digits in that range is
// itself; anything with a character other than a digit after an optional
// sign is MinQueries.
func FuzzParseQueries(f *testing.F) {
	for _, s := range []string{"", "0", "1", "500", "501", "foo", "-1", "+7", "99999999999999999999", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := parseQueries(s)
		if got < MinQueries || got > MaxQueries {
			t.Fatalf("parseQueries(%q) = %d, out of %d..%d", s, got, MinQueries, MaxQueries)
		}
		digits := strings.TrimLeft(s, "+-")
		if len(s)-len(digits) > 1 || digits == "" || strings.Trim(digits, "0123456789") != "" {
			if got != MinQueries {
				t.Fatalf("parseQueries(%q) = %d, want %d for a non-number", s, got, MinQueries)
			}
			return
		}
		if n, err := strconv.Atoi(s); err == nil && len(digits) <= 3 && n >= MinQueries && n <= MaxQueries && got != n {
			t.Fatalf("parseQueries(%q) = %d, want %d", s, got, n)
		}
	})
}
