package observe

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// RunPerfSched traces the scheduler system-wide for window with "perf sched
// record" (sched_switch and sched_migrate_task, among others), then returns
// the text of "perf sched script". The trace file is written in dir and
// removed afterwards: it grows by megabytes per second under load.
func (p Perf) RunPerfSched(ctx context.Context, dir string, window time.Duration) ([]byte, error) {
	data := filepath.Join(dir, "perf-sched.data")
	defer os.Remove(data)
	secs := strconv.FormatFloat(window.Seconds(), 'f', 3, 64)
	if _, err := p.run(ctx, "sched", "record", "-o", data, "--", "sleep", secs); err != nil {
		return nil, err
	}
	path, err := p.path()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "sched", "script", "-i", data)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("perf sched script: %w", err)
	}
	return out.Bytes(), nil
}

// SchedThread is one thread's scheduling events in a perf sched trace.
type SchedThread struct {
	TID int `json:"tid"`
	// Comm is the thread's name in the trace.
	Comm string `json:"comm"`
	// Runs maps a CPU to how many times the thread was switched in there.
	Runs map[int]int `json:"runs"`
	// Migrations counts sched_migrate_task events for the thread.
	Migrations int `json:"migrations"`
	// Process is the role of the thread's process ("server"), set by
	// Select; "" in a parse result.
	Process string `json:"process,omitempty"`
}

// TotalRuns is the sum of Runs.
func (t SchedThread) TotalRuns() int {
	n := 0
	for _, r := range t.Runs {
		n += r
	}
	return n
}

// SchedDistribution is the per-thread scheduling picture of a trace.
type SchedDistribution struct {
	// Threads are sorted by TID.
	Threads []SchedThread `json:"threads"`
}

// ParseSchedScript parses the text of "perf sched script": lines
// "COMM TID [CPU] TIME: EVENT: FIELDS". A sched:sched_switch counts one run
// of next_pid on CPU; a sched:sched_migrate_task counts one migration of
// pid. Other events are skipped; the idle task (pid 0) is not a thread.
func ParseSchedScript(data []byte) (SchedDistribution, error) {
	return parseSchedScript(bytes.NewReader(data))
}

func parseSchedScript(r io.Reader) (SchedDistribution, error) {
	threads := map[int]*SchedThread{}
	get := func(tid int, comm string) *SchedThread {
		t := threads[tid]
		if t == nil {
			t = &SchedThread{TID: tid, Runs: map[int]int{}}
			threads[tid] = t
		}
		if comm != "" {
			t.Comm = comm
		}
		return t
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		open := strings.IndexByte(line, '[')
		end := strings.IndexByte(line, ']')
		if open < 0 || end < open {
			continue // not an event line
		}
		cpuNum, err := strconv.Atoi(line[open+1 : end])
		if err != nil {
			return SchedDistribution{}, fmt.Errorf("parse perf sched script: line %d: cpu %q: %w", n, line[open+1:end], err)
		}
		rest := line[end+1:]
		switch {
		case strings.Contains(rest, " sched:sched_switch: "):
			comm, tid, err := traceTask(rest, "next_comm=", " next_pid=")
			if err != nil {
				return SchedDistribution{}, fmt.Errorf("parse perf sched script: line %d: %w", n, err)
			}
			if tid != 0 {
				get(tid, comm).Runs[cpuNum]++
			}
		case strings.Contains(rest, " sched:sched_migrate_task: "):
			comm, tid, err := traceTask(rest, " comm=", " pid=")
			if err != nil {
				return SchedDistribution{}, fmt.Errorf("parse perf sched script: line %d: %w", n, err)
			}
			if tid != 0 {
				get(tid, comm).Migrations++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return SchedDistribution{}, fmt.Errorf("parse perf sched script: %w", err)
	}
	var d SchedDistribution
	for _, tid := range slices.Sorted(maps.Keys(threads)) {
		d.Threads = append(d.Threads, *threads[tid])
	}
	return d, nil
}

// traceTask extracts the comm after commKey and the number after pidKey
// ("next_comm=a b next_pid=12"); the comm may hold spaces.
func traceTask(s, commKey, pidKey string) (string, int, error) {
	ci := strings.Index(s, commKey)
	if ci < 0 {
		return "", 0, fmt.Errorf("no %q field", strings.TrimSpace(commKey))
	}
	s = s[ci+len(commKey):]
	pi := strings.Index(s, pidKey)
	if pi < 0 {
		return "", 0, fmt.Errorf("no %q field", strings.TrimSpace(pidKey))
	}
	comm := s[:pi]
	num := s[pi+len(pidKey):]
	if sp := strings.IndexByte(num, ' '); sp >= 0 {
		num = num[:sp]
	}
	tid, err := strconv.Atoi(num)
	if err != nil || tid < 0 {
		return "", 0, fmt.Errorf("%s%q: not a thread id", strings.TrimSpace(pidKey), num)
	}
	return comm, tid, nil
}

// Select keeps the threads whose TID is a key of tids, labelling each with
// the process role tids maps it to.
func (d SchedDistribution) Select(tids map[int]string) SchedDistribution {
	var out SchedDistribution
	for _, t := range d.Threads {
		if proc, ok := tids[t.TID]; ok {
			t.Process = proc
			out.Threads = append(out.Threads, t)
		}
	}
	return out
}

// WriteText writes, for each thread, the share of its runs on each CPU
// that appears in the distribution and its migrations, like the study's
// perf-sched-distribution.txt.
func (d SchedDistribution) WriteText(w io.Writer) error {
	cpus := map[int]bool{}
	for _, t := range d.Threads {
		for c := range t.Runs {
			cpus[c] = true
		}
	}
	cols := slices.Sorted(maps.Keys(cpus))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	io.WriteString(tw, "process\ttid\tthread\truns\t")
	for _, c := range cols {
		fmt.Fprintf(tw, "CPU %d\t", c)
	}
	io.WriteString(tw, "migrations\t\n")
	for _, t := range d.Threads {
		total := t.TotalRuns()
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t", t.Process, t.TID, t.Comm, total)
		for _, c := range cols {
			if t.Runs[c] == 0 || total == 0 {
				io.WriteString(tw, "—\t")
				continue
			}
			fmt.Fprintf(tw, "%.0f%%\t", 100*float64(t.Runs[c])/float64(total))
		}
		fmt.Fprintf(tw, "%d\t\n", t.Migrations)
	}
	return tw.Flush()
}
