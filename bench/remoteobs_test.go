package bench

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/internal/cliflag/cliflagtest"
	"github.com/spindle-lab/spindle/observe"
	"github.com/spindle-lab/spindle/remote"
)

// TestObserveHere is the remote side of observing a role: it finds the
// role's process by its tags, samples its threads, and says why perf stat
// has no figures when perf is missing.
func TestObserveHere(t *testing.T) {
	tag := "obs" + strconv.Itoa(os.Getpid())
	wrapper := exec.Command("sleep", "30") // the wrapper: tagged, no role
	wrapper.Env = append(os.Environ(), remote.EnvRun+"="+tag)
	role := exec.Command("sleep", "30")
	role.Env = append(os.Environ(), remote.EnvRun+"="+tag, remote.EnvRole+"=server")
	mock := exec.Command("sleep", "30")
	mock.Env = append(os.Environ(), remote.EnvRun+"="+tag, remote.EnvRole+"=mock")
	for _, c := range []*exec.Cmd{wrapper, role, mock} {
		if err := c.Start(); err != nil {
			t.Skipf("cannot start sleep: %v", err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	// Start returns once the child forked; until it has exec'd, its
	// environment is still this process's, without the tag.
	for _, c := range []*exec.Cmd{wrapper, role, mock} {
		deadline := time.Now().Add(5 * time.Second)
		for {
			env, _ := os.ReadFile("/proc/" + strconv.Itoa(c.Process.Pid) + "/environ")
			if strings.Contains(string(env), remote.EnvRun+"="+tag) || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	noPerf := observe.Perf{LookPath: func(string) (string, error) { return "", exec.ErrNotFound }}
	obs, err := ObserveHere(context.Background(), ObserveOptions{Tag: tag, Role: "server", Also: []string{"mock"},
		Window: 300 * time.Millisecond, Threads: true, PerfStat: true, Perf: noPerf})
	if err != nil {
		t.Fatal(err)
	}
	if obs.Threads == nil || len(obs.Threads.Processes) != 2 || obs.Threads.Processes[0].PID != role.Process.Pid ||
		obs.Threads.Processes[1] != (observe.Process{Name: "mock", PID: mock.Process.Pid}) {
		t.Errorf("threads of %+v, want the role's process %d and the mock's %d (%s)", obs.Threads, role.Process.Pid, mock.Process.Pid, obs.ThreadsNA)
	}
	if obs.PerfStatCSV != "" || !strings.Contains(obs.PerfStatNA, "perf not installed") {
		t.Errorf("perf stat without perf: %q, %q", obs.PerfStatCSV, obs.PerfStatNA)
	}
	// With the real perf, where it counts here: the system calls are in
	// its CSV, or the observation says why not.
	if _, err := exec.LookPath("perf"); err == nil {
		obs, err := ObserveHere(context.Background(), ObserveOptions{Tag: tag, Role: "server",
			Window: 300 * time.Millisecond, PerfStat: true})
		if err != nil {
			t.Fatal(err)
		}
		counted := strings.Contains(obs.PerfStatCSV, observe.SyscallEvent)
		if obs.PerfStatCSV != "" && counted == (obs.SyscallsNA != "") {
			t.Errorf("perf stat's CSV has the system calls: %v, and their n/a reason is %q: want one of them\n%s", counted, obs.SyscallsNA, obs.PerfStatCSV)
		}
	}
	if _, err := ObserveHere(context.Background(), ObserveOptions{Tag: tag, Role: "load", Window: time.Millisecond, Threads: true}); err == nil {
		t.Error("no load process: no error")
	}
}

// ObserveOptions -> Args -> parse gives the flags of "remote observe"
// back; defaults give no argument.
func TestObserveOptionsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    ObserveOptions
		args []string // nil: not checked, only the round trip
	}{
		{"defaults", ObserveOptions{}, []string{}},
		{"the server and the mock beside it", ObserveOptions{Tag: "ab12-h1", Role: "server", Also: []string{"mock"}, Window: 8 * time.Second, Threads: true, PerfStat: true},
			[]string{"--also", "mock", "--perf-stat", "--role", "server", "--tag", "ab12-h1", "--threads", "--window", "8s"}},
		{"a load host", ObserveOptions{Tag: "t", Role: "load", Window: 1500 * time.Millisecond, Threads: true}, nil},
		{"two others", ObserveOptions{Tag: "t", Role: "server", Also: []string{"mock", "load"}, Window: time.Second}, nil},
	} {
		cliflagtest.RoundTrip(t, tc.name, tc.o, (*ObserveOptions).Register, tc.args)
	}
}
