package observe

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// SchedStats holds the counters of one /proc/PID/task/TID/sched file that
// neither stat, status nor schedstat expose.
type SchedStats struct {
	// Migrations is se.nr_migrations: how many times the kernel moved the
	// thread to another CPU since it started.
	Migrations uint64 `json:"migrations"`
	// Switches is nr_switches (voluntary plus involuntary).
	Switches uint64 `json:"switches"`
	// Voluntary is nr_voluntary_switches.
	Voluntary uint64 `json:"voluntary_switches"`
	// Involuntary is nr_involuntary_switches.
	Involuntary uint64 `json:"involuntary_switches"`
}

// ParseSched parses the text of /proc/PID/task/TID/sched ("key : value"
// lines under a "comm (pid, #threads: n)" header). se.nr_migrations is
// required; the switch counters are read when present.
func ParseSched(data []byte) (SchedStats, error) {
	var s SchedStats
	found := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch strings.TrimSpace(key) {
		case "se.nr_migrations":
			dst, found = &s.Migrations, true
		case "nr_switches":
			dst = &s.Switches
		case "nr_voluntary_switches":
			dst = &s.Voluntary
		case "nr_involuntary_switches":
			dst = &s.Involuntary
		default:
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return SchedStats{}, fmt.Errorf("parse sched %s: %w", strings.TrimSpace(key), err)
		}
		*dst = n
	}
	if err := sc.Err(); err != nil {
		return SchedStats{}, fmt.Errorf("parse sched: %w", err)
	}
	if !found {
		return SchedStats{}, fmt.Errorf("parse sched: no se.nr_migrations line")
	}
	return s, nil
}
