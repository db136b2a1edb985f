package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/report"
)

// TestSendLagCheck runs a real "spindle bench" at a fixed rate twice, with
// the load generator alone on its CPU and with that CPU shared with busy
// loops: the first passes the run checks, the second is left out by the
// send-lag check, its lag in the reason. The server and mock share the
// other CPU.
func TestSendLagCheck(t *testing.T) {
	cpus, err := cpu.Allowed()
	if err != nil || len(cpus) < 2 {
		t.Skipf("needs 2 CPUs (the load generator's own and one for server and mock); allowed %v (%v)", cpus, err)
	}
	exe := spindleBinary(t)
	needCommands(t, exe, "mock", "serve", "load")
	other, loadCPU := cpus[:1].String(), cpus[1:2].String()
	run := func(name string) report.Summary {
		dir := filepath.Join(t.TempDir(), name)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, exe, "bench", "--mode", "carrier", "--rate", "1000", "--connections", "20",
			"--warmup", "500ms", "--duration", "2s", "--server-cpuset", other, "--mock-cpuset", other,
			"--load-cpuset", loadCPU, "--output-dir", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("spindle bench (%s): %v\n%s", name, err, out)
		}
		res, err := report.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.SendLag == nil || res.Summary.SendLag.Count == 0 {
			t.Fatalf("%s: no send lag recorded: %+v", name, res.Summary.SendLag)
		}
		return res.Summary
	}

	// Idle: a quiet CPU may still lose it once to another test's process;
	// one retry, as the load package's timing tests.
	var why string
	for attempt := 1; attempt <= 2; attempt++ {
		s := run("idle")
		if why = report.Check(s); why == "" {
			t.Logf("idle: p90 send lag %d µs, passes", s.SendLag.PercentilesUs["90"])
			break
		}
		t.Logf("idle attempt %d left out: %s", attempt, why)
	}
	if why != "" {
		t.Errorf("an idle load generator's run was left out: %s", why)
	}

	stop := spin(t, cpus[1], 2)
	s := run("starved")
	stop()
	why = report.Check(s)
	if !strings.Contains(why, "the load generator sent late: p90 send lag") {
		t.Errorf("a starved load generator's run (p90 send lag %d µs) was not left out for its lag: %q", s.SendLag.PercentilesUs["90"], why)
	}
	t.Logf("starved: %s", why)
}

// spin starts n busy loops pinned to c and returns a function that stops
// them.
func spin(t *testing.T, c int, n int) (stop func()) {
	t.Helper()
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := cpu.Pin(cpu.Set{c}); err != nil {
				errs <- err
				return
			}
			for !done.Load() {
			}
		}()
	}
	return func() {
		done.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("pin a busy loop to CPU %d: %v", c, err)
		}
	}
}
