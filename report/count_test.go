package report

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 result directories"}, {1, "1 result directory"}, {2, "2 result directories"}, {-1, "-1 result directories"}} {
		if got := Count(tc.n, "result directory", "result directories"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
