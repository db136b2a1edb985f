package carrier

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestGetg: getg is stable within a goroutine, differs between goroutines
// alive together and is never 0 where it is implemented.
func TestGetg(t *testing.T) {
	if !haveGetg {
		t.Skip("getg is not implemented on this architecture (TaskFromContext compares thread ids)")
	}
	const n = 16
	ids := make(chan uintptr, n)
	release := make(chan struct{}) // all alive at once: no descriptor is reused
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			g := getg()
			if getg() != g {
				t.Error("getg changed within one goroutine")
			}
			ids <- g
			<-release
		})
	}
	seen := map[uintptr]bool{getg(): true}
	for range n {
		g := <-ids
		if g == 0 || seen[g] {
			t.Errorf("getg %#x: zero or shared by two live goroutines", g)
		}
		seen[g] = true
	}
	close(release)
	wg.Wait()
}

// TestGetgChecks: each start-up check of a read of the runtime's
// descriptors passes on this runtime and architecture (a runtime that
// moved a field fails here first, where it would otherwise turn hand-off
// or the park watch off silently).
func TestGetgChecks(t *testing.T) {
	if !haveGetg {
		t.Skip("getg is not implemented on this architecture: hand-off and the park watch are off")
	}
	for _, c := range []struct {
		name string
		ok   func() bool
	}{
		{"getm", mOK},
		{"gstatus", statusOK},
		{"glockedm", lockedOK},
		{"gtrackseq", seqOK},
		{"gwaitreason", reasonOK},
	} {
		if !c.ok() {
			t.Errorf("%s failed its start-up check on %s/%s", c.name, runtime.Version(), runtime.GOARCH)
		}
	}
}

// TestGetgArm64 runs TestGetg and TestTaskFromContext built for arm64 under
// qemu-user, where it is installed (CI installs it): getg's arm64 assembly
// is then checked on an amd64 machine too.
func TestGetgArm64(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package for arm64: not in -short")
	}
	if runtime.GOARCH == "arm64" {
		t.Skip("TestGetg ran natively")
	}
	qemu, err := exec.LookPath("qemu-aarch64")
	if err != nil {
		t.Skip("qemu-aarch64 is not installed (Debian: qemu-user)")
	}
	bin := filepath.Join(t.TempDir(), "carrier.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build for arm64: %v\n%s", err, out)
	}
	run := exec.Command(qemu, bin, "-test.run", "^(TestGetg|TestGetgChecks|TestTaskFromContext)$", "-test.v")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("under qemu-aarch64: %v\n%s", err, out)
	}
	for _, name := range []string{"TestGetg", "TestGetgChecks", "TestTaskFromContext"} {
		if !strings.Contains(string(out), "--- PASS: "+name) {
			t.Errorf("%s did not pass under qemu-aarch64:\n%s", name, out)
		}
	}
}
