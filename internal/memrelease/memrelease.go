// Package memrelease gives the memory a burst of connections used back to
// the operating system once the burst has ended, in a server that is then
// idle.
//
// Why a server has to ask: the Go runtime returns free heap pages to the OS
// (its background scavenger) only in the wake of a garbage collection (the
// scavenger is readied when a cycle's sweep ends: runtime/mgcsweep.go), and
// it starts a cycle only when the program allocates or, failing that, every
// two minutes (forcegcperiod). A server whose thousand connections just
// closed allocates nothing more: the goroutine stacks, coroutine stacks and
// per-connection buffers those connections held stay resident. Buffers that
// went back to a sync.Pool (net/http's bufio readers and writers, io.Discard's
// copy buffers) survive one more cycle in the pool's victim cache, so the
// memory comes back only after the second cycle, four minutes later.
// docs/server.md has the measurements.
//
// A Watcher looks at the number of open connections once per period; when
// at least Burst connections closed since the last peak and at most a
// quarter of the peak remain, it waits Delay (for the carriers to trim
// their idle coroutines), then runs one collection (which moves the pools'
// contents to their victim caches and frees what nothing holds) and, one
// period later, debug.FreeOSMemory (a second collection, which drops the
// victims, and a scavenge of every free page). Nothing runs in a steady
// state, whatever the connection churn: only a fall of the open count by
// Burst from its peak does.
package memrelease

import (
	"runtime"
	"runtime/debug"
	"time"
)

// Defaults of Options.
const (
	// DefaultPeriod is how often the open count is read: the memory comes
	// back within a few periods of the end of a burst.
	DefaultPeriod = time.Second
	// DefaultBurst is how many connections must close from the peak: 256
	// connections held about 3 MiB (carrier modes) to 6 MiB (nethttp) in
	// connmem's measurements, the least worth two collections for.
	DefaultBurst = 256
	// DefaultDelay is the wait from the end of a burst to the first
	// collection: two carrier coroutine-trim periods, so that the idle
	// coroutines' stacks are free by then.
	DefaultDelay = 2 * time.Second
)

// Options configure a Watcher; a zero field takes its default.
type Options struct {
	Period time.Duration // how often the open count is read
	Burst  int64         // connections closed from the peak that make a burst (count)
	Delay  time.Duration // from the end of a burst to the first collection
}

func (o Options) withDefaults() Options {
	if o.Period <= 0 {
		o.Period = DefaultPeriod
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Delay <= 0 {
		o.Delay = DefaultDelay
	}
	return o
}

// Watcher watches one server's open connection count.
type Watcher struct {
	o         Options
	open      func() int64
	collect   func() // runtime.GC
	free      func() // debug.FreeOSMemory
	peak      int64
	countdown int // periods until the next step of a release; 0: none under way
	step      int // 0: collect next, 1: free next
	releases  int64
}

// New returns a watcher of open, the server's count of open connections.
func New(open func() int64, o Options) *Watcher {
	return &Watcher{o: o.withDefaults(), open: open, collect: runtime.GC, free: debug.FreeOSMemory}
}

// Run checks every period until done is closed.
func (w *Watcher) Run(done <-chan struct{}) {
	t := time.NewTicker(w.o.Period)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			w.tick()
		}
	}
}

// Releases returns how many releases (collection and free) were completed.
// Only meaningful from the goroutine running Run, or after it returned.
func (w *Watcher) Releases() int64 { return w.releases }

// tick is one period's look at the open count.
func (w *Watcher) tick() {
	n := w.open()
	w.peak = max(w.peak, n)
	if w.countdown > 0 {
		w.countdown--
		if w.countdown > 0 {
			return
		}
		if w.step == 0 {
			w.collect()
			w.step, w.countdown = 1, 1
			return
		}
		w.free()
		w.step = 0
		w.releases++
		return
	}
	if w.peak-n >= w.o.Burst && n <= w.peak/4 {
		w.peak = n
		w.countdown = max(1, int((w.o.Delay+w.o.Period-1)/w.o.Period))
	}
}
