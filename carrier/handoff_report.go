package carrier

import (
	"bytes"
	"fmt"
	"log"
	"runtime"
	"strconv"
	"time"
)

// Handoff is the report of one hand-off (Options.OnHandoff): a run of a
// task held its carrier past the threshold, blocked the Go way or
// computing, and the carrier went on on another thread without it.
type Handoff struct {
	Carrier int           // the carrier's ID
	Held    time.Duration // how long the run had held its carrier
	// Note is what the task said it was doing (Task.SetNote), "" without
	// a note: a carrierhttp server notes the connection and its request.
	Note string
	// Skipped is how many hand-offs the default report left out since the
	// last it logged (it logs at most one a second per group); 0 for a
	// hook, which sees every one.
	Skipped int
	co      *coro
}

// Stack returns the stack of the handed-off task's goroutine as it is
// now, where it blocks or computes, in runtime.Stack's format; nil when it
// cannot be found (the task moved on meanwhile). It stops the world for
// a moment to read every goroutine's stack, as runtime.Stack does: call it
// for a report, not for every hand-off at a high rate.
func (h Handoff) Stack() []byte {
	if h.co == nil {
		return nil
	}
	return goroutineStack(h.co.goid.Load())
}

// String is the report's one line: where, how long, what.
func (h Handoff) String() string {
	s := fmt.Sprintf("carrier %d: a task's run held its carrier for %v without parking (it blocks the Go way or computes): handed off, the carrier goes on on another thread", h.Carrier, h.Held.Round(time.Microsecond))
	if h.Note != "" {
		s += "; the task: " + h.Note
	}
	if h.Skipped > 0 {
		s += fmt.Sprintf(" (%d more hand-offs since the last report)", h.Skipped)
	}
	return s
}

// handoffLogEvery is how often the default report logs a hand-off, with its
// stack, at most: the stack costs a stop of the world, and a handler that
// blocks on every request would otherwise log every request.
const handoffLogEvery = time.Second

// reportHandoff reports a hand-off of c's run on co, held for held: to
// Options.OnHandoff, or by default to the standard logger with the
// blocked goroutine's stack, at most once per handoffLogEvery (counting
// the ones it leaves out). It runs on the monitor's goroutine, after the
// new owner has started.
func (g *Group) reportHandoff(c *Carrier, co *coro, held time.Duration) {
	h := Handoff{Carrier: c.id, Held: held, co: co}
	if n := co.note.Load(); n != nil {
		h.Note = (*n).String()
	}
	if g.opts.OnHandoff != nil {
		g.opts.OnHandoff(h)
		return
	}
	now := time.Now()
	if !g.lastHandoffLog.IsZero() && now.Sub(g.lastHandoffLog) < handoffLogEvery {
		g.handoffsUnlogged++
		return
	}
	g.lastHandoffLog = now
	h.Skipped, g.handoffsUnlogged = g.handoffsUnlogged, 0
	stack := h.Stack()
	if stack == nil {
		stack = []byte("(its goroutine's stack was not found: it moved on)")
	}
	log.Printf("%v\n%s", h, stack)
}

// curGoid returns the calling goroutine's id, from the first line of its
// stack trace ("goroutine 18 [running]:"); 0 if that cannot be read. A
// coroutine reads it once, when it starts.
func curGoid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b, ok := bytes.CutPrefix(b, []byte("goroutine "))
	if !ok {
		return 0
	}
	if i := bytes.IndexByte(b, ' '); i > 0 {
		id, err := strconv.ParseUint(string(b[:i]), 10, 64)
		if err == nil {
			return id
		}
	}
	return 0
}

// maxStackDump bounds the buffer goroutineStack reads every goroutine's
// stack into (a server with 100,000 goroutines has a dump of tens of MiB).
const maxStackDump = 64 << 20

// goroutineStack returns the stack of goroutine id from a dump of every
// goroutine's, nil if it is not there (or id is 0).
func goroutineStack(id uint64) []byte {
	if id == 0 {
		return nil
	}
	buf := make([]byte, 256<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= maxStackDump {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return stackOf(buf, id)
}

// stackOf finds goroutine id's entry in dump, runtime.Stack's format:
// entries begin "goroutine N [" at the start of a line and are separated
// by a blank line.
func stackOf(dump []byte, id uint64) []byte {
	head := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
	for i := 0; i < len(dump); {
		if bytes.HasPrefix(dump[i:], head) {
			entry := dump[i:]
			if j := bytes.Index(entry, []byte("\n\n")); j >= 0 {
				entry = entry[:j+1]
			}
			return bytes.Clone(entry)
		}
		j := bytes.Index(dump[i:], []byte("\n\n"))
		if j < 0 {
			break
		}
		i += j + 2
	}
	return nil
}
