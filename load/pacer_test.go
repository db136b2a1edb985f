package load

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// fakeConn drives one connection's schedule with a fake clock: it waits as
// the worker does (sendDelay), sends, and completes after a scripted service
// time, one request at a time.
type fakeSend struct {
	k                int64
	intended, sentAt int64
	doneAt           int64
}

func simulate(s schedule, n int, service func(k int64) int64) []fakeSend {
	var now int64 // the fake clock
	out := make([]fakeSend, 0, n)
	for k := int64(0); k < int64(n); k++ {
		now += s.sendDelay(k, now) // sleep exactly until due, or not at all
		done := now + service(k)
		out = append(out, fakeSend{k: k, intended: s.at(k), sentAt: now, doneAt: done})
		now = done
	}
	return out
}

func TestPacingFakeClock(t *testing.T) {
	const ms = int64(time.Millisecond)
	s := newSchedule(0, 1000, 0, 1) // one connection at 1000 req/s: every 1 ms
	sends := simulate(s, 100, func(k int64) int64 {
		if k == 10 {
			return 25 * ms // one 25 ms stall
		}
		return 200 * int64(time.Microsecond)
	})
	for i, x := range sends {
		if x.sentAt < x.intended {
			t.Fatalf("request %d sent at %d before its intended %d", i, x.sentAt, x.intended)
		}
		if i > 0 && x.sentAt < sends[i-1].doneAt {
			t.Fatalf("request %d sent before request %d completed", i, i-1)
		}
		behind := i > 0 && sends[i-1].doneAt > x.intended
		switch {
		case behind && x.sentAt != sends[i-1].doneAt:
			t.Errorf("request %d is behind but waited: sent %d, previous done %d", i, x.sentAt, sends[i-1].doneAt)
		case !behind && x.sentAt != x.intended:
			// On time: sent exactly at the intended nanosecond, not
			// rounded up to a millisecond timer as wrk2 does.
			t.Errorf("request %d on time but sent at %d, intended %d", i, x.sentAt, x.intended)
		}
	}
	// The stall delays the requests intended during it: their corrected
	// latency (from the intended time) shows the wait, the uncorrected one
	// (from the actual send) does not.
	x := sends[12]
	if corr, unc := x.doneAt-x.intended, x.doneAt-x.sentAt; corr < 20*ms || unc > ms {
		t.Errorf("request 12: corrected %d ns, uncorrected %d ns", corr, unc)
	}
	// Catching up never exceeds the pace one request at a time allows, and
	// the connection is back on schedule afterwards.
	last := sends[len(sends)-1]
	if last.sentAt != last.intended {
		t.Errorf("not back on schedule: last sent %d, intended %d", last.sentAt, last.intended)
	}
}

func TestScheduleSpreadsConnections(t *testing.T) {
	const rate, conns = 3000.0, 7
	var times []int64
	for i := 0; i < conns; i++ {
		s := newSchedule(5000, rate, i, conns)
		for k := int64(0); k < 300; k++ {
			times = append(times, s.at(k))
		}
	}
	slices.Sort(times)
	r := rate // a variable: the division is a run-time float
	gap := int64(float64(time.Second) / r)
	for i := 1; i < conns*300; i++ {
		if d := times[i] - times[i-1]; d < gap-2 || d > gap+2 {
			t.Fatalf("gap %d ns between intended sends %d and %d, want %d", d, i-1, i, gap)
		}
	}
}

func TestCountBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		s := schedule{start: rng.Int64N(1e6), interval: 1 + rng.Float64()*1e6}
		end := rng.Int64N(1e9)
		var want int64
		for s.at(want) < end {
			want++
		}
		if got := s.countBefore(end); got != want {
			t.Fatalf("%+v countBefore(%d) = %d, want %d", s, end, got, want)
		}
	}
}

// countBefore answers at once for any schedule: a fraction of a nanosecond
// between sends (load -R 1e20: 1e-10 ns over 10 connections) or an end
// far away once overflowed int64 and looped about 2^63 times.
func TestCountBeforeExtremes(t *testing.T) {
	for _, tc := range []struct {
		s    schedule
		end  int64
		want int64
	}{
		{schedule{start: 0, interval: 1e-10}, 1e9, maxCount},
		{schedule{start: 7, interval: 1e-300}, math.MaxInt64, maxCount},
		{schedule{start: 0, interval: 1}, math.MaxInt64, maxCount},
		{schedule{start: 0, interval: 1}, 1 << 40, 1 << 40},
		{schedule{start: 0, interval: 0.5}, 1000, 2000},
		{schedule{start: 100, interval: 3}, 100, 0},
		{schedule{start: 100, interval: 3}, 101, 1},
		{schedule{start: 0, interval: 1e9}, math.MaxInt64, 9223372037},
	} {
		got := make(chan int64, 1)
		go func() { got <- tc.s.countBefore(tc.end) }()
		select {
		case n := <-got:
			if n != tc.want {
				t.Errorf("%+v countBefore(%d) = %d, want %d", tc.s, tc.end, n, tc.want)
			}
		case <-time.After(time.Second):
			t.Fatalf("%+v countBefore(%d) still running after 1s", tc.s, tc.end)
		}
	}
}
