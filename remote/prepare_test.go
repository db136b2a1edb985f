package remote

import (
	"errors"
	"strings"
	"testing"

	"github.com/spindle-lab/spindle/cpu"
)

func TestParseProbe(t *testing.T) {
	good := "Welcome to h1\nos=Linux\narch=x86_64\nkernel=6.1.0-18-amd64\ncpus=0-3,8\n" +
		"model=Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz\nperf=/usr/bin/perf\nhome=/home/bob\n"
	in, home, err := parseProbe([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	want := Info{OS: "Linux", Arch: "x86_64", Kernel: "6.1.0-18-amd64", CPUs: cpu.Set{0, 1, 2, 3, 8},
		CPUModel: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", Perf: "/usr/bin/perf"}
	if in.OS != want.OS || in.Arch != want.Arch || in.Kernel != want.Kernel || in.CPUs.String() != want.CPUs.String() ||
		in.CPUModel != want.CPUModel || in.Perf != want.Perf || home != "/home/bob" {
		t.Errorf("parseProbe = %+v, home %q; want %+v, /home/bob", in, home, want)
	}
	for _, tc := range []struct{ name, out, err string }{
		{"no cpus", "os=Linux\narch=x86_64\nkernel=6\nhome=/\n", "no cpus"},
		{"empty cpus", "os=Linux\narch=x86_64\nkernel=6\ncpus=\nhome=/\n", "no online CPUs"},
		{"bad cpus", "os=Linux\narch=x86_64\nkernel=6\ncpus=3-1\nhome=/\n", "online CPUs"},
		{"empty uname", "os=\narch=\nkernel=6\ncpus=0\nhome=/\n", "no OS"},
		{"nothing", "", "no os"},
	} {
		_, _, err := parseProbe([]byte(tc.out))
		if err == nil || !errors.Is(err, ErrBadProbe) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: parseProbe error = %v, want ErrBadProbe with %q", tc.name, err, tc.err)
		}
	}
}

func FuzzParseProbe(f *testing.F) {
	f.Add("os=Linux\narch=x86_64\nkernel=6\ncpus=0-3\nhome=/root\n")
	f.Add("os=Linux\narch=aarch64\nkernel=6\ncpus=0-15:2\nmodel=\nperf=\nhome=\n")
	f.Add("==\n=\nos")
	f.Fuzz(func(t *testing.T, s string) {
		in, _, err := parseProbe([]byte(s))
		if err == nil && (in.OS == "" || len(in.CPUs) == 0) {
			t.Fatalf("parseProbe(%q) = %+v without an error", s, in)
		}
	})
}

func TestCheckPlatform(t *testing.T) {
	for _, tc := range []struct {
		os, arch, goos, goarch string
		ok                     bool
	}{
		{"Linux", "x86_64", "linux", "amd64", true},
		{"Linux", "aarch64", "linux", "arm64", true},
		{"Linux", "aarch64", "linux", "amd64", false},
		{"Darwin", "arm64", "linux", "arm64", false},
		{"Linux", "sparc64", "linux", "amd64", false},
	} {
		err := checkPlatform(tc.os, tc.arch, tc.goos, tc.goarch)
		if (err == nil) != tc.ok {
			t.Errorf("checkPlatform(%s %s, %s/%s) = %v, want ok %v", tc.os, tc.arch, tc.goos, tc.goarch, err, tc.ok)
		}
	}
}

func TestParseHostName(t *testing.T) {
	out := []byte("user bob\nhostname 198.18.0.2\nport 22\n")
	if got := parseHostName(out, "h1"); got != "198.18.0.2" {
		t.Errorf("parseHostName = %q", got)
	}
	if got := parseHostName([]byte("user bob\n"), "h1"); got != "h1" {
		t.Errorf("parseHostName without hostname = %q, want the default", got)
	}
}
