package cpu

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	tests := []struct {
		in   string
		want Set
		str  string
	}{
		{"", Set{}, ""},
		{"0", Set{0}, "0"},
		{"0-3", Set{0, 1, 2, 3}, "0-3"},
		{"0-3,8", Set{0, 1, 2, 3, 8}, "0-3,8"},
		{"8,0-1,1", Set{0, 1, 8}, "0-1,8"},
		{" 2 , 4-5 \n", Set{2, 4, 5}, "2,4-5"},
		{"0-7:2", Set{0, 2, 4, 6}, "0,2,4,6"},
		{"10-11,3", Set{3, 10, 11}, "3,10-11"},
	}
	for _, tt := range tests {
		got, err := ParseList(tt.in)
		if err != nil {
			t.Errorf("ParseList(%q): %v", tt.in, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("ParseList(%q) = %v, want %v", tt.in, got, tt.want)
		}
		if got.String() != tt.str {
			t.Errorf("ParseList(%q).String() = %q, want %q", tt.in, got.String(), tt.str)
		}
	}
}

func TestParseListErrors(t *testing.T) {
	for _, in := range []string{"a", "1-", "-1", "-", "3-1", "1,,2", "0-3:0", "4:2", "99999", "1.5", "-1:2"} {
		_, err := ParseList(in)
		if !errors.Is(err, ErrBadList) {
			t.Errorf("ParseList(%q) error = %v, want ErrBadList", in, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") { // a CLI prints it as one line
			t.Errorf("ParseList(%q) error is not one line: %q", in, msg)
		}
		if msg := err.Error(); strings.Contains(msg, `""`) { // "-1" said ("" is not a CPU number)
			t.Errorf("ParseList(%q) error names an empty number: %q", in, msg)
		}
	}
}

func TestSetOps(t *testing.T) {
	a, b := Set{0, 1, 2, 3}, Set{2, 3, 4}
	if got := a.Intersect(b); !slices.Equal(got, Set{2, 3}) {
		t.Errorf("Intersect = %v", got)
	}
	if got := a.Minus(b); !slices.Equal(got, Set{0, 1}) {
		t.Errorf("Minus = %v", got)
	}
}

func FuzzParseList(f *testing.F) {
	for _, s := range []string{"0-3,8", "", "1-0", "0-15:4", "7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := ParseList(s)
		if err != nil {
			return
		}
		again, err := ParseList(set.String())
		if err != nil || !slices.Equal(again, set) {
			t.Fatalf("round trip of %q: %v -> %q -> %v (%v)", s, set, set.String(), again, err)
		}
	})
}
