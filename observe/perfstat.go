package observe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PerfStatEvents are the events RunPerfStat counts, beside SyscallEvent.
var PerfStatEvents = []string{"task-clock", "context-switches", "cpu-migrations", "cycles", "instructions"}

// SyscallEvent is the tracepoint RunPerfStat counts system calls with: one
// count per system call a thread of the observed process enters. Counting
// it needs read access to the kernel's trace events (root, or a tracefs
// mounted for the user); it adds the tracepoint's cost to every system call
// of the observed process while perf counts.
const SyscallEvent = "raw_syscalls:sys_enter"

// PerfStatOutput is what RunPerfStat collected: perf's CSV, and why the
// system calls are missing from it when they are.
type PerfStatOutput struct {
	CSV []byte
	// SyscallsNA is the reason SyscallEvent was not counted ("" when it
	// was): perf cannot count it here (CanCount).
	SyscallsNA string
}

// RunPerfStat counts PerfStatEvents, and SyscallEvent where perf can count
// it (CanCount: perf refuses a whole run over one event it cannot open),
// for pids over window with "perf stat -x, -p PIDS -- sleep SECONDS" and
// returns perf's CSV output, written to a file in dir (perf writes it
// there to keep it apart from the command's own messages). perf -p counts
// the threads pids have when it starts, not those started in the window.
func (p Perf) RunPerfStat(ctx context.Context, dir string, pids []int, window time.Duration) (PerfStatOutput, error) {
	var res PerfStatOutput
	events := PerfStatEvents
	if err := p.CanCount(ctx, SyscallEvent); err != nil {
		if errors.Is(err, ErrPerfNotInstalled) {
			return res, err
		}
		res.SyscallsNA = Reason(err)
	} else {
		events = append(slices.Clone(events), SyscallEvent)
	}
	out := filepath.Join(dir, "perf-stat.csv")
	secs := strconv.FormatFloat(window.Seconds(), 'f', 3, 64)
	if _, err := p.run(ctx, "stat", "-x,", "-o", out, "-e", strings.Join(events, ","),
		"-p", pidList(pids), "--", "sleep", secs); err != nil {
		return res, err
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return res, fmt.Errorf("perf stat: %w", err)
	}
	res.CSV = data
	return res, nil
}

// Summary parses the output and derives its figures over window (Summarize),
// the system calls' figure n/a with the reason they were not counted.
func (o PerfStatOutput) Summary(window time.Duration) (PerfSummary, error) {
	ps, err := ParsePerfStat(o.CSV)
	if err != nil {
		return PerfSummary{}, err
	}
	s := ps.Summarize(window)
	if o.SyscallsNA != "" {
		s.SyscallsPerSec = &Figure{NA: o.SyscallsNA}
	}
	return s, nil
}

// CanCount reports whether perf stat can count event on this machine, by
// counting it over "true": nil, ErrPerfNotInstalled, or an error whose
// text is perf's reason ("perf cannot count raw_syscalls:sys_enter: No
// permissions to read /sys/kernel/tracing/events/raw_syscalls/sys_enter").
func (p Perf) CanCount(ctx context.Context, event string) error {
	out, err := p.run(ctx, "stat", "-x,", "-e", event, "--", "true")
	if errors.Is(err, ErrPerfNotInstalled) {
		return err
	}
	if err != nil {
		return fmt.Errorf("perf cannot count %s: %s", event, perfError(out))
	}
	ps, err := ParsePerfStat(out)
	if err != nil {
		return fmt.Errorf("perf cannot count %s: %w", event, err)
	}
	if _, na := ps.value(event); na != "" {
		return fmt.Errorf("perf cannot count %s: %s", event, na)
	}
	return nil
}

// perfError is the reason in perf's message about an event it refused:
// its "Error:" line ("No permissions to read ..."), else the text under
// the event's syntax error ("unknown tracepoint"), else its last non-empty
// line that is not usage help.
func perfError(out []byte) string {
	var marker, last string
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "Error:"):
			if r := strings.TrimSpace(strings.TrimPrefix(line, "Error:")); r != "" {
				return r
			}
		case strings.HasPrefix(line, `\___`):
			if marker == "" {
				marker = strings.TrimSpace(strings.TrimPrefix(line, `\___`))
			}
		case strings.HasPrefix(line, "Usage:"), strings.HasPrefix(line, "-"), strings.HasPrefix(line, "Run 'perf list'"):
		default:
			last = line
		}
	}
	switch {
	case marker != "":
		return marker
	case last != "":
		return last
	}
	return "perf exited with an error and no message"
}

// Counter is one line of perf stat's CSV output.
type Counter struct {
	// Event is the event name ("task-clock").
	Event string `json:"event"`
	// Value is the count, in Unit ("msec" for task-clock, "" for counts).
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
	// Supported is false when perf printed "<not supported>": the machine
	// has no such counter (virtual machines often lack hardware counters).
	Supported bool `json:"supported"`
	// Counted is false when perf printed "<not counted>" or "<not
	// supported>": the value is missing, not zero.
	Counted bool `json:"counted"`
}

// PerfStat is parsed perf stat output.
type PerfStat struct {
	Counters []Counter `json:"counters"`
}

// ParsePerfStat parses the CSV output of "perf stat -x,": lines of
// value,unit,event,run-time,percentage,... Comment lines ("# started on")
// and blank lines are skipped.
func ParsePerfStat(data []byte) (PerfStat, error) {
	var ps PerfStat
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 3 || f[2] == "" {
			return PerfStat{}, fmt.Errorf("parse perf stat: line %q: want value,unit,event,...", line)
		}
		c := Counter{Event: f[2], Unit: f[1], Supported: true, Counted: true}
		switch f[0] {
		case "<not supported>":
			c.Supported, c.Counted = false, false
		case "<not counted>":
			c.Counted = false
		default:
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return PerfStat{}, fmt.Errorf("parse perf stat: event %s: %w", f[2], err)
			}
			c.Value = v
		}
		ps.Counters = append(ps.Counters, c)
	}
	if err := sc.Err(); err != nil {
		return PerfStat{}, fmt.Errorf("parse perf stat: %w", err)
	}
	if len(ps.Counters) == 0 {
		return PerfStat{}, fmt.Errorf("parse perf stat: no counters")
	}
	return ps, nil
}

// Counter returns the counter for event, if perf printed one.
func (ps PerfStat) Counter(event string) (Counter, bool) {
	for _, c := range ps.Counters {
		if c.Event == event || strings.HasPrefix(c.Event, event+":") {
			return c, true
		}
	}
	return Counter{}, false
}

// Figure is a derived measurement or the reason it is missing.
type Figure struct {
	Value float64 `json:"value"`
	// NA is the reason the figure is missing ("not supported"); when it is
	// set Value means nothing.
	NA string `json:"na,omitempty"`
}

// String renders the figure with two decimals, or "n/a (reason)".
func (f Figure) String() string {
	if f.NA != "" {
		return NA(f.NA)
	}
	return strconv.FormatFloat(f.Value, 'f', 2, 64)
}

// value returns a counter's value, or why it has none.
func (ps PerfStat) value(event string) (float64, string) {
	c, ok := ps.Counter(event)
	switch {
	case !ok:
		return 0, event + " not reported"
	case !c.Supported:
		return 0, "not supported"
	case !c.Counted:
		return 0, "not counted"
	}
	return c.Value, ""
}

// PerfSummary are the figures the study's tables use.
type PerfSummary struct {
	// CPUsUtilized is task-clock divided by the window.
	CPUsUtilized Figure `json:"cpus_utilized"`
	// ContextSwitchesPerSec and MigrationsPerSec are per second of window.
	ContextSwitchesPerSec Figure `json:"context_switches_per_sec"`
	MigrationsPerSec      Figure `json:"migrations_per_sec"`
	// Cycles, Instructions and IPC need hardware counters.
	Cycles       Figure `json:"cycles"`
	Instructions Figure `json:"instructions"`
	IPC          Figure `json:"ipc"`
	// SyscallsPerSec is the system calls the process entered per second
	// of window (SyscallEvent); nil in a summary written before spindle
	// counted them.
	SyscallsPerSec *Figure `json:"syscalls_per_sec,omitempty"`
}

// Summarize derives the study's figures from counts over window.
func (ps PerfStat) Summarize(window time.Duration) PerfSummary {
	rate := func(event string, scale float64) Figure {
		v, na := ps.value(event)
		if na != "" {
			return Figure{NA: na}
		}
		return Figure{Value: v * scale / window.Seconds()}
	}
	s := PerfSummary{
		// task-clock is in msec: msec per second of window / 1000 = CPUs.
		CPUsUtilized:          rate("task-clock", 1e-3),
		ContextSwitchesPerSec: rate("context-switches", 1),
		MigrationsPerSec:      rate("cpu-migrations", 1),
	}
	sys := rate(SyscallEvent, 1)
	s.SyscallsPerSec = &sys
	cyc, naC := ps.value("cycles")
	ins, naI := ps.value("instructions")
	s.Cycles, s.Instructions = Figure{Value: cyc, NA: naC}, Figure{Value: ins, NA: naI}
	switch {
	case naC != "":
		s.IPC = Figure{NA: naC}
	case naI != "":
		s.IPC = Figure{NA: naI}
	case cyc == 0:
		s.IPC = Figure{NA: "no cycles counted"}
	default:
		s.IPC = Figure{Value: ins / cyc}
	}
	return s
}

// WriteText writes perf-stat.txt for the server process observed over
// window: the study's figures, then perf's raw CSV output.
func (s PerfSummary) WriteText(w io.Writer, window time.Duration, raw []byte) error {
	fmt.Fprintf(w, "# perf stat of the server process over %.1fs\n", window.Seconds())
	fmt.Fprintf(w, "CPUs utilized (task-clock / window)  %s\n", s.CPUsUtilized)
	fmt.Fprintf(w, "context switches/s                   %s\n", s.ContextSwitchesPerSec)
	fmt.Fprintf(w, "CPU migrations/s                     %s\n", s.MigrationsPerSec)
	fmt.Fprintf(w, "cycles                               %s\n", s.Cycles)
	fmt.Fprintf(w, "instructions                         %s\n", s.Instructions)
	fmt.Fprintf(w, "IPC                                  %s\n", s.IPC)
	sys := NA("not counted by this version")
	if s.SyscallsPerSec != nil {
		sys = s.SyscallsPerSec.String()
	}
	fmt.Fprintf(w, "system calls/s                       %s\n", sys)
	fmt.Fprintf(w, "\n# perf stat -x, output\n")
	_, err := w.Write(raw)
	return err
}
