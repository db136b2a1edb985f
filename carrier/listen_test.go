package carrier

import (
	"net/netip"
	"testing"
)

func TestParseListenAddr(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" for an error
	}{
		{"127.0.0.1:80", "127.0.0.1:80"},
		{"[::1]:8080", "[::1]:8080"},
		{":0", "0.0.0.0:0"},
		{"localhost:9000", "127.0.0.1:9000"},
		{"localhost:http", "127.0.0.1:80"},
		{"example.com:80", ""},
		{"127.0.0.1", ""},
		{"127.0.0.1:99999", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, err := parseListenAddr(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("parseListenAddr(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != netip.MustParseAddrPort(tt.want) {
			t.Errorf("parseListenAddr(%q) = %v, %v, want %s", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseListenAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1:80", ":0", "localhost:1", "[::1]:2", "x:y", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ap, err := parseListenAddr(s)
		if err == nil && !ap.IsValid() {
			t.Errorf("parseListenAddr(%q) = invalid %v without an error", s, ap)
		}
	})
}

// TestListenCloseAtOnce closes listeners before and right after their
// accept tasks start, and in both listener modes: no fd may stay open.
func TestListenCloseAtOnce(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 2})
	for i := 0; i < 50; i++ {
		l, err := g.Listen("127.0.0.1:0", Echo, ListenOptions{ReusePort: i%2 == 0})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err == nil {
			t.Fatal("second Close: no error")
		}
	}
}
