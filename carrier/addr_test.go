package carrier

import (
	"errors"
	"net/netip"
	"testing"
)

// TestParseAddr runs the same addresses through the Dial and the Listen
// rules: they differ only in the empty host, port 0 and names.
func TestParseAddr(t *testing.T) {
	const (
		bad  = "error"
		name = "name:" // the rest is the name returned for a lookup
	)
	tests := []struct {
		in           string
		dial, listen string // an address, bad, or name+host
	}{
		{"127.0.0.1:80", "127.0.0.1:80", "127.0.0.1:80"},
		{"127.0.0.1:0080", "127.0.0.1:80", "127.0.0.1:80"},
		{"[::1]:8080", "[::1]:8080", "[::1]:8080"},
		{"[::1]:0", bad, "[::1]:0"},
		{"[::ffff:10.0.0.1]:7", "10.0.0.1:7", "10.0.0.1:7"},
		{"0.0.0.0:9", "0.0.0.0:9", "0.0.0.0:9"},
		{":0", bad, "0.0.0.0:0"},
		{":8080", bad, "0.0.0.0:8080"},
		{"localhost:80", "127.0.0.1:80", "127.0.0.1:80"},
		{"LocalHost:80", "127.0.0.1:80", "127.0.0.1:80"},
		{"localhost:0", bad, "127.0.0.1:0"},
		{"localhost:http", bad, bad},
		{"example.com:80", name + "example.com", bad},
		{"[example.com]:80", name + "example.com", bad},
		{"127.0.0.1", bad, bad},
		{"[::1]", bad, bad},
		{"::1:80", bad, bad},
		{"1.2.3.4:99999", bad, bad},
		{"1.2.3.4:65535", "1.2.3.4:65535", "1.2.3.4:65535"},
		{"1.2.3.4:-1", bad, bad},
		{"1.2.3.4:+1", bad, bad},
		{"1.2.3.4:", bad, bad},
		{"1.2.3:80", bad, bad},
		{"256.1.1.1:80", bad, bad},
		{"[fe80::1%eth0]:80", bad, bad},
		{"[fe80::1]:80", "[fe80::1]:80", "[fe80::1]:80"},
		{"", bad, bad},
		{":", bad, bad},
	}
	for _, tt := range tests {
		for _, u := range []struct {
			use  addrUse
			what string
			want string
		}{{forDial, "dial", tt.dial}, {forListen, "listen", tt.listen}} {
			ap, host, err := parseAddr(tt.in, u.use)
			switch {
			case u.want == bad:
				if err == nil {
					t.Errorf("%s %q = %v %q, want an error", u.what, tt.in, ap, host)
				}
			case len(u.want) > len(name) && u.want[:len(name)] == name:
				if err != nil || host != u.want[len(name):] || ap.Addr().IsValid() {
					t.Errorf("%s %q = %v %q %v, want the name %q to look up", u.what, tt.in, ap, host, err, u.want[len(name):])
				}
			default:
				if err != nil || host != "" || ap != netip.MustParseAddrPort(u.want) {
					t.Errorf("%s %q = %v %q %v, want %s", u.what, tt.in, ap, host, err, u.want)
				}
			}
		}
	}
	if _, _, err := parseAddr("example.com:80", forListen); !errors.Is(err, ErrHostName) {
		t.Errorf("listen on a name: %v, want ErrHostName", err)
	}
}

// FuzzParseAddr: parseAddr never panics, returns either an error, a valid
// address or (Dial only) a name, and every address it accepts parses back
// to itself from its String form under the same rules.
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1:80", ":0", "localhost:1", "[::1]:2", "[::ffff:1.2.3.4]:5",
		"[fe80::1%lo]:6", "example.com:7", "1.2.3.4:99999", "x:y", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, use := range []addrUse{forDial, forListen} {
			ap, name, err := parseAddr(s, use)
			switch {
			case err != nil:
				if ap.IsValid() || name != "" {
					t.Errorf("parseAddr(%q, %d) = %v %q with error %v", s, use, ap, name, err)
				}
			case name != "":
				if use != forDial || ap.Addr().IsValid() {
					t.Errorf("parseAddr(%q, %d) = %v and name %q", s, use, ap, name)
				}
			case !ap.IsValid() || ap.Addr().Is4In6() || ap.Addr().Zone() != "":
				t.Errorf("parseAddr(%q, %d) = %v, not a plain valid address", s, use, ap)
			default:
				back, name2, err := parseAddr(ap.String(), use)
				if err != nil || name2 != "" || back != ap {
					t.Errorf("parseAddr(%q, %d) = %v, which parses back as %v %q %v", s, use, ap, back, name2, err)
				}
			}
		}
	})
}
