package carrier

// timerHeap is a carrier's min-heap of tasks waiting for a time (Sleep, or
// a deadline while parked on I/O). Each task has at most one timer; it
// records its index so that a wake-up by I/O removes the timer in O(log n)
// instead of leaving a stale entry behind.
type timerHeap []*Task

func (h timerHeap) less(i, j int) bool { return h[i].when < h[j].when }

func (h timerHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx = i
	h[j].hidx = j
}

func (h *timerHeap) add(t *Task, when int64) {
	if t.hidx >= 0 {
		h.remove(t)
	}
	t.when = when
	t.hidx = len(*h)
	*h = append(*h, t)
	h.up(t.hidx)
}

// remove takes t out of the heap if it is there.
func (h *timerHeap) remove(t *Task) {
	i := t.hidx
	if i < 0 {
		return
	}
	old := *h
	last := len(old) - 1
	if i != last {
		old.swap(i, last)
	}
	old[last] = nil
	*h = old[:last]
	t.hidx = -1
	if i != last {
		h.down(i)
		h.up(i)
	}
}

// peek returns the earliest deadline, or -1 with no timers.
func (h timerHeap) peek() int64 {
	if len(h) == 0 {
		return -1
	}
	return h[0].when
}

// popDue removes and returns the earliest task whose time is <= now, or nil.
func (h *timerHeap) popDue(now int64) *Task {
	if len(*h) == 0 || (*h)[0].when > now {
		return nil
	}
	t := (*h)[0]
	h.remove(t)
	return t
}

func (h timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h timerHeap) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}
