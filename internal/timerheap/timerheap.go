// Package timerheap is the binary min-heap of deadlines that spindle's event
// loops share: a carrier's sleeping and deadline-parked tasks, and a load
// worker's scheduled request starts.
//
// Entries keep their deadline inline, so sifting compares neighbouring words
// instead of following a pointer per comparison, and nothing is boxed (unlike
// container/heap's interface). An owner that must remove an entry before it
// is due (a task woken by I/O before its deadline) gives Push a pointer to an
// int that the heap keeps equal to the entry's index (a store, not a call: a
// call through a callback per swap); an
// owner that only pops gives nil. Ties pop in no particular order. A Heap is not safe for concurrent use:
// each belongs to one loop.
package timerheap

import "slices"

// Entry is an item due at When (nanoseconds on the owner's clock).
type Entry[T any] struct {
	When  int64
	Item  T
	index *int // kept equal to the entry's index; nil: not tracked
}

// Heap is a min-heap of entries on When. The zero value is an empty heap.
type Heap[T any] struct {
	e []Entry[T]
}

// Grow makes room for n more entries, so that pushing them allocates
// nothing.
func (h *Heap[T]) Grow(n int) { h.e = slices.Grow(h.e, n) }

// Len returns the number of entries.
func (h *Heap[T]) Len() int { return len(h.e) }

// Peek returns the earliest entry; ok is false when the heap is empty.
func (h *Heap[T]) Peek() (e Entry[T], ok bool) {
	if len(h.e) == 0 {
		return e, false
	}
	return h.e[0], true
}

// Push adds item, due at when. If index is not nil, the heap stores the
// entry's index there as it moves, and -1 when it leaves (PopDue, Remove,
// Reset), so that the owner can Remove it early.
func (h *Heap[T]) Push(when int64, item T, index *int) {
	h.e = append(h.e, Entry[T]{when, item, index})
	i := len(h.e) - 1
	h.moved(i)
	h.up(i)
}

// PopDue removes and returns the earliest entry if it is due at now (When
// <= now); ok is false otherwise.
func (h *Heap[T]) PopDue(now int64) (e Entry[T], ok bool) {
	if len(h.e) == 0 || h.e[0].When > now {
		return e, false
	}
	e = h.e[0]
	h.Remove(0)
	return e, true
}

// Remove takes out the entry at index i (as last stored in its index). An index
// out of range is ignored, so -1 (absent) needs no check by the caller.
func (h *Heap[T]) Remove(i int) {
	last := len(h.e) - 1
	if i < 0 || i > last {
		return
	}
	gone := h.e[i].index
	if i != last {
		h.e[i] = h.e[last]
	}
	var zero Entry[T]
	h.e[last] = zero // drop the reference for the collector
	h.e = h.e[:last]
	if gone != nil {
		*gone = -1
	}
	if i != last {
		h.moved(i)
		if !h.down(i) {
			h.up(i)
		}
	}
}

// Reset empties the heap, storing -1 in every tracked index.
func (h *Heap[T]) Reset() {
	for len(h.e) > 0 {
		h.Remove(len(h.e) - 1)
	}
}

func (h *Heap[T]) moved(i int) {
	if p := h.e[i].index; p != nil {
		*p = i
	}
}

func (h *Heap[T]) swap(i, j int) {
	h.e[i], h.e[j] = h.e[j], h.e[i]
	h.moved(i)
	h.moved(j)
}

func (h *Heap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.e[p].When <= h.e[i].When {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts entry i towards the leaves and reports whether it moved.
func (h *Heap[T]) down(i int) bool {
	start, n := i, len(h.e)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.e[r].When < h.e[l].When {
			m = r
		}
		if h.e[i].When <= h.e[m].When {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > start
}
