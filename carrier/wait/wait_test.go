package wait

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
)

// fakeTarget becomes ready when ready is set; Block sleeps in short steps
// until then or the deadline.
type fakeTarget struct {
	ready  atomic.Bool
	word   uint32
	polls  atomic.Int64
	blocks atomic.Int64
	events int // what Poll reports once ready (0: only Ready says so)
}

func (f *fakeTarget) Ready() bool { return f.ready.Load() }
func (f *fakeTarget) Poll() int {
	f.polls.Add(1)
	if f.events > 0 && f.ready.Load() {
		return f.events
	}
	return 0
}
func (f *fakeTarget) Block(deadline int64) int {
	f.blocks.Add(1)
	for !f.ready.Load() {
		if deadline >= 0 && Now() >= deadline {
			return 0
		}
		time.Sleep(20 * time.Microsecond)
	}
	return 0
}
func (f *fakeTarget) Word() *uint32 { return &f.word }

func (f *fakeTarget) setReady() {
	f.ready.Store(true)
	atomic.AddUint32(&f.word, 1)
}

func TestNames(t *testing.T) {
	want := []string{"block", "busy", "pause", "adaptive", "tpause", "umwait"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	if _, err := New("nap", Options{}); err == nil {
		t.Fatal("New(nap) succeeded")
	}
}

// runnable lists the strategies this machine can run, with B given so that
// adaptive does not measure it.
func runnable(t *testing.T) []Strategy {
	t.Helper()
	var out []Strategy
	for _, n := range Names() {
		s, err := New(n, Options{BlockWake: 5 * time.Microsecond})
		if errors.Is(err, ErrNotSupported) {
			t.Logf("%s: %v", n, err)
			continue
		}
		if err != nil {
			t.Fatalf("New(%s): %v", n, err)
		}
		if s.Name() != n {
			t.Fatalf("New(%s).Name() = %s", n, s.Name())
		}
		out = append(out, s)
	}
	return out
}

func TestWaitAlreadyReady(t *testing.T) {
	for _, s := range runnable(t) {
		f := &fakeTarget{}
		f.setReady()
		if r := s.Wait(f, -1); r.Kind != KindNone {
			t.Errorf("%s: ready target: kind %v, want KindNone", s.Name(), r.Kind)
		}
	}
}

// delayedTarget becomes ready 2ms after the strategy first looks at it, so
// that a test thread preempted before its Wait still sees it idle first.
type delayedTarget struct {
	fakeTarget
	first atomic.Int64
}

func (d *delayedTarget) Ready() bool {
	now := Now()
	d.first.CompareAndSwap(0, now)
	if now-d.first.Load() >= int64(2*time.Millisecond) {
		d.setReady()
	}
	return d.fakeTarget.Ready()
}

func (d *delayedTarget) Block(deadline int64) int {
	d.blocks.Add(1)
	for !d.Ready() {
		if deadline >= 0 && Now() >= deadline {
			return 0
		}
		time.Sleep(20 * time.Microsecond)
	}
	return 0
}

func TestWaitWakesOnWork(t *testing.T) {
	for _, s := range runnable(t) {
		f := &delayedTarget{}
		start := time.Now()
		r := s.Wait(f, Now()+int64(5*time.Second))
		el := time.Since(start)
		if !f.Ready() || r.Kind == KindTimer || r.Kind == KindNone {
			t.Errorf("%s: returned %+v before work or as timer", s.Name(), r)
		}
		if el > 2*time.Second {
			t.Errorf("%s: took %v to see work", s.Name(), el)
		}
		want := KindSpin
		if s.Name() == "block" || s.Name() == "adaptive" {
			want = KindBlock // adaptive spins at most B/λ = 50µs < 2ms
		}
		if r.Kind != want {
			t.Errorf("%s: kind %v, want %v", s.Name(), r.Kind, want)
		}
		if r.Spun+r.Blocked < time.Millisecond {
			t.Errorf("%s: spun %v + blocked %v, want about 2ms", s.Name(), r.Spun, r.Blocked)
		}
	}
}

func TestWaitDeadline(t *testing.T) {
	for _, s := range runnable(t) {
		f := &fakeTarget{}
		start := Now()
		r := s.Wait(f, start+int64(3*time.Millisecond))
		if r.Kind != KindTimer {
			t.Errorf("%s: kind %v at deadline, want KindTimer", s.Name(), r.Kind)
		}
		if el := Now() - start; el < int64(3*time.Millisecond) {
			t.Errorf("%s: returned after %v, before the deadline", s.Name(), time.Duration(el))
		}
	}
}

// pollTarget is never Ready: only its Poll, from the third call on,
// reports events, so a spinning strategy returns only if it polls.
type pollTarget struct{ fakeTarget }

func (p *pollTarget) Ready() bool { return false }
func (p *pollTarget) Poll() int {
	if p.polls.Add(1) >= 3 {
		return 3
	}
	return 0
}

func TestWaitPollEvents(t *testing.T) {
	for _, name := range []string{"busy", "pause"} {
		s, err := New(name, Options{PollEvery: 4})
		if err != nil {
			t.Fatal(err)
		}
		f := &pollTarget{}
		r := s.Wait(f, Now()+int64(time.Second))
		if r.Kind != KindSpin || r.Events != 3 || f.polls.Load() != 3 {
			t.Errorf("%s: %+v after %d polls, want a spin ended by the third poll's 3 events", name, r, f.polls.Load())
		}
	}
}

func TestWaitPkgGating(t *testing.T) {
	caps := cpu.Capabilities()
	for _, n := range []string{"tpause", "umwait"} {
		_, err := New(n, Options{})
		if caps.WaitPKG {
			if err != nil {
				t.Errorf("New(%s) on a WAITPKG CPU: %v", n, err)
			}
			continue
		}
		if !errors.Is(err, ErrNotSupported) {
			t.Errorf("New(%s) without WAITPKG: %v, want ErrNotSupported", n, err)
		}
		if Available()[n] == nil || slices.Contains(Supported(), n) {
			t.Errorf("%s listed as supported without WAITPKG", n)
		}
	}
}

func TestAdaptiveSpinsToNearDeadline(t *testing.T) {
	s, err := New("adaptive", Options{BlockWake: 200 * time.Microsecond, Trust: 1})
	if err != nil {
		t.Fatal(err)
	}
	a := s.(*Adaptive)
	f := &fakeTarget{}
	// A deadline 50µs away is closer than B: spinning to it is cheaper
	// than one block-and-wake, so the strategy must not block.
	r := s.Wait(f, Now()+int64(50*time.Microsecond))
	if r.Kind != KindTimer || f.blocks.Load() != 0 || r.Blocked != 0 {
		t.Errorf("near deadline: %+v, %d blocks; want a spun-out timer", r, f.blocks.Load())
	}
	// Far deadline, no work: spins B (θ = B with trust 1), then blocks.
	r = s.Wait(f, Now()+int64(20*time.Millisecond))
	if r.Kind != KindTimer || f.blocks.Load() != 1 || r.Spun < 200*time.Microsecond {
		t.Errorf("far deadline: %+v, %d blocks; want a block after spinning B", r, f.blocks.Load())
	}
	if a.Policy.count != 2 {
		t.Errorf("policy saw %d idle periods, want 2", a.Policy.count)
	}
}

// stampTarget is a fakeTarget whose producer stamps its wake-up.
type stampTarget struct {
	fakeTarget
	sent atomic.Int64
}

func (s *stampTarget) WakeSent() int64 { return s.sent.Load() }

func TestAdaptiveLearnsBFromWakeStamps(t *testing.T) {
	s, err := New("adaptive", Options{BlockWake: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	a := s.(*Adaptive)
	f := &stampTarget{}
	f.sent.Store(Now() - int64(time.Hour)) // a stale stamp from before the wait: ignored
	go func() {
		time.Sleep(2 * time.Millisecond)
		// Stamped 5µs back, so that the wake-up the strategy measures
		// exceeds 1µs however soon the fake's Block notices readiness.
		f.sent.Store(Now() - int64(5*time.Microsecond))
		f.setReady()
	}()
	if r := s.Wait(f, -1); r.Kind != KindBlock {
		t.Fatalf("kind %v, want a block (θ ≤ B/λ = 10µs)", r.Kind)
	}
	// The observed wake-up exceeds 1µs: B moves up by 1/32.
	if b := a.Policy.BlockWake(); b <= time.Microsecond || b > 2*time.Microsecond {
		t.Errorf("B after one stamped wake-up = %v, want it moved up from 1µs by 1/32", b)
	}
	t.Logf("B after one stamped wake-up: %v", a.Policy.BlockWake())
}

// A wait that blocked lasted the idle period plus the wake-up latency; the
// policy must be fed the idle period alone (see blockedIdle).
func TestAdaptiveBlockedIdle(t *testing.T) {
	const b = 20 * time.Microsecond
	us := func(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
	for _, tc := range []struct {
		name    string
		stamp   bool
		sentAgo time.Duration // stamp this long before now; 0: no stamp
		r       Result
		want    time.Duration
		wantB   bool // a block-and-wake was observed
		fixedB  bool // Options.FixedB
	}{
		{"stamped wake-up, B fixed", true, us(25), Result{Kind: KindBlock, Spun: us(2), Blocked: us(40)}, us(17), false, true},
		{"stamped wake-up", true, us(25), Result{Kind: KindBlock, Spun: us(2), Blocked: us(40)}, us(17), true, false},
		{"stamp from an earlier block", true, us(100), Result{Kind: KindBlock, Spun: us(2), Blocked: us(40)}, us(22), false, false},
		{"no stamp yet", true, 0, Result{Kind: KindBlock, Spun: us(2), Blocked: us(40)}, us(22), false, false},
		{"target without stamps", false, 0, Result{Kind: KindBlock, Spun: us(2), Blocked: us(40)}, us(22), false, false},
		{"woken sooner than B", false, 0, Result{Kind: KindBlock, Spun: us(2), Blocked: us(5)}, us(2), false, false},
		{"deadline: no work came", true, us(25), Result{Kind: KindTimer, Spun: us(2), Blocked: us(40)}, us(42), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Adaptive{Policy: NewPolicy(b, 1, 0), learnB: !tc.fixedB}
			var tg Target = &fakeTarget{}
			now := Now()
			start := now - int64(tc.r.Spun+tc.r.Blocked)
			if tc.stamp {
				st := &stampTarget{}
				if tc.sentAgo > 0 {
					st.sent.Store(now - int64(tc.sentAgo))
				}
				tg = st
			}
			if got := a.blockedIdle(tg, start, now, tc.r); got != tc.want {
				t.Errorf("idle %v, want %v", got, tc.want)
			}
			if moved := a.Policy.BlockWake() != b; moved != tc.wantB {
				t.Errorf("B moved: %v, want %v", moved, tc.wantB)
			}
		})
	}
}

// TestErrNotSupportedIsCPUs: one sentinel for what the machine cannot do.
func TestErrNotSupportedIsCPUs(t *testing.T) {
	if !errors.Is(fmt.Errorf("tpause: %w", ErrNotSupported), cpu.ErrNotSupported) {
		t.Error("wait.ErrNotSupported is not cpu.ErrNotSupported")
	}
}

// TestMono: a time with a monotonic reading lands on Now's clock (between
// two readings around it, offsets kept); one without is refused.
func TestMono(t *testing.T) {
	before := Now()
	now := time.Now()
	after := Now()
	cases := []struct {
		name   string
		t      time.Time
		ok     bool
		lo, hi int64 // bounds of the result when ok
	}{
		{"time.Now", now, true, before, after},
		{"time.Now plus a second", now.Add(time.Second), true, before + 1e9, after + 1e9},
		{"time.Now minus an hour", now.Add(-time.Hour), true, before - 3600e9, after - 3600e9},
		{"stripped by Round(0)", now.Round(0), false, 0, 0},
		{"time.Unix", time.Unix(1, 0), false, 0, 0},
		{"zero", time.Time{}, false, 0, 0},
	}
	for _, tc := range cases {
		m, ok := Mono(tc.t)
		if ok != tc.ok {
			t.Errorf("%s: ok = %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if ok && (m < tc.lo || m > tc.hi) {
			t.Errorf("%s: %d, want within [%d, %d]", tc.name, m, tc.lo, tc.hi)
		}
	}
}
