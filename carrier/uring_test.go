package carrier

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/internal/leakcheck"
	"github.com/spindle-lab/spindle/internal/unix"
)

// fakeKernel answers a uringPoller's io_uring_enter calls on a MemRing the
// way the kernel does, for the requests the poller makes: it keeps the
// polls and the timeout armed, cancels them, and posts completions.
type fakeKernel struct {
	polls    map[uint64]int // armed multishot polls: user data -> fd
	timer    bool
	already  map[uint64]bool // cancel these once with -EALREADY
	enters   int
	mins     []uint32 // min_complete of each enter
	sqes     []unix.SQE
	overflow []unix.CQE       // completions that did not fit, posted at the next enter (NODROP)
	sendFail map[uint64]int32 // inline SENDs that fail, with their result; the others send everything
}

func (k *fakeKernel) post(r *unix.Ring, c unix.CQE) {
	if len(k.overflow) > 0 || !r.KernelPostCQE(c) {
		k.overflow = append(k.overflow, c)
	}
}

func (k *fakeKernel) enter(r *unix.Ring, toSubmit, minComplete, _ uint32) (int, error) {
	k.enters++
	k.mins = append(k.mins, minComplete)
	for len(k.overflow) > 0 && r.KernelPostCQE(k.overflow[0]) {
		k.overflow = k.overflow[1:]
	}
	defer func() { // the kernel flags completions left in its overflow list
		f := r.SQFlags() &^ unix.IORING_SQ_CQ_OVERFLOW
		if len(k.overflow) > 0 {
			f |= unix.IORING_SQ_CQ_OVERFLOW
		}
		r.KernelSetSQFlags(f)
	}()
	sqes := r.KernelTakeSQEs(toSubmit)
	k.sqes = append(k.sqes, sqes...)
	for _, s := range sqes {
		fail := func(res int32) { k.post(r, unix.CQE{UserData: s.UserData, Res: res}) }
		switch s.Opcode {
		case unix.IORING_OP_POLL_ADD:
			k.polls[s.UserData] = int(s.Fd)
		case unix.IORING_OP_ASYNC_CANCEL:
			switch _, armed := k.polls[s.Addr]; {
			case k.already[s.Addr]:
				delete(k.already, s.Addr)
				fail(-int32(unix.EALREADY))
			case armed:
				delete(k.polls, s.Addr)
				k.post(r, unix.CQE{UserData: s.Addr, Res: -int32(unix.ECANCELED)})
			case s.Addr == udTimer && k.timer:
				k.timer = false
				k.post(r, unix.CQE{UserData: udTimer, Res: -int32(unix.ECANCELED)})
			default:
				fail(-int32(unix.ENOENT))
			}
		case unix.IORING_OP_SEND:
			if res, ok := k.sendFail[s.UserData]; ok && s.Flags&unix.IOSQE_CQE_SKIP_SUCCESS != 0 {
				fail(res)
			}
		case unix.IORING_OP_TIMEOUT:
			k.timer = true
		case unix.IORING_OP_TIMEOUT_REMOVE:
			if !k.timer {
				fail(-int32(unix.ENOENT))
			}
		}
		pending := s.Opcode == unix.IORING_OP_POLL_ADD || s.Opcode == unix.IORING_OP_TIMEOUT ||
			s.Opcode == unix.IORING_OP_RECV || s.Opcode == unix.IORING_OP_SEND // complete when the test says
		if s.Flags&unix.IOSQE_CQE_SKIP_SUCCESS == 0 && !pending {
			t := s.UserData
			k.post(r, unix.CQE{UserData: t})
		}
	}
	return len(sqes), nil
}

// fakePoller returns a started poller on a MemRing of sqEntries driven by
// a fakeKernel, with its eventfd poll (fd 100) submitted.
func fakePoller(t *testing.T, sqEntries, cqEntries uint32) (*uringPoller, *fakeKernel, *unix.Ring) {
	t.Helper()
	k := &fakeKernel{polls: map[uint64]int{}, already: map[uint64]bool{}}
	r := unix.NewMemRing(sqEntries, cqEntries, 1<<32-2, k.enter) // counters wrap during the test
	p, err := uringPollerOn(r, 100, &stats{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	p.wait(0)
	if k.polls[0] != 100 {
		t.Fatalf("eventfd poll not submitted: %v", k.polls)
	}
	return p, k, r
}

// events returns the events of the last wait.
func events(p *uringPoller, n int) []pollEvent {
	out := make([]pollEvent, n)
	for i := range n {
		out[i].tok, out[i].ev, out[i].op = p.event(i)
	}
	return out
}

func TestURingPollerEvents(t *testing.T) {
	p, k, r := fakePoller(t, 8, 16)
	const tok = 7 | 3<<32
	if err := p.add(5, tok); err != nil {
		t.Fatal(err)
	}
	if k.polls[tok] == 5 {
		t.Fatal("the poll was submitted before the next wait (submissions are batched)")
	}
	enters := k.enters
	if n := p.wait(0); n != 0 || k.enters != enters+1 || k.polls[tok] != 5 {
		t.Fatalf("wait with a queued poll: %d events, %d enters, polls %v", n, k.enters-enters, k.polls)
	}
	if sq := k.sqes[len(k.sqes)-1]; sq.Len != unix.IORING_POLL_ADD_MULTI || sq.OpFlags != pollMask || sq.Fd != 5 {
		t.Fatalf("poll SQE %+v: want multishot on fd 5 for %#x", sq, pollMask)
	}
	r.KernelPostCQE(unix.CQE{UserData: tok, Res: unix.POLLIN | unix.POLLOUT, Flags: unix.IORING_CQE_F_MORE})
	enters = k.enters
	n := p.wait(0)
	if want := []pollEvent{{tok: tok, ev: unix.EPOLLIN | unix.EPOLLOUT}}; !slices.Equal(events(p, n), want) {
		t.Fatalf("events %v, want %v", events(p, n), want)
	}
	if k.enters != enters {
		t.Fatal("a poll with nothing to submit and no pending task work entered the kernel")
	}
	r.KernelSetSQFlags(unix.IORING_SQ_TASKRUN)
	p.wait(0)
	if k.enters != enters+1 || k.mins[len(k.mins)-1] != 0 {
		t.Fatalf("IORING_SQ_TASKRUN: %d enters (min_complete %v), want one non-blocking", k.enters-enters, k.mins)
	}
	r.KernelSetSQFlags(0)
	if p.inflight != 2 {
		t.Fatalf("inflight %d, want 2 (the eventfd's poll and fd 5's)", p.inflight)
	}
}

// A multishot poll that ends by itself (the kernel ends one whose
// completion overflowed the CQ) is reported and armed again.
func TestURingPollerRearmsAfterOverflow(t *testing.T) {
	p, k, r := fakePoller(t, 8, 2)
	const tok = 9 | 1<<32
	p.add(6, tok)
	p.wait(0)
	// Fill the CQ; the poll's last completion overflows and arrives later.
	k.post(r, unix.CQE{UserData: tok, Res: unix.POLLIN, Flags: unix.IORING_CQE_F_MORE})
	k.post(r, unix.CQE{UserData: tok, Res: unix.POLLIN, Flags: unix.IORING_CQE_F_MORE})
	delete(k.polls, tok)
	k.post(r, unix.CQE{UserData: tok, Res: unix.POLLIN}) // no F_MORE: the poll ended
	r.KernelSetSQFlags(unix.IORING_SQ_CQ_OVERFLOW)
	n := p.wait(0)
	r.KernelSetSQFlags(0)
	n += p.wait(0) // the overflowed completion, then the new poll's submission
	if p.rearms != 1 {
		t.Fatalf("rearms %d, want 1", p.rearms)
	}
	p.wait(0)
	if k.polls[tok] != 6 {
		t.Fatalf("poll not armed again: %v", k.polls)
	}
	if p.inflight != 2 || n == 0 {
		t.Fatalf("inflight %d (want 2), %d events", p.inflight, n)
	}
}

// More registrations than SQ entries in one pass: the full queue is handed
// to the kernel and reused, and no registration is lost.
func TestURingPollerFullSQ(t *testing.T) {
	p, k, _ := fakePoller(t, 4, 64)
	for i := range 10 {
		if err := p.add(10+i, uint64(i+1)|1<<32); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	p.wait(0)
	if len(k.polls) != 11 {
		t.Fatalf("%d polls armed, want 11 (10 fds and the eventfd)", len(k.polls))
	}
}

// Closing a conn cancels its poll; a cancellation that finds the poll
// busy (-EALREADY) is made again; the last completion ends the count.
func TestURingPollerCancel(t *testing.T) {
	p, k, _ := fakePoller(t, 8, 16)
	const a, b = 1 | 1<<32, 2 | 2<<32
	p.add(5, a)
	p.add(6, b)
	p.wait(0)
	k.already[b] = true
	p.remove(5, a, true)
	p.remove(6, b, true)
	p.wait(0) // submits both cancellations; b's fails with -EALREADY
	last := k.sqes[len(k.sqes)-1]
	if last.Opcode != unix.IORING_OP_ASYNC_CANCEL || last.Flags&unix.IOSQE_CQE_SKIP_SUCCESS == 0 {
		t.Fatalf("cancel SQE %+v", last)
	}
	if _, ok := k.polls[b]; !ok || !p.recancel {
		t.Fatalf("poll b: armed %v, recancel %v: want armed and a retry due", ok, p.recancel)
	}
	p.wait(0) // cancels b again
	p.wait(0)
	if len(k.polls) != 1 || len(p.removing) != 0 || p.inflight != 1 {
		t.Fatalf("after the retry: kernel polls %v, removing %v, inflight %d", k.polls, p.removing, p.inflight)
	}
}

// An fd whose poll was removed while it stays open (a conn taken off the
// poller for foreign callers) is polled again under a new token: the old
// one is refused while its cancellation is in flight, and that late
// completion ends the old poll's count only, arming nothing.
func TestURingPollerRepoll(t *testing.T) {
	p, k, _ := fakePoller(t, 8, 16)
	const old, renewed = 3 | 1<<32, 3 | 2<<32
	p.add(5, old)
	p.wait(0)
	p.remove(5, old, false)
	if err := p.add(5, old); err == nil {
		t.Fatal("add accepted a token whose removal is in flight")
	}
	if err := p.add(5, renewed); err != nil {
		t.Fatal(err)
	}
	p.wait(0) // submits the cancellation, then the new poll; reaps the old poll's -ECANCELED
	if _, ok := k.polls[old]; ok || k.polls[renewed] != 5 || len(k.polls) != 2 {
		t.Fatalf("kernel polls %v, want the eventfd's and %#x's", k.polls, uint64(renewed))
	}
	if len(p.removing) != 0 || len(p.armed) != 2 || p.armed[renewed] != 5 || p.inflight != 2 || p.rearms != 0 {
		t.Fatalf("after the late cancellation: removing %v, armed %v, inflight %d, rearms %d; want the eventfd's poll and the new one",
			p.removing, p.armed, p.inflight, p.rearms)
	}
}

// A wait with a deadline arms one timeout, moves it when the deadline
// comes earlier or the armed one is due soon, keeps it when it is the
// same or earlier (then it may fire early, once), sleeps with
// min_complete 1, and sees it fire.
func TestURingPollerTimer(t *testing.T) {
	p, k, r := fakePoller(t, 8, 16)
	p.wait(int64(5e6))
	if !k.timer || !p.timerOn || k.mins[len(k.mins)-1] != 1 {
		t.Fatalf("timer armed: kernel %v, poller %v, min_complete %v", k.timer, p.timerOn, k.mins)
	}
	steps := []struct {
		name      string
		timeoutNs int64
		moved     bool
	}{
		{"the same deadline", 5e6, false},
		{"a later deadline, the armed timeout still far", 60e9, false},
		{"a later deadline by a little", 5e6 + 2*timerSlack, false},
		{"an earlier deadline", 1e6, true},
		{"the armed timeout due within timerKeepAhead, a later deadline", timerKeepAhead / 2, true},
		{"a later deadline, the armed timeout due within timerKeepAhead", 10e9, true},
	}
	for _, st := range steps {
		n := len(k.sqes)
		p.wait(st.timeoutNs)
		moved := len(k.sqes) > n
		if moved != st.moved {
			t.Fatalf("%s: SQEs %+v, want moved %v", st.name, k.sqes[n:], st.moved)
		}
		if moved && (len(k.sqes) != n+1 || k.sqes[n].Opcode != unix.IORING_OP_TIMEOUT_REMOVE || k.sqes[n].OpFlags != unix.IORING_TIMEOUT_UPDATE) {
			t.Fatalf("%s: SQEs %+v, want one TIMEOUT_UPDATE", st.name, k.sqes[n:])
		}
		if p.timerAt > wait.Now()+st.timeoutNs {
			t.Fatalf("%s: the armed timeout fires after the deadline", st.name)
		}
	}
	k.timer = false
	r.KernelPostCQE(unix.CQE{UserData: udTimer, Res: -int32(unix.ETIME)})
	if p.wait(0); p.timerOn || p.inflight != 1 {
		t.Fatalf("after the timeout fired: timerOn %v, inflight %d", p.timerOn, p.inflight)
	}
	n := len(k.sqes)
	if p.wait(60e9); len(k.sqes) != n+1 || k.sqes[n].Opcode != unix.IORING_OP_TIMEOUT || !p.timerOn {
		t.Fatalf("after an early fire: SQEs %+v, want a new TIMEOUT", k.sqes[n:])
	}
}

// quiesce cancels every poll and the timeout and reaps every completion.
func TestURingPollerQuiesce(t *testing.T) {
	p, k, _ := fakePoller(t, 4, 8)
	for i := range 6 {
		p.add(10+i, uint64(i+1)|1<<32)
	}
	p.wait(int64(wait.Now() + 1e9))
	p.quiesce()
	if p.inflight != 0 || len(k.polls) != 0 || k.timer || len(p.armed) != 0 {
		t.Fatalf("after quiesce: inflight %d, kernel polls %v, timer %v, armed %v", p.inflight, k.polls, k.timer, p.armed)
	}
}

// CheckPoller explains why io_uring cannot run, and New refuses it then.
func TestCheckPoller(t *testing.T) {
	if err := CheckPoller("kqueue"); err == nil || !strings.Contains(err.Error(), "unknown poller") {
		t.Errorf("CheckPoller(kqueue) = %v", err)
	}
	if _, err := New(Options{Carriers: 1, Poller: "kqueue"}); err == nil {
		t.Error("New accepted poller kqueue")
	}
	err := CheckPoller(PollerURing)
	if err != nil && !errors.Is(err, wait.ErrNotSupported) {
		t.Errorf("CheckPoller(io_uring) = %v, want nil or ErrNotSupported", err)
	}
	b, _ := os.ReadFile(ioUringDisabled)
	if strings.TrimSpace(string(b)) == "2" && err == nil {
		t.Error("io_uring_disabled = 2, yet CheckPoller(io_uring) = nil")
	}
}

// setupReason names the cause of each refusal.
func TestSetupReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{os.NewSyscallError("io_uring_setup", unix.ENOSYS), "has no io_uring"},
		{os.NewSyscallError("io_uring_setup", unix.EINVAL), "too old"},
		{os.NewSyscallError("io_uring_setup", unix.EPERM), "io_uring_disabled"},
	}
	for _, tc := range tests {
		err := setupReason(tc.err)
		if !errors.Is(err, wait.ErrNotSupported) {
			t.Errorf("setupReason(%v) = %v: not ErrNotSupported", tc.err, err)
		}
		if tc.want == "io_uring_disabled" { // depends on the sysctl: either reason is right
			if !strings.Contains(err.Error(), "io_uring_disabled") && !strings.Contains(err.Error(), "seccomp") {
				t.Errorf("setupReason(EPERM) = %v", err)
			}
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("setupReason(%v) = %v, want it to say %q", tc.err, err, tc.want)
		}
	}
}

// A group on io_uring leaves no ring mapping, fd or goroutine behind, and
// every request's completion was reaped before the rings were unmapped.
func TestURingCloseReapsEverything(t *testing.T) {
	if err := CheckPoller(PollerURing); err != nil {
		t.Skipf("io_uring: %v", err)
	}
	m0 := leakcheck.Mappings(t, leakcheck.RingMapping)
	checkLeaks(t)
	g, err := New(Options{Carriers: 2, Poller: PollerURing})
	if err != nil {
		t.Fatal(err)
	}
	if m := leakcheck.Mappings(t, leakcheck.RingMapping); m <= m0 {
		t.Fatalf("io_uring mappings %d -> %d with two rings open", m0, m)
	}
	l, err := g.Listen("127.0.0.1:0", echo, ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runEchoClients(t, l.Addr().String(), 8, 5)
	// Leave conns open and a task sleeping: Close must cancel their polls.
	done := make(chan struct{})
	g.Go(func(tk *Task) { close(done); tk.Sleep(time.Hour) })
	<-done
	g.Close()
	for i := range g.Len() {
		up := g.Carrier(i).poll.(*uringPoller)
		if up.inflight != 0 || len(up.armed) != 0 {
			t.Errorf("carrier %d closed with %d requests in flight, %d polls armed", i, up.inflight, len(up.armed))
		}
	}
}

// A conn closed while its task lives on is closed for the peer at once:
// the peer reads EOF. (The io_uring poller must cancel the conn's poll,
// which holds the file open; the epoll one needs nothing.) Slots freed
// this way are reused by the next conns, whose tokens differ.
func TestCloseReachesPeer(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	g := newGroup(t, Options{Carriers: 1})
	l, err := g.Listen("127.0.0.1:0", func(tk *Task, c *Conn) {
		buf := make([]byte, 16)
		c.Read(buf)
		c.Close()
		tk.Offload(func() { <-release }) // stay alive: the handler's return would close it too
	}, ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(release); l.Close() })
	for i := range 20 {
		nc, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := nc.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if n, err := nc.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("conn %d: peer read %d, %v after the carrier closed the conn, want EOF", i, n, err)
		}
		nc.Close()
	}
}

// A task parked in Read (with PollerURing, a RECV in flight) whose conn
// another task closes resumes with net.ErrClosed, and the peer sees the
// close: the read is cancelled with the conn.
func TestCloseWhileReading(t *testing.T) {
	checkLeaks(t)
	peerDone := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	inTaskWithConn(t, Options{Carriers: 1}, func(nc net.Conn) {
		nc.SetDeadline(time.Now().Add(2 * time.Second))
		_, err := nc.Read(make([]byte, 1)) // EOF once the carrier closes
		peerDone <- err
		<-stop
	}, func(tk *Task, c *Conn) {
		readErr := make(chan error, 1)
		tk.Go(func(*Task) {
			_, err := c.Read(make([]byte, 64))
			readErr <- err
		})
		tk.Yield() // the reader parks
		tk.Yield()
		c.Close()
		for len(readErr) == 0 {
			tk.Yield()
		}
		if err := <-readErr; !errors.Is(err, net.ErrClosed) {
			t.Errorf("read of a conn closed meanwhile: %v, want net.ErrClosed", err)
		}
	})
	if err := <-peerDone; err != io.EOF {
		t.Errorf("peer read %v, want EOF", err)
	}
}

// startIO queues RECV and SEND with the conn's token and a direction bit,
// cancelIO cancels one, and the completion is reported with its op.
func TestURingPollerIO(t *testing.T) {
	p, k, r := fakePoller(t, 8, 16)
	g := &Carrier{}
	pd := &pollDesc{fd: 7, c: g, slot: 2, gen: 5}
	rop, wop := &ioOp{pd: pd}, &ioOp{pd: pd, write: true}
	buf := make([]byte, 32)
	if !p.startIO(rop, buf) || !p.startIO(wop, buf[:10]) {
		t.Fatal("startIO refused with free SQEs")
	}
	p.wait(0)
	sq := k.sqes[len(k.sqes)-2:]
	if sq[0].Opcode != unix.IORING_OP_RECV || sq[0].UserData != pd.token()|udRead || sq[0].Len != 32 || sq[0].Fd != 7 {
		t.Errorf("RECV SQE %+v", sq[0])
	}
	if sq[1].Opcode != unix.IORING_OP_SEND || sq[1].UserData != pd.token()|udWrite || sq[1].Len != 10 {
		t.Errorf("SEND SQE %+v", sq[1])
	}
	if p.inflight != 3 || len(p.ops) != 2 {
		t.Fatalf("inflight %d, ops %d: want 3 and 2", p.inflight, len(p.ops))
	}
	r.KernelPostCQE(unix.CQE{UserData: pd.token() | udWrite, Res: 10})
	n := p.wait(0)
	if evs := events(p, n); len(evs) != 1 || evs[0].op != wop || !wop.done || wop.res != 10 {
		t.Fatalf("SEND completion: events %+v, op %+v", evs, *wop)
	}
	p.cancelIO(rop)
	p.wait(0)
	if last := k.sqes[len(k.sqes)-1]; last.Opcode != unix.IORING_OP_ASYNC_CANCEL || last.Addr != pd.token()|udRead {
		t.Fatalf("cancel SQE %+v", last)
	}
	r.KernelPostCQE(unix.CQE{UserData: pd.token() | udRead, Res: -int32(unix.ECANCELED)})
	p.wait(0)
	if !rop.done || rop.res != -int32(unix.ECANCELED) || len(p.ops) != 0 || p.inflight != 1 {
		t.Fatalf("after the cancellation: op %+v, ops %d, inflight %d", *rop, len(p.ops), p.inflight)
	}
}

// A write far larger than the socket buffers completes intact against a
// slow reader: short writes (with PollerURing, short SENDs) go on where
// they stopped, and a read of a large buffer returns what has arrived.
func TestLargeWriteIntact(t *testing.T) {
	checkLeaks(t)
	const size = 4 << 20
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i>>10)
	}
	got := make(chan []byte, 1)
	inTaskWithConn(t, Options{Carriers: 1}, func(nc net.Conn) {
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 0, size)
		chunk := make([]byte, 64<<10)
		for len(buf) < size {
			n, err := nc.Read(chunk)
			buf = append(buf, chunk[:n]...)
			if err != nil {
				break
			}
			if len(buf) < 1<<20 {
				time.Sleep(time.Millisecond) // slow at first: the writer's socket buffer fills
			}
		}
		nc.Write(buf[:1]) // tell the writer all arrived
		got <- buf
	}, func(tk *Task, c *Conn) {
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Write(want); n != size || err != nil {
			t.Errorf("write: %d, %v; want %d", n, err, size)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Errorf("reading the peer's acknowledgement: %v", err)
		}
	})
	if b := <-got; !bytes.Equal(b, want) {
		t.Errorf("peer got %d bytes, different from the %d written", len(b), size)
	}
}

// A RECV polls first (IORING_RECVSEND_POLL_FIRST) exactly when the kernel
// takes the flag and the conn's last read drained the socket.
func TestURingPollerRecvPollFirst(t *testing.T) {
	for _, tc := range []struct {
		name            string
		kernel, drained bool
		wantPollFirst   bool
	}{
		{"new conn", true, false, false},
		{"last read drained", true, true, true},
		{"last read filled the buffer", true, false, false},
		{"kernel without the flag", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, k, _ := fakePoller(t, 8, 16)
			p.pollFirst = tc.kernel
			pd := &pollDesc{fd: 7, c: &Carrier{}, slot: 2, gen: 5, unread: !tc.drained}
			if !p.startIO(&ioOp{pd: pd}, make([]byte, 32)) {
				t.Fatal("startIO refused with free SQEs")
			}
			p.wait(0)
			sq := k.sqes[len(k.sqes)-1]
			if sq.Opcode != unix.IORING_OP_RECV {
				t.Fatalf("last SQE %+v, want the RECV", sq)
			}
			if got := sq.Ioprio&unix.IORING_RECVSEND_POLL_FIRST != 0; got != tc.wantPollFirst {
				t.Fatalf("POLL_FIRST %v, want %v", got, tc.wantPollFirst)
			}
			if got := p.s.ringPollFirst.Load(); got != map[bool]uint64{true: 1}[tc.wantPollFirst] {
				t.Fatalf("ring_poll_first %d", got)
			}
		})
	}
}

// Reads after a short read (a drained socket) return the bytes whether
// they arrive after the RECV was submitted or were there before it; with
// PollerURing on a kernel that takes POLL_FIRST those RECVs poll first.
func TestReadAfterDrain(t *testing.T) {
	checkLeaks(t)
	next := make(chan string)
	inTaskWithConn(t, Options{Carriers: 1}, func(nc net.Conn) {
		for s := range next {
			if _, err := nc.Write([]byte(s)); err != nil {
				return
			}
		}
	}, func(tk *Task, c *Conn) {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 64)
		read := func(want string) {
			n, err := c.Read(buf)
			if err != nil || string(buf[:n]) != want {
				t.Errorf("read %q, %v: want %q", buf[:n], err, want)
			}
		}
		before := tk.home.stats.ringPollFirst.Load()
		next <- "a"
		read("a")                       // short: the socket is drained
		next <- "bcd"                   // before the RECV is submitted
		tk.Sleep(20 * time.Millisecond) // the bytes have arrived
		read("bcd")
		go func() { time.Sleep(20 * time.Millisecond); next <- "ef"; close(next) }() // after the RECV
		read("ef")
		pollFirst := false
		if p, ok := tk.home.poll.(*uringPoller); ok && p.rw {
			pollFirst = p.pollFirst
		}
		switch got := tk.home.stats.ringPollFirst.Load() - before; {
		case pollFirst && got != 2:
			t.Errorf("ring_poll_first %d after two reads of a drained socket, want 2", got)
		case !pollFirst && got != 0:
			t.Errorf("ring_poll_first %d without POLL_FIRST", got)
		}
	})
}
