package carrier

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/unix"
)

// TestCloseLeavesNothing closes a group while it holds everything a group
// can hold: a listener, open client conns with handlers parked in Read, a
// sleeping task, a dialed conn, queued tasks and an offloaded function.
func TestCloseLeavesNothing(t *testing.T) {
	checkLeaks(t)
	g, err := New(Options{Carriers: 2, Steal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer notePoller(t, g)
	l, err := g.Listen("127.0.0.1:0", echo, ListenOptions{ReusePort: true})
	if err != nil {
		t.Fatal(err)
	}
	var clients []net.Conn
	for i := 0; i < 10; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	// One round trip per client: every handler is running and parked.
	for _, c := range clients {
		c.Write([]byte("hi"))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c, make([]byte, 2)); err != nil {
			t.Fatal(err)
		}
	}
	started := make(chan struct{}, 3)
	g.Go(func(tk *Task) { started <- struct{}{}; tk.Sleep(time.Hour) })
	g.Go(func(tk *Task) {
		c, err := tk.Dial(l.Addr().String(), time.Second)
		if err != nil {
			t.Error(err)
		}
		started <- struct{}{}
		c.Read(make([]byte, 1)) // the echo handler never writes first
	})
	g.Go(func(tk *Task) { started <- struct{}{}; tk.Offload(func() { time.Sleep(20 * time.Millisecond) }) })
	for i := 0; i < 3; i++ {
		<-started
	}
	for i := 0; i < 100; i++ {
		g.Go(func(tk *Task) { tk.Sleep(time.Hour) })
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Error("client conn still open after Close")
		}
		c.Close()
	}
	if err := g.Go(func(*Task) {}); !errors.Is(err, ErrGroupClosed) {
		t.Errorf("Go after Close: %v, want ErrGroupClosed", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Errorf("listener Close after group Close: %v", err)
	}
	for _, s := range g.Snapshot() {
		if s.OpenConns != 0 || s.TasksLive != 0 {
			t.Errorf("carrier %d after Close: open_conns=%d tasks_live=%d", s.Carrier, s.OpenConns, s.TasksLive)
		}
	}
}

// raiseNofile raises RLIMIT_NOFILE to at least n for the test, or skips.
func raiseNofile(t *testing.T, n uint64) {
	t.Helper()
	old, err := unix.GetNofile()
	if err != nil {
		t.Skipf("cannot read RLIMIT_NOFILE: %v", err)
	}
	if old.Cur >= n {
		return
	}
	if err := unix.SetNofile(unix.Rlimit{Cur: n, Max: max(n, old.Max)}); err != nil {
		t.Skipf("cannot raise RLIMIT_NOFILE to %d (hard limit %d): %v", n, old.Max, err)
	}
	t.Cleanup(func() { unix.SetNofile(old) })
}

// Test10kConns holds 10,000 connections on one carrier, each with its
// handler parked in Read, and echoes one byte on every one of them. The
// clients run in a child process (this test binary again), so each process
// needs only one fd per connection.
func Test10kConns(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 10,000 conns")
	}
	const n = 10000
	if addr := os.Getenv("CARRIER_10K_ADDR"); addr != "" {
		tenKClient(t, addr, n)
		return
	}
	raiseNofile(t, n+256)
	checkLeaks(t)
	g, l := echoGroup(t, Options{Carriers: 1}, ListenOptions{})
	cmd := exec.Command(os.Args[0], "-test.run=^Test10kConns$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CARRIER_10K_ADDR="+l.Addr().String())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(stdout, 1<<16))
		line <- string(b)
	}()
	// The child prints "ready" once all its conns echoed, then waits for
	// stdin to close. Poll OpenConns meanwhile.
	deadline := time.Now().Add(60 * time.Second)
	var open int64
	for time.Now().Before(deadline) {
		if open = g.Snapshot()[0].OpenConns; open == n {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stdin.Close()
	err := cmd.Wait()
	out := <-line
	if err != nil || !strings.Contains(out, "echoed 10000") {
		t.Fatalf("client process: %v\n%s", err, out)
	}
	if open != n {
		t.Errorf("open_conns peaked at %d, want %d", open, n)
	}
}

// tenKClient is the child side of Test10kConns.
func tenKClient(t *testing.T, addr string, n int) {
	raiseNofile(t, uint64(n)+256)
	clients := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		clients = append(clients, c)
	}
	for _, c := range clients {
		if _, err := c.Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
	}
	b := make([]byte, 1)
	for i, c := range clients {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatalf("echo on conn %d: %v", i, err)
		}
	}
	fmt.Printf("echoed %d\n", len(clients))
	io.Copy(io.Discard, os.Stdin) // hold the conns until the parent has counted them
}

// TestAcceptEMFILEBacksOff makes every accept fail with EMFILE: the
// acceptor must sleep AcceptBackoff between tries, not spin.
func TestAcceptEMFILEBacksOff(t *testing.T) {
	checkLeaks(t)
	var calls atomic.Int64
	acceptFn = func(fd int) (int, unix.Sockaddr, error) {
		calls.Add(1)
		return -1, nil, os.NewSyscallError("accept4", unix.EMFILE)
	}
	defer func() { acceptFn = unix.AcceptNB }()
	g, l := echoGroup(t, Options{Carriers: 1}, ListenOptions{})
	for i := 0; i < 500 && calls.Load() == 0; i++ { // the accept task starts
		time.Sleep(10 * time.Millisecond)
	}
	const window = 200 * time.Millisecond
	start := calls.Load()
	time.Sleep(window)
	got := calls.Load() - start
	limit := int64(window/AcceptBackoff) + 2
	if got == 0 || got > limit {
		t.Errorf("%d accept calls in %v, want 1..%d (one per %v back-off)", got, window, limit, AcceptBackoff)
	}
	if s := g.Snapshot()[0]; s.AcceptBackoffs == 0 || int64(s.AcceptBackoffs) > calls.Load() {
		t.Errorf("accept_backoffs = %d with %d failing calls", s.AcceptBackoffs, calls.Load())
	}
	l.Close()
}

// TestAcceptRealEMFILE lowers RLIMIT_NOFILE so that accept really fails,
// checks that the acceptor backs off, then restores the limit and sees the
// pending connection served.
func TestAcceptRealEMFILE(t *testing.T) {
	checkLeaks(t)
	g, l := echoGroup(t, Options{Carriers: 1}, ListenOptions{})
	old, err := unix.GetNofile()
	if err != nil {
		t.Skipf("cannot read RLIMIT_NOFILE: %v", err)
	}
	// The client's socket takes the last free fd below the limit, so the
	// server side of the connection cannot get one.
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Close()
	free := lowestFreeFD(t)
	if err := unix.SetNofile(unix.Rlimit{Cur: uint64(free + 1), Max: old.Max}); err != nil {
		t.Skipf("cannot lower RLIMIT_NOFILE: %v", err)
	}
	c2, err := net.Dial("tcp", l.Addr().String())
	restored := false
	restore := func() {
		if !restored {
			unix.SetNofile(old)
			restored = true
		}
	}
	defer restore()
	if err != nil {
		restore()
		t.Skipf("client dial under the lowered limit failed (%v): the runtime needed an fd", err)
	}
	defer c2.Close()
	// The bound is the window's length as measured, not as asked for: a
	// starved CPU oversleeps, and a fixed 100 ms bound then failed a
	// correct acceptor.
	start := time.Now()
	before := g.Snapshot()[0].AcceptBackoffs
	time.Sleep(100 * time.Millisecond)
	backoffs := g.Snapshot()[0].AcceptBackoffs - before
	window := time.Since(start)
	restore()
	if backoffs == 0 {
		t.Skip("accept never hit EMFILE (another fd was free): cannot test the real limit here")
	}
	if backoffs > uint64(window/AcceptBackoff)+2 {
		t.Errorf("%d back-offs in %v: the acceptor spins", backoffs, window)
	}
	c2.Write([]byte("z"))
	c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c2, make([]byte, 1)); err != nil {
		t.Errorf("after the limit was restored, the pending conn was not served: %v", err)
	}
}

func lowestFreeFD(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	used := map[int]bool{}
	for _, e := range ents {
		n, _ := strconv.Atoi(e.Name())
		used[n] = true
	}
	for i := 0; ; i++ {
		if !used[i] {
			return i
		}
	}
}

// TestStealing hogs carrier 0 and queues work on it: carrier 1 must steal
// and run it, and no started task may change carriers. Hand-off is off:
// with it, carrier 0 went on on another thread a millisecond into the hog
// and could run all the work itself before carrier 1, on a loaded host,
// stole any (io_uring, 0 steals once).
func TestStealing(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 2, Steal: true, HandoffThreshold: -1})
	hog := make(chan struct{})
	release := make(chan struct{})
	g.Carrier(0).Submit(func(*Task) {
		close(hog)
		<-release // blocks carrier 0 on purpose
	})
	<-hog
	const n = 50
	done := make(chan struct{})
	var ran, moved atomic.Int32
	for i := 0; i < n; i++ {
		g.Carrier(0).Submit(func(tk *Task) {
			// A started task stays on its carrier.
			home := tk.Carrier()
			tk.Yield()
			tk.Sleep(time.Millisecond)
			if tk.Carrier() != home {
				moved.Add(1)
			}
			if ran.Add(1) == n {
				close(done)
			}
		})
	}
	within(t, done, 10*time.Second, "stolen tasks while carrier 0 is blocked")
	close(release)
	s := g.Snapshot()
	if s[1].StealsIn == 0 || s[0].StealsOut != s[1].StealsIn {
		t.Errorf("steals: carrier 1 in=%d, carrier 0 out=%d", s[1].StealsIn, s[0].StealsOut)
	}
	if moved.Load() != 0 {
		t.Errorf("%d started tasks changed carriers", moved.Load())
	}
}

func TestThreadNameAndPin(t *testing.T) {
	checkLeaks(t)
	allowed, err := cpu.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	last := allowed[len(allowed)-1]
	g := newGroup(t, Options{Carriers: 1, Pin: PinCPU, CPUs: cpu.Set{last}})
	if g.Carrier(0).CPU() != last || g.Carrier(0).ID() != 0 {
		t.Errorf("carrier 0 on CPU %d id %d, want CPU %d id 0", g.Carrier(0).CPU(), g.Carrier(0).ID(), last)
	}
	// The carrier's thread, looked up from its task: with the hand-off a
	// task whose read of /proc took over the threshold goes on, until its
	// next carrier operation, on the thread it was handed off on, no longer
	// pinned; the carrier's own thread is what must be named and pinned.
	inTask(t, g, func(tk *Task) {
		tk.Yield() // on the carrier's thread now
		tid := int(tk.Carrier().tid.Load())
		b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/comm", tid))
		if err != nil {
			t.Error(err)
		} else if got := strings.TrimSpace(string(b)); got != "carrier-0" {
			t.Errorf("thread name %q, want carrier-0", got)
		}
		got, err := unix.SchedGetaffinity(tid)
		if err != nil || !slices.Equal(got, []int{last}) {
			t.Errorf("affinity %v (%v), want [%d]", got, err, last)
		}
	})
}

func TestNPlusOne(t *testing.T) {
	allowed, err := cpu.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("N+1 needs 2 CPUs, this process may use %s", allowed)
	}
	checkLeaks(t)
	g := newGroup(t, Options{NPlusOne: true, Pin: PinCPU})
	if g.Len() != len(allowed)-1 {
		t.Errorf("%d carriers on %d CPUs with N+1, want %d", g.Len(), len(allowed), len(allowed)-1)
	}
	for i := 0; i < g.Len(); i++ {
		if c := g.Carrier(i).CPU(); c == allowed[0] {
			t.Errorf("carrier %d on the reserved CPU %d", i, c)
		}
	}
	// This goroutine's thread is not a carrier: it was moved to the reserve.
	// (It may run on any non-carrier thread; all of them were moved.)
	got, err := unix.SchedGetaffinity(0)
	if err != nil || !slices.Equal(got, []int{allowed[0]}) {
		t.Errorf("non-carrier thread affinity %v (%v), want [%d]", got, err, allowed[0])
	}
	g.Close()
	if got, err := unix.SchedGetaffinity(0); err != nil || !slices.Equal(got, []int(allowed)) {
		t.Errorf("after Close, thread affinity %v (%v), want %s back", got, err, allowed)
	}
}

func TestPlanCluster(t *testing.T) {
	files, err := cpu.Layout{Packages: 2, DiesPerPackage: 2, CoresPerDie: 2, Threads: 2}.Files()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for name, v := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	all, _ := cpu.ParseList("0-15")
	tests := []struct {
		name     string
		o        Options
		cpus     []int
		clusters []int
	}{
		{"cpu", Options{CPUs: all, Pin: PinCPU, Carriers: 4}, []int{0, 1, 2, 3}, []int{0, 0, 2, 2}},
		{"nosmt", Options{CPUs: all, Pin: PinSkipSMT}, []int{0, 1, 2, 3, 4, 5, 6, 7}, []int{0, 0, 2, 2, 4, 4, 6, 6}},
		{"nplusone", Options{CPUs: all, Pin: PinSkipSMT, NPlusOne: true, Carriers: 2}, []int{1, 2}, []int{0, 2}},
		{"off", Options{CPUs: all, Carriers: 3}, []int{-1, -1, -1}, []int{-1, -1, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.SysRoot = root
			p, err := plan(o.withDefaults())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.cpus, tt.cpus) || !slices.Equal(p.cluster, tt.clusters) {
				t.Errorf("cpus %v clusters %v, want %v %v", p.cpus, p.cluster, tt.cpus, tt.clusters)
			}
		})
	}
	if _, err := plan(Options{CPUs: cpu.Set{0}, Pin: PinCPU, Carriers: 2, SysRoot: root}.withDefaults()); err == nil {
		t.Error("2 pinned carriers on 1 CPU: no error")
	}
}

func TestParseFlags(t *testing.T) {
	for _, p := range []Pinning{PinOff, PinCPU, PinSkipSMT} {
		got, err := ParsePinning(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePinning(%q) = %v, %v", p.String(), got, err)
		}
	}
	for _, s := range []Scope{ScopeGlobal, ScopeCluster} {
		got, err := ParseScope(s.String())
		if err != nil || got != s {
			t.Errorf("ParseScope(%q) = %v, %v", s.String(), got, err)
		}
	}
	for _, bad := range []string{"", "on", "CPU", "core"} {
		if _, err := ParsePinning(bad); err == nil {
			t.Errorf("ParsePinning(%q): no error", bad)
		}
	}
	if _, err := ParseScope("local"); err == nil {
		t.Error("ParseScope(local): no error")
	}
}

func FuzzParsePinning(f *testing.F) {
	for _, s := range []string{"off", "cpu", "nosmt", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := ParsePinning(s); err == nil && p.String() != s {
			t.Errorf("ParsePinning(%q) = %v, which prints %q", s, p, p.String())
		}
		if sc, err := ParseScope(s); err == nil && sc.String() != s {
			t.Errorf("ParseScope(%q) = %v, which prints %q", s, sc, sc.String())
		}
	})
}

func TestHistogram(t *testing.T) {
	var r histRec
	for _, v := range []uint64{0, 1, 2, 3, 100, 1000} {
		r.record(v)
	}
	h := r.snapshot()
	if h.Count() != 6 || h.Sum != 1106 {
		t.Fatalf("count %d sum %d", h.Count(), h.Sum)
	}
	if m := h.Mean(); m < 184 || m > 185 {
		t.Errorf("mean %v", m)
	}
	tests := []struct{ q, lo, hi float64 }{
		{0, 0, 0}, {0.5, 2, 4}, {1, 512, 1024},
	}
	for _, tt := range tests {
		if got := h.Quantile(tt.q); got < tt.lo || got > tt.hi {
			t.Errorf("Quantile(%v) = %v, want in [%v, %v]", tt.q, got, tt.lo, tt.hi)
		}
	}
	r.record(5)
	d := r.snapshot().Sub(h)
	if d.Count() != 1 || d.Sum != 5 {
		t.Errorf("window count %d sum %d, want 1 and 5", d.Count(), d.Sum)
	}
	var empty Histogram
	if q := empty.Quantile(0.5); q == q {
		t.Errorf("empty quantile %v, want NaN", q)
	}
}

func TestTelemetryJSONAndSub(t *testing.T) {
	g := newGroup(t, Options{Carriers: 1})
	before := g.Snapshot()[0]
	inTask(t, g, func(tk *Task) { tk.Yield() })
	// The drain pass publishes its counts when it ends, just after the task.
	var after, d Telemetry
	for i := 0; i < 100; i++ {
		after = g.Snapshot()[0]
		if d = after.Sub(before); d.TasksRun >= 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// A carrier polls I/O before it drains and whenever it waits, so a
	// task run means at least one I/O cycle counted (the check used to be
	// events per cycle < 0, which no count can make true).
	if d.TasksPerDrain() <= 0 || after.IOCycles == 0 || math.IsNaN(after.IOEventsPerCycle()) {
		t.Errorf("tasks per drain %v, %d I/O cycles, events per cycle %v", d.TasksPerDrain(), after.IOCycles, after.IOEventsPerCycle())
	}
	// Two runs (the start and the resumption after Yield), each measured
	// from the moment the task became runnable.
	if d.TasksRun < 2 || d.Drains == 0 || d.SubmitToRun.Count() != d.TasksRun {
		t.Errorf("window: tasks_run=%d drains=%d submit_to_run=%d", d.TasksRun, d.Drains, d.SubmitToRun.Count())
	}
	b, err := json.Marshal(after)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"io_cycles"`, `"io_events"`, `"tasks_run"`, `"queue_depth"`, `"submit_to_run"`, `"steals_in"`, `"waits"`, `"spun_ns"`, `"blocked_ns"`, `"open_connections"`, `"tasks_live"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("telemetry JSON lacks %s: %s", k, b)
		}
	}
}

func TestGOMAXPROCSRaisedAndRestored(t *testing.T) {
	for _, tc := range []struct {
		name  string
		park  bool
		start int
		want  int // with 2 carriers
	}{
		{"blocking carriers get a spare P", false, 1, 3},
		{"parking carriers need none", true, 1, 2},
		{"never lowered", false, 4, 4},
		{"never lowered, parking", true, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if parkAll && !tc.park {
				t.Skip("the suite runs with every carrier parking (SPINDLE_TEST_PARK)")
			}
			prev := runtime.GOMAXPROCS(tc.start)
			defer runtime.GOMAXPROCS(prev)
			g, err := New(Options{Carriers: 2, ParkIdle: tc.park})
			if err != nil {
				t.Fatal(err)
			}
			defer notePoller(t, g)
			if got := runtime.GOMAXPROCS(0); got != tc.want {
				t.Errorf("GOMAXPROCS with 2 carriers from %d = %d, want %d", tc.start, got, tc.want)
			}
			g.Close()
			if got := runtime.GOMAXPROCS(0); got != tc.start {
				t.Errorf("GOMAXPROCS after Close = %d, want %d back", got, tc.start)
			}
		})
	}
}

func TestSiblings(t *testing.T) {
	clusters := []int{0, 0, 4, 4, 4}
	got := siblings(clusters, ScopeCluster)
	want := [][]int{{1}, {0}, {3, 4}, {2, 4}, {2, 3}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("cluster scope: carrier %d steals from %v, want %v", i, got[i], want[i])
		}
	}
	if g := siblings(clusters, ScopeGlobal); len(g[0]) != 4 {
		t.Errorf("global scope: carrier 0 steals from %v, want the 4 others", g[0])
	}
}

func TestCloseFromTask(t *testing.T) {
	g := newGroup(t, Options{Carriers: 1})
	inTask(t, g, func(*Task) {
		if err := g.Close(); !errors.Is(err, ErrCloseInTask) {
			t.Errorf("Close in a task: %v, want ErrCloseInTask", err)
		}
	})
}

// TestTelemetryAddSub: Add sums every counter and histogram of two
// carriers, and Sub of the sum gives the other carrier back.
func TestTelemetryAddSub(t *testing.T) {
	mk := func(k uint64) Telemetry {
		var tl Telemetry
		tl.IOCycles, tl.IOEvents, tl.Drains, tl.TasksRun = 1*k, 2*k, 3*k, 4*k
		tl.StealsIn, tl.StealsOut, tl.SpunNs, tl.BlockedNs = 5*k, 6*k, 7*k, 8*k
		tl.Panics, tl.AcceptBackoffs, tl.CorosTrimmed = 9*k, 10*k, 12*k
		tl.Watches, tl.WatchesArmed = 13*k, 14*k
		tl.QueueDepth.Buckets[3], tl.QueueDepth.Sum = k, 8*k
		tl.SubmitToRun.Buckets[10], tl.SubmitToRun.Sum = 2*k, 2048*k
		tl.Waits = map[string]uint64{"block": k}
		tl.OpenConns, tl.TasksLive = int64(k), int64(2*k)
		return tl
	}
	a, b := mk(1), mk(10)
	b.Waits["spin"] = 3 // a key only one side has
	sum := a.Add(b)
	tests := []struct {
		name      string
		got, want uint64
	}{
		{"io_cycles", sum.IOCycles, 11}, {"io_events", sum.IOEvents, 22}, {"drains", sum.Drains, 33},
		{"tasks_run", sum.TasksRun, 44}, {"steals_in", sum.StealsIn, 55}, {"steals_out", sum.StealsOut, 66},
		{"spun_ns", sum.SpunNs, 77}, {"blocked_ns", sum.BlockedNs, 88}, {"panics", sum.Panics, 99},
		{"accept_backoffs", sum.AcceptBackoffs, 110}, {"coros_trimmed", sum.CorosTrimmed, 132}, {"queue_depth count", sum.QueueDepth.Count(), 11},
		{"queue_depth sum", sum.QueueDepth.Sum, 88}, {"submit_to_run count", sum.SubmitToRun.Count(), 22},
		{"waits block", sum.Waits["block"], 11}, {"waits spin", sum.Waits["spin"], 3},
		{"open_conns", uint64(sum.OpenConns), 11}, {"tasks_live", uint64(sum.TasksLive), 22},
		{"context_watches", sum.Watches, 143}, {"watches_armed", sum.WatchesArmed, 154},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("Add: %s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	back := sum.Sub(b)
	back.OpenConns, back.TasksLive = a.OpenConns, a.TasksLive // gauges keep the later value
	delete(back.Waits, "spin")
	if !reflect.DeepEqual(back, a) {
		t.Errorf("Add then Sub:\n got %+v\nwant %+v", back, a)
	}
}
