package remote

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeSession is a session whose ssh is testdata/fakessh (commands run on
// this machine) and whose binary cache is a temporary directory.
func fakeSession(t *testing.T) (*Session, string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the fake ssh needs a Linux shell and /proc")
	}
	for _, p := range []string{"sh", "date", "uname", "sed"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("the fake ssh needs %s: %v", p, err)
		}
	}
	ssh, err := filepath.Abs("testdata/fakessh")
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(t.TempDir(), "cache")
	s, err := NewSession(Options{SSH: ssh, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, cache
}

// TestPrepareFake prepares a "host" that is this machine through the fake
// ssh: the binary is copied by its hash, found the second time, probed,
// and the clock offset is measured; an unreachable host fails naming it.
func TestPrepareFake(t *testing.T) {
	s, cache := fakeSession(t)
	exe, err := filepath.Abs("testdata/fakespindle")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := FileSHA256(exe)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Host(Dest{Host: "h1"})
	if err := h.Prepare(context.Background(), exe, sum, 3); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(cache, sum, "spindle")
	if h.Exe != want || !h.Info.Copied || h.Info.BinarySHA256 != sum {
		t.Errorf("first prepare: exe %s, copied %v; want %s copied", h.Exe, h.Info.Copied, want)
	}
	if got, err := FileSHA256(want); err != nil || got != sum {
		t.Errorf("the copy's hash %s, %v; want %s", got, err, sum)
	}
	if h.Info.Addr != "127.0.0.1" || h.Info.Kernel == "" || len(h.Info.CPUs) == 0 || h.Info.Clock.Samples != 3 {
		t.Errorf("info %+v", h.Info)
	}
	// The same machine: the offset is within its uncertainty of 0, give
	// or take date's own start (a few ms on a busy machine).
	if off := h.Info.Clock.Offset.Abs(); off > h.Info.Clock.Uncertainty+h.Info.Clock.RTT {
		t.Errorf("offset %v from this machine's own clock, uncertainty %v", h.Info.Clock.Offset, h.Info.Clock.Uncertainty)
	}
	again := s.Host(Dest{Host: "h2"})
	if err := again.Prepare(context.Background(), exe, sum, 1); err != nil {
		t.Fatal(err)
	}
	if again.Info.Copied {
		t.Error("second prepare copied the binary again")
	}
	entries, _ := os.ReadDir(filepath.Join(cache, sum))
	if len(entries) != 1 {
		t.Errorf("cache holds %d files, want the binary alone (no temporary left)", len(entries))
	}
	down := s.Host(Dest{Host: "down"})
	err = down.Prepare(context.Background(), exe, sum, 1)
	if err == nil || !strings.HasPrefix(err.Error(), "down: ") || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("unreachable host: %v, want one line naming it and ssh's reason", err)
	}
}

// TestPrepareOtherArch: a host of another architecture is refused before
// anything is copied there.
func TestPrepareOtherArch(t *testing.T) {
	if runtime.GOARCH == "arm64" {
		t.Skip("the fake arm host is this machine's architecture")
	}
	s, cache := fakeSession(t)
	exe, err := filepath.Abs("testdata/fakespindle")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Host(Dest{Host: "arm"}).Prepare(context.Background(), exe, "abc", 1)
	if err == nil || !strings.Contains(err.Error(), "arm: host runs Linux aarch64, this spindle binary is built for linux/"+runtime.GOARCH) {
		t.Errorf("Prepare on an arm64 host: %v", err)
	}
	if _, err := os.Stat(cache); err == nil {
		t.Error("something was copied to the arm64 host")
	}
}
