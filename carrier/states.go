package carrier

import (
	"fmt"
	"runtime"
	"sync/atomic"
)

// The two lifecycles of the runtime, a registered fd's (pollDesc) and a
// task's, are state machines: a named state, set on every transition by
// one method that checks it against the machine's table while
// checkTransitions is on (the package's tests turn it on; in production it
// is one load of a false bool per transition). docs/carrier.md draws both.
//
// A state is a small integer; a table lists, for each state, the states it
// may move to, as a bit set.

// checkTransitions turns the transition checks on. TestMain sets it before
// any carrier runs; nothing else writes it.
var checkTransitions bool

// badTransition is the first transition a check refused, with its stack:
// TestMain fails the run when it is set. Checks record instead of panicking
// because a transition runs on a carrier's thread, where a panic would
// unwind the task or kill the process far from the test that caused it.
var badTransition atomic.Pointer[string]

// machine is a state machine: its name (as "conn"), its states' names,
// and its table: moves[s] has bit 1<<t set when state s may move to t.
type machine struct {
	what  string
	names []string
	moves []uint16
}

// to builds a table row from the states it allows.
func to[S ~uint8](states ...S) uint16 {
	var m uint16
	for _, s := range states {
		m |= 1 << s
	}
	return m
}

// name is state s's name.
func (m *machine) name(s uint8) string {
	if int(s) < len(m.names) {
		return m.names[s]
	}
	return fmt.Sprint(s) // not a state of m: its number
}

// check records a transition the table does not allow.
func (m *machine) check(f, t uint8) {
	if int(f) < len(m.moves) && m.moves[f]&(1<<t) != 0 {
		return
	}
	buf := make([]byte, 4<<10)
	buf = buf[:runtime.Stack(buf, false)]
	msg := fmt.Sprintf("carrier: %s state %s -> %s is not a transition of its machine\n%s", m.what, m.name(f), m.name(t), buf)
	badTransition.CompareAndSwap(nil, &msg)
}

// descState is where a registered fd is in its life.
type descState uint8

const (
	// descNew: created, not registered yet (a listener's socket until its
	// accept task registers it).
	descNew descState = iota
	// descOpen: registered: in its carrier's fd table, its engine chosen,
	// the poller reporting it (unless its engine has no readiness poll).
	descOpen
	// descMoving: taken off a floating carrier's books with the task that
	// holds it (unhome), in no carrier's table until the next carrier
	// rehomes the task.
	descMoving
	// descClosing: Close began; no new operation starts (they fail with
	// net.ErrClosed) while the ring engine sends what Write accepted.
	descClosing
	// descDraining: shut, but the kernel still holds a read or write of the
	// fd (kops > 0): its last completion closes the fd (opEnded), so that
	// no request meets a new file that reuses the number.
	descDraining
	// descShut: closed: out of the poller and the fd table, the fd closed.
	descShut
)

func (s descState) String() string { return descMachine.name(uint8(s)) }

// descMachine is the fd lifecycle.
var descMachine = machine{
	what:  "conn",
	names: []string{"new", "open", "moving", "closing", "draining", "shut"},
	moves: []uint16{
		descNew:      to(descOpen, descShut),                              // registered; a listener closed unregistered
		descOpen:     to(descMoving, descClosing, descDraining, descShut), // unhomed (Float); Close; shut
		descMoving:   to(descOpen, descShut),                              // rehomed; its registration failed
		descClosing:  to(descDraining, descShut),                          // shut after the flush
		descDraining: to(descShut),                                        // the kernel's last completion
		descShut:     0,
	},
}

// setState moves pd to s.
func (pd *pollDesc) setState(s descState) {
	if checkTransitions {
		descMachine.check(uint8(pd.state), uint8(s))
	}
	pd.state = s
}

// The sets of states the predicates below test, by bit: sets rather than
// ranges of the enum, so that a state added at its end joins the sets it
// belongs to and no other.
var (
	descClosedStates = to(descClosing, descDraining, descShut)
	descGoneStates   = to(descDraining, descShut)
)

// closed reports whether pd's conn is closed or closing: every new
// operation fails with net.ErrClosed.
func (pd *pollDesc) closed() bool { return descClosedStates&(1<<pd.state) != 0 }

// ended reports whether an operation on pd's conn fails with
// net.ErrClosed: it is closed or closing, or CloseAsync (or a foreign
// caller's Close) asked the carrier to close it, which the carrier does at
// its next turn.
func (pd *pollDesc) ended() bool { return pd.closed() || pd.closeReq.Load() }

// gone reports whether pd was shut: out of the poller and the fd table.
func (pd *pollDesc) gone() bool { return descGoneStates&(1<<pd.state) != 0 }

// taskState is where a task is in its life. Only its home carrier's
// owner reads or writes it, and a detached task that rejoins (taskRejoining,
// handoff.go), which writes it before it yields to the owner.
type taskState uint8

const (
	// taskIdle: not started (queued, or pooled).
	taskIdle taskState = iota
	// taskRunning: its coroutine is executing.
	taskRunning
	// taskParked: waiting for I/O or a timer: the poller or the timer heap
	// makes it runnable (wakeTask).
	taskParked
	// taskRunnable: woken or yielded, in the LIFO slot or the FIFO (or, in
	// floating mode, on its way to a sibling). A task resumed after Offload
	// waits in the local queue as taskOffloaded.
	taskRunnable
	// taskOffloaded: waiting for an offloaded function (Offload). Nothing
	// of the carrier wakes it: the function's goroutine queues it on the
	// carrier's local queue when it returns, and the carrier runs it from
	// there (it stays offloaded while it waits in that queue, since that
	// goroutine cannot write the state).
	taskOffloaded
	// taskRejoining: handed off, it yielded to rejoin its carrier
	// (Task.rejoin); the owner that runs it next re-admits it (rejoined).
	taskRejoining
)

func (s taskState) String() string { return taskMachine.name(uint8(s)) }

// taskMachine is the task lifecycle. A finished task goes back to idle
// when it is released to the pool (its state is reset, not moved).
var taskMachine = machine{
	what:  "task",
	names: []string{"idle", "running", "parked", "runnable", "offloaded", "rejoining"},
	moves: []uint16{
		taskIdle:      to(taskRunning),
		taskRunning:   to(taskParked, taskRunnable, taskOffloaded, taskRejoining),
		taskParked:    to(taskRunnable),
		taskRunnable:  to(taskRunning),
		taskOffloaded: to(taskRunning),
		taskRejoining: to(taskRunning, taskRunnable), // re-admitted; a run the monitor did not take (run)
	},
}

// setState moves t to s.
func (t *Task) setState(s taskState) {
	if checkTransitions {
		taskMachine.check(uint8(t.state), uint8(s))
	}
	t.state = s
}
