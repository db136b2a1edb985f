package wait

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
)

func TestMeasureBlockWake(t *testing.T) {
	b, err := MeasureBlockWake(200)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("B (median block-and-wake over 400 wake-ups) = %v", b)
	if b <= 0 || b > 50*time.Millisecond {
		t.Errorf("B = %v, not a plausible block-and-wake cost", b)
	}
	if _, err := MeasureBlockWake(0); err == nil {
		t.Error("0 rounds accepted")
	}
	for _, idle := range []time.Duration{10 * time.Microsecond, 100 * time.Microsecond, time.Millisecond} {
		d, err := MeasureBlockWakeAfter(20, idle)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("B after %v idle = %v", idle, d)
	}
}

func TestMeasurePause(t *testing.T) {
	ns, err := MeasurePause(100000)
	if errors.Is(err, ErrNotSupported) {
		t.Skipf("no PAUSE here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PAUSE = %.1f ns", ns)
	if ns <= 0 || ns > 10000 {
		t.Errorf("PAUSE = %.1f ns, not plausible", ns)
	}
	if _, err := MeasurePause(0); err == nil {
		t.Error("0 instructions accepted")
	}
}

func TestParseUmwaitControl(t *testing.T) {
	tests := []struct {
		maxTime, c02 string
		wantMax      uint64
		wantC02      bool
	}{
		{"100000\n", "1\n", 100000, true},
		{"0\n", "0\n", 0, false},
		{"", "", 0, true},
		{"-5", "x", 0, true},
		{" 42 ", " 0 ", 42, false},
	}
	for _, tt := range tests {
		m, c := parseUmwaitControl([]byte(tt.maxTime), []byte(tt.c02))
		if m != tt.wantMax || c != tt.wantC02 {
			t.Errorf("parse(%q, %q) = %d, %v; want %d, %v", tt.maxTime, tt.c02, m, c, tt.wantMax, tt.wantC02)
		}
	}
}

func FuzzParseUmwaitControl(f *testing.F) {
	f.Add([]byte("100000\n"), []byte("1\n"))
	f.Add([]byte("18446744073709551616"), []byte("0"))
	f.Fuzz(func(t *testing.T, maxTime, c02 []byte) {
		m, _ := parseUmwaitControl(maxTime, c02)
		digits := strings.TrimLeft(strings.TrimSpace(string(maxTime)), "0")
		if m != 0 && strconv.FormatUint(m, 10) != digits {
			t.Fatalf("max_time %q parsed as %d", maxTime, m)
		}
	})
}

func TestUmwaitMaxTime(t *testing.T) {
	root := t.TempDir()
	if m, c02 := umwaitMaxTime(root); m != 0 || !c02 {
		t.Errorf("absent: %d, %v; want 0 (no cap), C0.2 allowed", m, c02)
	}
	dir := filepath.Join(root, umwaitControlDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "max_time"), []byte("100000\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "enable_c02"), []byte("0\n"), 0o644)
	if m, c02 := umwaitMaxTime(root); m != 100000 || c02 {
		t.Errorf("got %d, %v; want 100000, C0.2 off", m, c02)
	}
}

// efdTarget is a real target: a flag, an epoll instance and an eventfd the
// producer signals when the waiter may be blocked.
type efdTarget struct {
	flag     atomic.Uint32
	sleeping atomic.Bool
	wakeSent atomic.Int64
	ep, efd  int
	evs      [4]unix.EpollEvent
}

func newEfdTarget(t testing.TB) *efdTarget {
	ep, err := unix.EpollCreate()
	if err != nil {
		t.Fatal(err)
	}
	efd, err := unix.Eventfd()
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.EpollAdd(ep, efd, unix.EPOLLIN, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(efd); unix.Close(ep) })
	return &efdTarget{ep: ep, efd: efd}
}

func (e *efdTarget) Ready() bool { return e.flag.Load() != 0 }
func (e *efdTarget) Poll() int {
	n, _ := unix.EpollWait(e.ep, e.evs[:], 0)
	if n > 0 {
		unix.EventfdDrain(e.efd)
	}
	return 0 // the eventfd is only a wake-up; work shows in Ready
}
func (e *efdTarget) Block(deadline int64) int {
	e.sleeping.Store(true)
	defer e.sleeping.Store(false)
	if e.Ready() {
		return 0
	}
	timeout := int64(-1)
	if deadline >= 0 {
		timeout = max(0, deadline-Now())
	}
	if n, _ := unix.EpollPwait2(e.ep, e.evs[:], timeout); n > 0 {
		unix.EventfdDrain(e.efd)
	}
	return 0
}
func (e *efdTarget) Word() *uint32 { return (*uint32)(unsafePointer(&e.flag)) }

// submit makes work ready and wakes the waiter if it sleeps, stamping the
// wake-up for WakeSent.
func (e *efdTarget) submit() {
	e.flag.Store(1)
	if e.sleeping.Load() {
		e.wakeSent.Store(Now())
		unix.EventfdSignal(e.efd)
	}
}

// WakeSent makes efdTarget a WakeStamper.
func (e *efdTarget) WakeSent() int64 { return e.wakeSent.Load() }

// pinTo locks the goroutine to its thread and, when the CPU is allowed, pins
// the thread there. Callers never unlock: the thread exits with the
// goroutine, so its mask does not leak to other goroutines.
func pinTo(c int) {
	runtime.LockOSThread()
	if allowed, err := cpu.Allowed(); err == nil && allowed.Contains(c) && len(allowed) > 1 {
		cpu.Pin(cpu.Set{c})
	}
}

// BenchmarkWake measures, per idle gap and strategy, the latency from a
// producer making work ready (on CPU 0) to the waiter (on CPU 1) returning
// from Wait; the producer spins for the gap between submissions. It reports
// the median and p99 latency (wake-p50-ns, wake-p99-ns) and the model's
// waiting cost per wake-up (cost-ns: time spun plus B for every block, B
// measured once with the adaptive strategy's defaults, reported as B-ns).
func BenchmarkWake(b *testing.B) {
	bw, err := measuredB()
	if err != nil {
		b.Fatal(err)
	}
	for _, gap := range []time.Duration{5 * time.Microsecond, 200 * time.Microsecond} {
		for _, name := range Names() {
			b.Run("gap="+gap.String()+"/"+name, func(b *testing.B) {
				s, err := New(name, Options{BlockWake: bw})
				if err != nil {
					b.Skipf("%s: %v", name, err)
				}
				b.ReportAllocs()
				benchWake(b, s, gap, bw)
			})
		}
	}
}

func benchWake(b *testing.B, s Strategy, gap, bw time.Duration) {
	e := newEfdTarget(b)
	var sent atomic.Int64
	lat := make([]int64, 0, b.N)
	var spun time.Duration
	blocks := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		pinTo(1)
		for range b.N {
			for {
				r := s.Wait(e, -1)
				spun += r.Spun
				if r.Kind == KindBlock {
					blocks++
				}
				if e.Ready() {
					break
				}
			}
			lat = append(lat, Now()-sent.Load())
			e.flag.Store(0)
		}
	}()
	b.ResetTimer()
	go func() { // the producer
		pinTo(0)
		for range b.N {
			for e.Ready() { // the waiter has not consumed the last one
			}
			for until := Now() + int64(gap); Now() < until; {
			}
			sent.Store(Now())
			e.submit()
		}
	}()
	<-done
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2]), "wake-p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100]), "wake-p99-ns")
	b.ReportMetric(float64(spun+time.Duration(blocks)*bw)/float64(b.N), "cost-ns")
	b.ReportMetric(float64(bw), "B-ns")
}

// BenchmarkBlockWake reports B (B-ns, the median of 2*b.N wake-ups) after
// the sleeper's CPU has been idle for 0 (ping-pong), 10µs, 100µs and 1ms.
func BenchmarkBlockWake(b *testing.B) {
	for _, idle := range []time.Duration{0, 10 * time.Microsecond, 100 * time.Microsecond, time.Millisecond} {
		b.Run("idle="+idle.String(), func(b *testing.B) {
			b.ReportAllocs()
			d, err := MeasureBlockWakeAfter(b.N, idle)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(d), "B-ns")
		})
	}
}

func BenchmarkPause(b *testing.B) {
	if !hasPause {
		b.Skip("no PAUSE instruction on " + runtime.GOARCH)
	}
	b.ReportAllocs()
	for b.Loop() {
		pause()
	}
}

func BenchmarkWaitReady(b *testing.B) {
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			s, err := New(name, Options{BlockWake: 5 * time.Microsecond})
			if err != nil {
				b.Skipf("%s: %v", name, err)
			}
			b.ReportAllocs()
			f := &fakeTarget{}
			f.setReady()
			for b.Loop() {
				s.Wait(f, -1)
			}
		})
	}
}

// chanEnd is a Sleeper on a channel whose Wake fails from its failAt-th call.
type chanEnd struct {
	ch     chan struct{}
	wakes  atomic.Int32
	failAt int32
	mu     sync.Mutex
	closed bool
}

func (c *chanEnd) Sleep() error { <-c.ch; return nil }
func (c *chanEnd) Rearm() error { return nil }

func (c *chanEnd) Abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.ch)
	}
}

func (c *chanEnd) Wake() error {
	if c.wakes.Add(1) == c.failAt {
		return errors.New("wake failed")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.ch <- struct{}{} // buffered: the peer has emptied it before this wake
	}
	return nil
}

func TestMeasureWakes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failAt  int32 // on end 1's Wake; 0: never
		wantErr bool
	}{
		{"ping-pong", 0, false},
		{"first wake fails", 1, true},
		{"a later wake fails", 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ends := [2]*chanEnd{{ch: make(chan struct{}, 1)}, {ch: make(chan struct{}, 1), failAt: tc.failAt}}
			d, err := MeasureWakes([2]int{-1, -1}, 20, 0, [2]Sleeper{ends[0], ends[1]})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (d <= 0 || d > time.Second) {
				t.Errorf("median wake-up %v, not plausible", d)
			}
			if err == nil && (ends[0].wakes.Load() != 20 || ends[1].wakes.Load() != 20) {
				t.Errorf("wakes %d and %d, want 20 each", ends[0].wakes.Load(), ends[1].wakes.Load())
			}
		})
	}
	if _, err := MeasureWakes([2]int{-1, -1}, 0, 0, [2]Sleeper{}); err == nil {
		t.Error("0 rounds accepted")
	}
}
