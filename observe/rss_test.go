package observe

import (
	"os"
	"testing"
)

func TestParseStatmRSS(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64 // -1: an error
	}{
		{"1000 250 100 10 0 300 0\n", 250 * 4096},
		{"1 0 0 0 0 0 0", 0},
		{"1000", -1},
		{"", -1},
		{"1000 x 1", -1},
		{"1000 -3 1", -1},
		{"1 9223372036854775807 0", -1},
	} {
		got, err := ParseStatmRSS([]byte(tt.in), 4096)
		if (err != nil) != (tt.want < 0) || (err == nil && got != tt.want) {
			t.Errorf("ParseStatmRSS(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestReadRSS(t *testing.T) {
	rss, err := ReadRSS("", os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if rss <= 0 {
		t.Fatalf("this process's RSS %d bytes", rss)
	}
	if _, err := ReadRSS(t.TempDir(), 1); err == nil {
		t.Fatal("no error for a missing statm")
	}
}

func FuzzParseStatmRSS(f *testing.F) {
	f.Add([]byte("1000 250 100 10 0 300 0\n"))
	f.Add([]byte("1 2"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rss, err := ParseStatmRSS(data, 4096)
		if err == nil && (rss < 0 || rss%4096 != 0) {
			t.Fatalf("ParseStatmRSS(%q) = %d", data, rss)
		}
	})
}
