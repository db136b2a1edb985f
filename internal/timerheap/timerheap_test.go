package timerheap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// item records its index in the heap, as a carrier's task does.
type item struct {
	id  int
	idx int
}

// check verifies the heap order and that every tracked index is true.
func check(t *testing.T, h *Heap[*item]) {
	t.Helper()
	for i, e := range h.e {
		if e.Item.idx != i {
			t.Fatalf("item %d at %d records index %d", e.Item.id, i, e.Item.idx)
		}
		if p := (i - 1) / 2; i > 0 && h.e[p].When > e.When {
			t.Fatalf("heap order broken at %d: parent %d > %d", i, h.e[p].When, e.When)
		}
	}
}

func TestPopOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		whens []int64
	}{
		{"empty", nil},
		{"one", []int64{5}},
		{"ascending", []int64{1, 2, 3, 4, 5}},
		{"descending", []int64{5, 4, 3, 2, 1}},
		{"ties", []int64{3, 1, 3, 1, 2, 2}},
		{"negative", []int64{0, -7, 9, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Heap[int] // untracked, as the load worker uses it
			for i, w := range tc.whens {
				h.Push(w, i, nil)
			}
			if h.Len() != len(tc.whens) {
				t.Fatalf("Len %d, want %d", h.Len(), len(tc.whens))
			}
			want := slices.Sorted(slices.Values(tc.whens))
			for _, w := range want {
				e, ok := h.PopDue(w)
				if !ok || e.When != w || tc.whens[e.Item] != w {
					t.Fatalf("PopDue(%d) = %+v, %v", w, e, ok)
				}
			}
			if _, ok := h.Peek(); ok {
				t.Fatal("Peek found an entry in an emptied heap")
			}
		})
	}
}

func TestPopDueWaitsForTheDeadline(t *testing.T) {
	var h Heap[string]
	h.Push(100, "late", nil)
	h.Push(50, "early", nil)
	if _, ok := h.PopDue(49); ok {
		t.Fatal("PopDue(49) popped an entry due at 50")
	}
	if e, ok := h.PopDue(50); !ok || e.Item != "early" {
		t.Fatalf("PopDue(50) = %+v, %v", e, ok)
	}
	if e, ok := h.Peek(); !ok || e.When != 100 {
		t.Fatalf("Peek = %+v, %v; want the entry due at 100", e, ok)
	}
}

// TestRandomAgainstSort pushes, removes by tracked index and pops at random
// and compares with a sorted model.
func TestRandomAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Heap[*item]
	live := map[*item]int64{}
	for step := range 20000 {
		switch op := r.IntN(10); {
		case op < 5: // push
			it := &item{id: step, idx: -1}
			w := r.Int64N(1000)
			h.Push(w, it, &it.idx)
			live[it] = w
		case op < 7 && len(live) > 0: // remove an arbitrary tracked entry
			for it := range live {
				h.Remove(it.idx)
				if it.idx != -1 {
					t.Fatalf("removed item records index %d", it.idx)
				}
				delete(live, it)
				break
			}
		case op < 9: // pop what is due
			now := r.Int64N(1000)
			for {
				e, ok := h.PopDue(now)
				if !ok {
					break
				}
				if e.When > now || e.Item.idx != -1 {
					t.Fatalf("PopDue(%d) gave when %d, index %d", now, e.When, e.Item.idx)
				}
				for _, w := range live {
					if w < e.When {
						t.Fatalf("popped %d before %d", e.When, w)
					}
				}
				delete(live, e.Item)
			}
		default:
			h.Remove(-1) // absent: ignored
			h.Remove(h.Len())
		}
		if h.Len() != len(live) {
			t.Fatalf("step %d: Len %d, model %d", step, h.Len(), len(live))
		}
		if step%97 == 0 {
			check(t, &h)
		}
	}
	check(t, &h)
	kept := slices.Collect(func(yield func(*item) bool) {
		for it := range live {
			if !yield(it) {
				return
			}
		}
	})
	h.Reset()
	for _, it := range kept {
		if it.idx != -1 {
			t.Fatalf("Reset left item %d with index %d", it.id, it.idx)
		}
	}
	if h.Len() != 0 {
		t.Fatalf("Len %d after Reset", h.Len())
	}
}

// BenchmarkPushPop is the carrier's pattern: a task parks with a deadline and
// is woken by I/O (Remove) or by its time (PopDue), over a heap of 1,000.
func BenchmarkPushPop(b *testing.B) {
	for _, tc := range []struct {
		name    string
		tracked bool
	}{{"tracked", true}, {"untracked", false}} {
		b.Run(tc.name, func(b *testing.B) {
			var h Heap[*item]
			index := func(it *item) *int {
				if tc.tracked {
					return &it.idx
				}
				return nil
			}
			items := make([]*item, 1000)
			r := rand.New(rand.NewPCG(3, 4))
			for i := range items {
				items[i] = &item{id: i, idx: -1}
				h.Push(r.Int64N(1<<30), items[i], index(items[i]))
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				e, _ := h.Peek()
				h.PopDue(e.When)
				h.Push(e.When+r.Int64N(1<<30), e.Item, index(e.Item))
			}
		})
	}
}
