package carrier

import (
	"strings"
	"testing"
)

// The transition checks record a move their table does not allow, and
// only such a move.
func TestStateMachineChecks(t *testing.T) {
	tests := []struct {
		name string
		move func()
		bad  string // "": allowed
	}{
		{"conn registered", func() { (&pollDesc{}).setState(descOpen) }, ""},
		{"conn closing then shut", func() {
			pd := &pollDesc{state: descOpen}
			pd.setState(descClosing)
			pd.setState(descShut)
		}, ""},
		{"conn moving and adopted", func() {
			pd := &pollDesc{state: descOpen}
			pd.setState(descMoving)
			pd.setState(descOpen)
		}, ""},
		{"conn reopened after shut", func() { (&pollDesc{state: descShut}).setState(descOpen) }, "conn state shut -> open"},
		{"conn drained twice", func() { (&pollDesc{state: descNew}).setState(descDraining) }, "conn state new -> draining"},
		{"task parks and wakes", func() {
			tk := &Task{}
			tk.setState(taskRunning)
			tk.setState(taskParked)
			tk.setState(taskRunnable)
			tk.setState(taskRunning)
		}, ""},
		{"task offloaded, resumed", func() {
			tk := &Task{state: taskRunning}
			tk.setState(taskOffloaded)
			tk.setState(taskRunning)
		}, ""},
		{"offloaded task woken as parked", func() { (&Task{state: taskOffloaded}).setState(taskRunnable) }, "task state offloaded -> runnable"},
		{"parked task resumed without a wake-up", func() { (&Task{state: taskParked}).setState(taskRunning) }, "task state parked -> running"},
		{"unknown state", func() { (&Task{state: 42}).setState(taskRunning) }, "task state 42 -> running"},
	}
	saved := badTransition.Swap(nil)
	defer badTransition.Store(saved)
	for _, tc := range tests {
		badTransition.Store(nil)
		tc.move()
		got := badTransition.Load()
		switch {
		case tc.bad == "" && got != nil:
			t.Errorf("%s: refused: %s", tc.name, *got)
		case tc.bad != "" && got == nil:
			t.Errorf("%s: not refused", tc.name)
		case tc.bad != "" && !strings.Contains(*got, tc.bad):
			t.Errorf("%s: recorded %q, want it to name %q", tc.name, strings.SplitN(*got, "\n", 2)[0], tc.bad)
		}
	}
	badTransition.Store(nil)
}

// Every state of both machines has a name and a row in its table.
func TestStateTablesComplete(t *testing.T) {
	for _, m := range []struct {
		machine *machine
		last    uint8
	}{{&descMachine, uint8(descShut)}, {&taskMachine, uint8(taskRejoining)}} {
		if len(m.machine.moves) != len(m.machine.names) || int(m.last)+1 != len(m.machine.names) {
			t.Errorf("%s machine: %d rows, %d names, last state %d", m.machine.what, len(m.machine.moves), len(m.machine.names), m.last)
		}
	}
}
