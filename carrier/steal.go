package carrier

// Work stealing moves tasks that have not started: those waiting in a
// carrier's inject queue (Submit, Group.Go, Task.Go, accepted connections
// of a reuseport listener). A started task's coroutine was created on its
// carrier's locked thread and the Go runtime throws if another thread
// resumes it, so the LIFO slot, the local FIFO (which holds resumed tasks)
// and the local queue (Offload resumptions, SubmitLocal) are never touched
// by a thief. Floating carriers (float.go) are not locked: there the owner
// of a FIFO hands started tasks over when a thief asks.

// steal is called by an idle carrier: it looks at two random siblings in
// its scope and takes half of the longer inject queue into its own FIFO. At
// most half the carriers (at least one) search at once, so an idle machine
// does not turn into a herd of thieves hammering one queue.
func (c *Carrier) steal() bool {
	g := c.g
	k := len(c.siblings)
	if k == 0 {
		return false
	}
	for {
		s := g.searching.Load()
		if s >= g.maxSearching {
			return false
		}
		if g.searching.CompareAndSwap(s, s+1) {
			break
		}
	}
	defer g.searching.Add(-1)
	a, b := c.siblings[c.rand(k)], c.siblings[c.rand(k)]
	v := a
	if b.inject.len() > a.inject.len() {
		v = b
	}
	if v.inject.len() == 0 {
		if g.opts.Float {
			c.ask(a, b)
		}
		return false
	}
	c.stealBuf = v.inject.stealHalf(c.stealBuf[:0])
	n := len(c.stealBuf)
	if n == 0 {
		return false
	}
	v.stats.stealsOut.Add(uint64(n)) // the one counter with two writers: thieves only, off the hot path
	for i, t := range c.stealBuf {
		c.fifo.push(t)
		c.stealBuf[i] = nil
	}
	add(&c.stats.stealsIn, uint64(n))
	return true
}

// hintThieves is called after work was queued on c's inject queue: when a
// backlog builds up and nobody is searching, it nudges one idle sibling so
// that it comes to steal instead of sleeping through the backlog.
func (c *Carrier) hintThieves() {
	g := c.g
	if !g.opts.Steal || c.inject.len() < 2 || g.searching.Load() > 0 {
		return
	}
	for _, s := range c.siblings {
		if s.waiting.Load() != 0 {
			s.nudge()
			return
		}
	}
}

// rand returns a pseudo-random number in [0, n) from the carrier's own
// xorshift64 state (no shared generator, no lock).
func (c *Carrier) rand(n int) int {
	x := c.rng
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	c.rng = x
	return int(x % uint64(n))
}
