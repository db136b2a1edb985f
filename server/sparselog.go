package server

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// sparseLogEvery is how often a sparseLog lets a message through at most:
// once a second, as the carriers' own hand-off report (carrier.Options
// OnHandoff's default).
const sparseLogEvery = time.Second

// sparseLog is the writer under nethttp-carrier mode's carrierhttp
// ErrorLog: it passes at most one message (one Write: log.Logger writes a
// message at once) per every and drops the others, saying how many it left
// out in the next one it passes. carrierhttp's watchdog logs every handler
// run that held or outlasted its carrier's pinned threshold (20 ms); a load
// with a share of /block requests sleeping that long would otherwise write
// a line for each, on the carrier's thread, to the stderr of the server
// being measured.
type sparseLog struct {
	w     io.Writer
	every time.Duration
	now   func() time.Time // time.Now; a fake clock in tests

	mu      sync.Mutex
	last    time.Time // when the last message went through; zero: none yet
	skipped int       // messages dropped since
}

func newSparseLog(w io.Writer) *sparseLog {
	return &sparseLog{w: w, every: sparseLogEvery, now: time.Now}
}

// Write passes p on, or drops it if a message went through less than every
// ago; it always reports p written.
func (l *sparseLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.skipped++
		return len(p), nil
	}
	l.last = now
	if _, err := l.w.Write(p); err != nil {
		return 0, err
	}
	if l.skipped > 0 {
		fmt.Fprintf(l.w, "(and %d more messages since the one before, left out: at most one every %v)\n", l.skipped, l.every)
		l.skipped = 0
	}
	return len(p), nil
}
