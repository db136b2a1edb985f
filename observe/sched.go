package observe

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// SchedStats holds what SampleThreads reads from /proc/PID/task/TID/sched:
// the one counter that neither stat, status nor schedstat expose.
//
// The file also has nr_voluntary_switches and nr_involuntary_switches, but
// SampleThreads takes context switches from status
// (voluntary_ctxt_switches, nonvoluntary_ctxt_switches) instead, so that
// one source serves: status exists on every kernel, while sched exists only
// where the kernel was built with CONFIG_SCHED_DEBUG (not every older or
// minimal kernel is), so without sched SampleThreads still has every
// figure but migrations; status is what pidstat reads for cswch/s and
// nvcswch/s, so the figures match its; and reading and parsing it costs
// about what sched does (BenchmarkReadStatus against BenchmarkReadSched,
// tens of µs each; docs/PERFORMANCE.md, section observe).
type SchedStats struct {
	// Migrations is se.nr_migrations: how many times the kernel moved the
	// thread to another CPU since it started.
	Migrations uint64 `json:"migrations"`
}

// schedMigrations is the key of SchedStats.Migrations in the sched file.
const schedMigrations = "se.nr_migrations"

// ParseSched parses the text of /proc/PID/task/TID/sched ("key : value"
// lines under a "comm (pid, #threads: n)" header); the se.nr_migrations
// line is required.
func ParseSched(data []byte) (SchedStats, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(key) != schedMigrations {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return SchedStats{}, fmt.Errorf("parse sched %s: %w", schedMigrations, err)
		}
		return SchedStats{Migrations: n}, nil
	}
	if err := sc.Err(); err != nil {
		return SchedStats{}, fmt.Errorf("parse sched: %w", err)
	}
	return SchedStats{}, fmt.Errorf("parse sched: no %s line", schedMigrations)
}
