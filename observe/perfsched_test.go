package observe

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fixtureTIDs are the threads of the Go program traced in
// testdata/perfsched/go-threads.txt (captured on dev-2vcpu).
func fixtureTIDs(t testing.TB) map[int]string {
	tids := map[int]string{}
	for _, f := range strings.Fields(string(readFixture(t, "perfsched", "go-threads.tids"))) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		tids[n] = "gobusy"
	}
	return tids
}

func TestParseSchedScript(t *testing.T) {
	d, err := ParseSchedScript(readFixture(t, "perfsched", "go-threads.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sel := d.Select(fixtureTIDs(t))
	if len(sel.Threads) < 4 {
		t.Fatalf("%d traced threads of the program, want at least the 4 busy ones", len(sel.Threads))
	}
	runs, migr := 0, 0
	for _, th := range sel.Threads {
		if th.Comm != "gobusy" || th.Process != "gobusy" {
			t.Errorf("thread %d: comm %q process %q", th.TID, th.Comm, th.Process)
		}
		runs += th.TotalRuns()
		migr += th.Migrations
	}
	// Counted by hand: grep -c 'next_comm=gobusy' and the migrate lines of gobusy.
	if runs != 404 || migr != 25 {
		t.Errorf("runs %d migrations %d, want 404 and 25", runs, migr)
	}
	var buf bytes.Buffer
	if err := sel.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "CPU 0") || !strings.Contains(buf.String(), "CPU 1") {
		t.Errorf("distribution text lacks CPU columns:\n%s", buf.String())
	}
}

func TestParseSchedScriptLines(t *testing.T) {
	in := `  my thread  12 [003]   1.000: sched:sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=my thread next_pid=12 next_prio=120
  a  5 [003]   1.001: sched:sched_switch: prev_comm=my thread prev_pid=12 prev_prio=120 prev_state=S ==> next_comm=swapper/3 next_pid=0 next_prio=120
  migration/3 20 [003] 1.002: sched:sched_migrate_task: comm=my thread pid=12 prio=120 orig_cpu=3 dest_cpu=1
garbage line
`
	d, err := ParseSchedScript([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Threads) != 1 {
		t.Fatalf("threads = %+v, want only tid 12 (pid 0 is idle)", d.Threads)
	}
	th := d.Threads[0]
	if th.TID != 12 || th.Comm != "my thread" || th.Runs[3] != 1 || th.Migrations != 1 {
		t.Errorf("thread = %+v", th)
	}
	for _, bad := range []string{
		"x 1 [zz] 1.0: sched:sched_switch: next_comm=a next_pid=1\n",
		"x 1 [001] 1.0: sched:sched_switch: next_comm=a next_pid=q\n",
		"x 1 [001] 1.0: sched:sched_migrate_task: comm=a prio=1\n",
	} {
		if _, err := ParseSchedScript([]byte(bad)); err == nil {
			t.Errorf("ParseSchedScript(%q) succeeded, want an error", bad)
		}
	}
}

func TestRunPerfSched(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf not installed")
	}
	stop := burn(t)
	defer stop()
	data, err := Perf{}.RunPerfSched(context.Background(), t.TempDir(), 200*time.Millisecond)
	if err != nil {
		t.Skipf("perf sched cannot trace here: %v", err)
	}
	d, err := ParseSchedScript(data)
	if err != nil {
		t.Fatal(err)
	}
	tids := map[int]string{}
	for _, e := range mustReadDir(t, "/proc/self/task") {
		n, _ := strconv.Atoi(e)
		tids[n] = "test"
	}
	if len(d.Select(tids).Threads) == 0 {
		t.Errorf("no thread of this process in %d traced threads", len(d.Threads))
	}
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name()
	}
	return names
}

func FuzzParseSchedScript(f *testing.F) {
	data := readFixture(f, "perfsched", "go-threads.txt")
	f.Add(data[:4096])
	f.Add([]byte("x 1 [001] 1.0: sched:sched_migrate_task: comm=a pid=3 prio=1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseSchedScript(data)
		if err != nil {
			return
		}
		for _, th := range d.Threads {
			if th.TID <= 0 {
				t.Errorf("thread id %d", th.TID)
			}
		}
	})
}
