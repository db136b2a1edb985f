package remote

import (
	"errors"
	"strings"
	"testing"
)

func TestParseDest(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Dest
		err  string // substring; "" means success
	}{
		{in: "h1", want: Dest{Host: "h1"}},
		{in: "bob@h1", want: Dest{User: "bob", Host: "h1"}},
		{in: "bob@h1:2222", want: Dest{User: "bob", Host: "h1", Port: 2222}},
		{in: "198.18.0.2:22", want: Dest{Host: "198.18.0.2", Port: 22}},
		{in: "[::1]:2200", want: Dest{Host: "::1", Port: 2200}},
		{in: "[fe80::1%eth0]", want: Dest{Host: "fe80::1%eth0"}},
		{in: "::1", want: Dest{Host: "::1"}},
		{in: "a.b-c_d.example", want: Dest{Host: "a.b-c_d.example"}},
		{in: "", err: "empty host"},
		{in: "@h1", err: "empty user"},
		{in: "bob@", err: "empty host"},
		{in: "h1:", err: "empty port"},
		{in: "h1:0", err: "want 1 to 65535"},
		{in: "h1:65536", err: "want 1 to 65535"},
		{in: "h1:ssh", err: "want 1 to 65535"},
		{in: "-oProxyCommand=x", err: "starts with '-'"},
		{in: "-l@h1", err: "starts with '-'"},
		{in: "h1;reboot", err: "not allowed"},
		{in: "h 1", err: "not allowed"},
		{in: "[::1", err: "missing ']'"},
		{in: "[::1]x", err: "bad ssh destination"},
	} {
		got, err := ParseDest(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrBadDest) {
				t.Errorf("ParseDest(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseDest(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		// The written form parses back to the same destination.
		again, err := ParseDest(got.String())
		if err != nil || again != got {
			t.Errorf("ParseDest(%q.String() = %q) = %+v, %v", tc.in, got.String(), again, err)
		}
	}
}

func TestParseDests(t *testing.T) {
	ds, err := ParseDests("h1, bob@h2:2222,h3")
	if err != nil || len(ds) != 3 || ds[1] != (Dest{User: "bob", Host: "h2", Port: 2222}) {
		t.Fatalf("ParseDests = %+v, %v", ds, err)
	}
	for _, bad := range []string{"h1,h1", "h1,,h2", ""} {
		if _, err := ParseDests(bad); !errors.Is(err, ErrBadDest) {
			t.Errorf("ParseDests(%q) error = %v, want ErrBadDest", bad, err)
		}
	}
}

func TestDestLabel(t *testing.T) {
	for in, want := range map[string]string{"h1": "h1", "bob@h1:2222": "h1_2222", "[::1]:22": "__1_22", "10.0.0.2": "10.0.0.2"} {
		d, err := ParseDest(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Label(); got != want {
			t.Errorf("%q.Label() = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseDest(f *testing.F) {
	for _, s := range []string{"h1", "bob@h1:2222", "[::1]:22", "-x", "a@b@c", "h:1:2", "[x]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDest(s)
		if err != nil {
			return
		}
		if d.Host == "" || strings.HasPrefix(d.Host, "-") || strings.HasPrefix(d.User, "-") || d.Port < 0 || d.Port > 65535 {
			t.Fatalf("ParseDest(%q) = %+v: an ssh option or an empty host got through", s, d)
		}
		for _, a := range d.args() {
			if strings.ContainsAny(a, " \t\n;|&$`'\"\\") {
				t.Fatalf("ParseDest(%q): ssh argument %q holds a shell character", s, a)
			}
		}
	})
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":            "''",
		"plain-1.2_x": "plain-1.2_x",
		"a b":         "'a b'",
		"it's":        `'it'\''s'`,
		"$HOME":       "'$HOME'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
