package bench

import "testing"

// TestParentOf reads the parent's pid from /proc/PID/stat lines, a
// command name with spaces and parentheses included.
func TestParentOf(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want int
	}{
		{"123 (postgres) S 100 123 123 0 -1", 100},
		{"7 (a) b (c) R 1 7 7", 1},
		{"7 (x) S", -1},
		{"7 (x) S notanumber", -1},
		{"7 (x) S -5", -1},
		{"no parenthesis", -1},
		{"", -1},
	} {
		if got := parentOf([]byte(tc.stat)); got != tc.want {
			t.Errorf("parentOf(%q) = %d; want %d", tc.stat, got, tc.want)
		}
	}
}

// FuzzParentOf: any input gives a pid (0 or more) or -1, without a panic.
func FuzzParentOf(f *testing.F) {
	f.Add([]byte("123 (postgres) S 100 123"))
	f.Add([]byte("1 ()) ) S 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if p := parentOf(b); p < -1 {
			t.Errorf("parentOf(%q) = %d", b, p)
		}
	})
}
