package carrier

import "github.com/spindle-lab/spindle/internal/timerheap"

// timerHeap is a carrier's min-heap of tasks waiting for a time (Sleep, or
// a deadline while parked on I/O). Each task has at most one timer; the heap
// keeps the task's index (Task.hidx) up to date so that a wake-up by I/O
// removes the timer in O(log n) instead of leaving a stale entry behind.
type timerHeap struct{ h timerheap.Heap[*Task] }

// add sets t's timer to when, replacing the one it had.
func (h *timerHeap) add(t *Task, when int64) {
	h.h.Remove(t.hidx)
	h.h.Push(when, t, &t.hidx)
}

// remove takes t's timer out of the heap if it is there.
func (h *timerHeap) remove(t *Task) { h.h.Remove(t.hidx) }

// peek returns the earliest deadline, or -1 with no timers.
func (h *timerHeap) peek() int64 {
	if e, ok := h.h.Peek(); ok {
		return e.When
	}
	return -1
}

// popDue removes and returns the earliest task whose time is <= now, or nil.
func (h *timerHeap) popDue(now int64) *Task {
	if e, ok := h.h.PopDue(now); ok {
		return e.Item
	}
	return nil
}

// reset drops every timer.
func (h *timerHeap) reset() { h.h.Reset() }
