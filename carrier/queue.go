package carrier

import (
	"sync"
	"sync/atomic"
)

// ring is a growable FIFO of tasks. It is not safe for concurrent use: the
// local run queue uses it bare (only its carrier touches it) and injectQ
// guards one with a mutex.
type ring struct {
	buf  []*Task // len is a power of two (or 0)
	head int     // index of the oldest entry
	n    int     // number of entries
}

func (r *ring) push(t *Task) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = t
	r.n++
}

// peek returns the oldest entry without removing it, or nil.
func (r *ring) peek() *Task {
	if r.n == 0 {
		return nil
	}
	return r.buf[r.head]
}

func (r *ring) pop() *Task {
	if r.n == 0 {
		return nil
	}
	t := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return t
}

// initialRing is the first capacity of a ring: enough for a burst of
// submissions without growing, small enough to cost nothing per carrier.
const initialRing = 64

func (r *ring) grow() {
	size := 2 * len(r.buf)
	if size == 0 {
		size = initialRing
	}
	buf := make([]*Task, size)
	for i := 0; i < r.n; i++ {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}

// injectQ is a multi-producer queue of tasks with one consumer (its
// carrier) and, when stealing is on, occasional thieves. Producers take a
// short uncontended-in-the-common-case lock; the consumer and the wait
// strategies read the length without it.
type injectQ struct {
	mu     sync.Mutex
	q      ring
	length atomic.Int64 // q.n, published for lock-free emptiness checks
	word   *uint32      // bumped (atomically) on every push: the carrier's word for UMONITOR
	closed bool         // set under mu when the carrier stops: pushes fail
}

// push appends t; it reports false when the queue's carrier has stopped.
func (q *injectQ) push(t *Task) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.q.push(t)
	q.length.Store(int64(q.q.n))
	atomic.AddUint32(q.word, 1)
	q.mu.Unlock()
	return true
}

// pop removes the oldest task, or returns nil.
func (q *injectQ) pop() *Task {
	if q.length.Load() == 0 {
		return nil
	}
	q.mu.Lock()
	t := q.q.pop()
	q.length.Store(int64(q.q.n))
	q.mu.Unlock()
	return t
}

// stealHalf appends half of q's tasks (rounded up), oldest first, to buf
// and returns it. The caller is a thief; it holds no other queue's lock.
func (q *injectQ) stealHalf(buf []*Task) []*Task {
	q.mu.Lock()
	k := (q.q.n + 1) / 2
	for i := 0; i < k; i++ {
		buf = append(buf, q.q.pop())
	}
	q.length.Store(int64(q.q.n))
	q.mu.Unlock()
	return buf
}

// close marks the queue stopped and returns what it held.
func (q *injectQ) close() []*Task {
	q.mu.Lock()
	q.closed = true
	var left []*Task
	for t := q.q.pop(); t != nil; t = q.q.pop() {
		left = append(left, t)
	}
	q.length.Store(0)
	q.mu.Unlock()
	return left
}

func (q *injectQ) len() int { return int(q.length.Load()) }
