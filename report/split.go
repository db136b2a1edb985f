package report

import (
	"fmt"
	"strings"
)

// The configurations the gain split compares: the same net/http code under
// the Go scheduler and on carriers, and spindle's own code path on carriers.
const (
	splitScheduler = ConfigNetHTTPCarrier
	splitCodePath  = ConfigUnpinned
)

// writeSplit splits carrier's gain over nethttp into the scheduler's part
// (nethttp -> nethttp-carrier: the same code, another scheduler) and the
// code path's part (nethttp-carrier -> carrier: the same scheduler, other
// code). Each part is a ratio paired round by round; the two multiply to
// the whole. It writes nothing unless all three configurations ran.
func (r *Report) writeSplit(b *strings.Builder) {
	type metric struct {
		name, phase string
		f           func(Summary) float64
	}
	metrics := []metric{{"max throughput", PhaseMax, throughput}, {"p99 at the fixed rate", PhaseFixed, p99}}
	var rows []string
	for _, m := range metrics {
		base, sched, code := r.Find(m.phase, baseline), r.Find(m.phase, splitScheduler), r.Find(m.phase, splitCodePath)
		if base == nil || sched == nil || code == nil {
			continue
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s |", m.name,
			code.Ratio(base, m.f).Format(2, "no paired rounds"),
			sched.Ratio(base, m.f).Format(2, "no paired rounds"),
			code.Ratio(sched, m.f).Format(2, "no paired rounds")))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "## Carrier's gain split: scheduler and code path\n\n"+
		"%[1]s runs %[2]s's handler and http.Client code unchanged on carriers, so %[2]s -> %[1]s is what the "+
		"scheduler gives and %[1]s -> %[3]s what spindle's own code path adds; the two parts multiply to the "+
		"whole. Ratios paired by round, median (min–max).\n\n", splitScheduler, baseline, splitCodePath)
	fmt.Fprintf(b, "| metric | whole: %[3]s / %[1]s | scheduler: %[2]s / %[1]s | code path: %[3]s / %[2]s |\n|---|---|---|---|\n",
		baseline, splitScheduler, splitCodePath)
	b.WriteString(strings.Join(rows, "\n"))
	b.WriteString("\n\n")
}
