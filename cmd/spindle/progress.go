package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spindle-lab/spindle/bench"
	"github.com/spindle-lab/spindle/internal/unix"
)

// heartbeatEvery is the longest a long command stays silent on a stderr
// that is not a terminal (a CI log): 10 s, so that a log shows where a run
// is without drowning it.
const heartbeatEvery = 10 * time.Second

// heartbeatTick is how often the heartbeat looks at the time since the
// last line: 1 s, so that no gap is much longer than heartbeatEvery.
const heartbeatTick = time.Second

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && unix.IsTerminal(int(f.Fd()))
}

// progressLog writes progress lines to a stderr that is not a terminal:
// each line the command logs (a run started or finished), and, while a
// status is set, a heartbeat line with it whenever nothing was written for
// every. Safe for concurrent use.
type progressLog struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string // "spindle compare: "
	every  time.Duration
	status string // heartbeat text; "" for none
	last   time.Time
	now    func() time.Time
	stop   chan struct{}
	done   chan struct{}
}

// startProgressLog starts the heartbeat; close stops it.
func startProgressLog(w io.Writer, cmd string, every, tick time.Duration) *progressLog {
	l := &progressLog{w: w, prefix: "spindle " + cmd + ": ", every: every, now: time.Now,
		stop: make(chan struct{}), done: make(chan struct{})}
	l.last = l.now()
	go l.beat(tick)
	return l
}

func (l *progressLog) beat(tick time.Duration) {
	defer close(l.done)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			if l.status != "" && l.now().Sub(l.last) >= l.every {
				l.writeLocked("still running: " + l.status)
			}
			l.mu.Unlock()
		}
	}
}

func (l *progressLog) writeLocked(line string) {
	fmt.Fprintf(l.w, "%s%s\n", l.prefix, line)
	l.last = l.now()
}

// printf writes one line.
func (l *progressLog) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writeLocked(fmt.Sprintf(format, args...))
}

// setStatus sets the heartbeat's text ("" stops heartbeats).
func (l *progressLog) setStatus(s string) {
	l.mu.Lock()
	l.status = s
	l.mu.Unlock()
}

// close stops the heartbeat.
func (l *progressLog) close() {
	close(l.stop)
	<-l.done
}

// progressLine shows bench's and compare's progress: on a terminal one line
// rewritten in place; elsewhere a line when each run starts and finishes
// and a heartbeat with the run's step, elapsed and remaining time when
// nothing was written for heartbeatEvery.
type progressLine struct {
	w    io.Writer
	tty  bool
	last int // terminal: length of the line drawn

	log     *progressLog // not a terminal
	cur     bench.Progress
	running bool
}

func newProgressLine(w io.Writer, cmd string) *progressLine {
	p := &progressLine{w: w, tty: isTerminal(w)}
	if !p.tty {
		p.log = startProgressLog(w, cmd, heartbeatEvery, heartbeatTick)
	}
	return p
}

// runName names a run in progress lines: "[3/36] carrier+pinning fixed round 2".
func runName(pr bench.Progress) string {
	phase := pr.Phase
	if pr.Round > 0 {
		phase = fmt.Sprintf("%s round %d", pr.Phase, pr.Round)
	}
	return strings.TrimSpace(fmt.Sprintf("[%d/%d] %s %s", pr.Run, pr.Runs, pr.Config, strings.TrimSpace(phase)))
}

func times(pr bench.Progress) string {
	return fmt.Sprintf("elapsed %s  remaining ~%s", pr.Elapsed.Round(time.Second), pr.Remaining.Round(time.Second))
}

func (p *progressLine) show(pr bench.Progress) {
	if !p.tty {
		if !p.running || pr.Run != p.cur.Run {
			p.finishRun()
			p.log.printf("%s: started  %s", runName(pr), times(pr))
			p.running = true
		}
		p.cur = pr
		p.log.setStatus(fmt.Sprintf("%s: %s  %s", runName(pr), pr.Step, times(pr)))
		return
	}
	s := fmt.Sprintf("%s: %s  %s", runName(pr), pr.Step, times(pr))
	pad := ""
	if n := p.last - len(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	p.last = len(s)
	fmt.Fprintf(p.w, "\r%s%s", s, pad)
}

// finishRun logs the end of the current run (not a terminal).
func (p *progressLine) finishRun() {
	if p.running {
		p.log.printf("%s: finished", runName(p.cur))
		p.running = false
		p.log.setStatus("")
	}
}

// done ends the current run's line, so that other output starts on a
// fresh one; the progress may go on (show) afterwards.
func (p *progressLine) done() {
	if !p.tty {
		p.finishRun()
		return
	}
	if p.last > 0 {
		fmt.Fprintln(p.w)
		p.last = 0
	}
}

// close ends the progress for good.
func (p *progressLine) close() {
	p.done()
	if p.log != nil {
		p.log.close()
	}
}
