package remote

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
)

// alive says whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// grandchild starts sh with a background sleep (a second process in the
// group) and returns the command and a file that will hold the sleep's pid.
func grandchild(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	return exec.Command("sh", "-c", "sleep 60 & echo $! > "+pidFile+"; wait"), pidFile
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err == nil {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the child never wrote its pid")
	return 0
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExecStopsGroupWhenStdinCloses(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	cmd, pidFile := grandchild(t)
	r, w := io.Pipe()
	errc := make(chan error, 1)
	go func() { errc <- Exec(cmd, r, ExecOptions{Grace: time.Second}) }()
	sleeper := readPid(t, pidFile)
	w.Close() // the SSH session ends
	select {
	case err := <-errc:
		if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "standard input closed") {
			t.Errorf("Exec = %v, want ErrStopped (standard input closed)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Exec did not return after stdin closed")
	}
	waitGone(t, sleeper)
}

func TestExecLimit(t *testing.T) {
	cmd, pidFile := grandchild(t)
	r, w := io.Pipe()
	defer w.Close()
	start := time.Now()
	err := Exec(cmd, r, ExecOptions{Grace: time.Second, Limit: 300 * time.Millisecond})
	if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "time limit") {
		t.Errorf("Exec = %v, want ErrStopped (time limit)", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Exec took %v with a 300ms limit", d)
	}
	waitGone(t, readPid(t, pidFile))
}

func TestExecChildExits(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	err := Exec(exec.Command("sh", "-c", "exit 7"), r, ExecOptions{Grace: time.Second})
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("Exec = %v, want exit status 7", err)
	}
	if err := Exec(exec.Command("/nonexistent/spindle"), r, ExecOptions{}); err == nil {
		t.Error("Exec of a missing program: no error")
	}
}

func TestLeftoversFakeProc(t *testing.T) {
	root := t.TempDir()
	write := func(pid, env string) {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "environ"), []byte(env), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("10", "PATH=/bin\x00SPINDLE_RUN=abc\x00")
	write("11", "SPINDLE_RUN=abcd\x00")                       // another run
	write("12", "X=SPINDLE_RUN=abc\x00")                      // not the variable
	write("13", "HOME=/\x00SPINDLE_RUN=abc")                  // last entry without NUL
	write("15", "SPINDLE_RUN=abc\x00SPINDLE_ROLE=server\x00") // the role itself
	write(strconv.Itoa(os.Getpid()), "SPINDLE_RUN=abc\x00")   // the cleanup itself
	write("self", "SPINDLE_RUN=abc\x00")
	if err := os.MkdirAll(filepath.Join(root, "14"), 0o755); err != nil { // no environ to read
		t.Fatal(err)
	}
	got, err := Leftovers(root, "abc")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{10, 13, 15}) {
		t.Errorf("Leftovers = %v, want [10 13 15]", got)
	}
	if got, err := Tagged(root, "abc", "server"); err != nil || !slices.Equal(got, []int{15}) {
		t.Errorf("Tagged(server) = %v, %v; want [15]", got, err)
	}
	if _, err := Leftovers(root, ""); err == nil {
		t.Error("empty tag: no error")
	}
	if _, err := Leftovers(filepath.Join(root, "missing"), "abc"); err == nil {
		t.Error("missing proc root: no error")
	}
}

func TestKillLeftoversReal(t *testing.T) {
	tag := "test" + strconv.Itoa(os.Getpid())
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), EnvRun+"="+tag)
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	n, err := KillLeftovers("", tag, 100*time.Millisecond) // sleep 60 does not end by itself
	if err != nil || n != 1 {
		t.Fatalf("KillLeftovers = %d, %v; want 1", n, err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the tagged process survived")
	}
	if n, err := KillLeftovers("", tag, time.Second); err != nil || n != 0 {
		t.Errorf("second pass = %d, %v; want 0", n, err)
	}
}

// TestExecArgs: the command line quotes what the shell would split and
// spells the flags as ExecFlags.Args (in name order, the default grace
// left out), which "remote exec" parses back (TestExecFlagsRoundTrip).
func TestExecArgs(t *testing.T) {
	f := ExecFlags{ExecOptions: ExecOptions{Grace: DefaultGrace, Limit: time.Minute}, Role: "server", CPUs: cpu.Set{0, 1}}
	got := ExecArgs("/home/b/.cache/spindle/ab/spindle", "t1", f, []string{"serve", "--host", ""})
	want := "exec env SPINDLE_RUN=t1 /home/b/.cache/spindle/ab/spindle remote exec --cpuset 0-1 --limit 1m0s --role server -- serve --host ''"
	if got != want {
		t.Errorf("ExecArgs =\n%s\nwant\n%s", got, want)
	}
}

func TestRemoveRunFiles(t *testing.T) {
	tag := "rf" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(RunFile(tag, "load.hlog"), []byte("x"), 0o600); err != nil {
		t.Skipf("no /tmp: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(RunFile(tag, "perf-server"), "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	other := RunFile(tag+"x", "load.hlog") // another run's
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(other)
	if err := RemoveRunFiles(tag); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(RunFile(tag, "*")); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another run's file removed: %v", err)
	}
	for _, bad := range []string{"", "a/b", "*"} {
		if err := RemoveRunFiles(bad); err == nil {
			t.Errorf("RemoveRunFiles(%q): no error", bad)
		}
	}
}
