package report

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
)

// CarrierFiguresOf gives the ring figures of io_uring carriers and leaves
// them missing (NaN, null in JSON) for epoll ones.
func TestCarrierFiguresRing(t *testing.T) {
	epoll := carrier.Telemetry{IOCycles: 10, IOEvents: 20}
	uring := carrier.Telemetry{IOCycles: 10, RingEnters: 50, RingSubmissions: 100}
	uring.RingCompletions.Buckets[1], uring.RingCompletions.Sum = 30, 30 // 30 passes that reaped 1 CQE each
	tests := []struct {
		name         string
		ts           []carrier.Telemetry
		enters, subs float64 // NaN: missing
	}{
		{"epoll", []carrier.Telemetry{epoll}, math.NaN(), math.NaN()},
		{"io_uring, two carriers", []carrier.Telemetry{uring, uring}, 100 * 5, 2},
	}
	for _, tc := range tests {
		f := CarrierFiguresOf(tc.ts, 2*time.Second)
		got := []float64{float64(f.RingEntersPer10s), float64(f.SubmissionsPerEnter)}
		want := []float64{tc.enters, tc.subs}
		for i := range got {
			if math.IsNaN(want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(want[i]) && got[i] != want[i]) {
				t.Errorf("%s: figure %d = %v, want %v", tc.name, i, got[i], want[i])
			}
		}
		if cpp := float64(f.CompletionsPerPass); math.IsNaN(tc.enters) != math.IsNaN(cpp) || (!math.IsNaN(cpp) && cpp != 1) {
			t.Errorf("%s: completions per pass %v", tc.name, f.CompletionsPerPass)
		}
	}
}

// CarrierFiguresOf gives the carriers' time slice in µs, the largest where
// they differ, and leaves it missing (NaN) where no carrier reports one; an
// older carrier figures' JSON without it reads as missing, not 0.
func TestCarrierFiguresSlice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		slices []uint64 // per carrier, ns
		want   float64  // NaN: missing
	}{
		{"one carrier, serve's default", []uint64{100_000}, 100},
		{"two, the kernel's default", []uint64{1_400_000, 1_400_000}, 1400},
		{"two that differ", []uint64{100_000, 2_000_000}, 2000},
		{"none reported", []uint64{0, 0}, math.NaN()},
	} {
		var ts []carrier.Telemetry
		for _, s := range tc.slices {
			ts = append(ts, carrier.Telemetry{IOCycles: 1, SliceNs: s})
		}
		got := float64(CarrierFiguresOf(ts, time.Second).SliceUs)
		if math.IsNaN(got) != math.IsNaN(tc.want) || (!math.IsNaN(got) && got != tc.want) {
			t.Errorf("%s: slice %v µs, want %v", tc.name, got, tc.want)
		}
	}
	var old CarrierFigures
	if err := json.Unmarshal([]byte(`{"carriers":1,"io_cycles_per_10s":5}`), &old); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(old.SliceUs)) {
		t.Errorf("an older result's slice reads %v, want NaN", old.SliceUs)
	}
}

// CarrierFiguresOf gives the share of the server's other threads that its
// carriers batched, and leaves it missing (NaN) where they do not batch
// (-1) or report nothing; an older result without it reads as missing.
func TestCarrierFiguresBatched(t *testing.T) {
	for _, tc := range []struct {
		name            string
		others, batched int
		want            float64 // NaN: missing
	}{
		{"all batched", 9, 9, 1},
		{"the kernel refused some", 8, 6, 0.75},
		{"the kernel refused all", 8, 0, 0},
		{"not batching", -1, -1, math.NaN()},
		{"an older carrier's telemetry", 0, 0, math.NaN()},
	} {
		ts := []carrier.Telemetry{
			{IOCycles: 1, OtherThreads: tc.others, BatchedThreads: tc.batched},
			{IOCycles: 1, OtherThreads: tc.others, BatchedThreads: tc.batched},
		}
		got := float64(CarrierFiguresOf(ts, time.Second).BatchedShare)
		if math.IsNaN(got) != math.IsNaN(tc.want) || (!math.IsNaN(got) && got != tc.want) {
			t.Errorf("%s: batched share %v, want %v", tc.name, got, tc.want)
		}
	}
	var old CarrierFigures
	if err := json.Unmarshal([]byte(`{"carriers":1,"io_cycles_per_10s":5}`), &old); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(old.BatchedShare)) {
		t.Errorf("an older result's batched share reads %v, want NaN", old.BatchedShare)
	}
}
