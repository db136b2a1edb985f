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

// Every state of both machines has a name and a row in its table, and no
// row names a state that has neither.
func TestStateTablesComplete(t *testing.T) {
	for _, m := range []*machine{&descMachine, &taskMachine} {
		if len(m.moves) != len(m.names) {
			t.Errorf("%s machine: %d rows, %d names", m.what, len(m.moves), len(m.names))
		}
		for from, row := range m.moves {
			if row>>len(m.names) != 0 {
				t.Errorf("%s machine: state %s moves to a state beyond its %d", m.what, m.name(uint8(from)), len(m.names))
			}
		}
	}
	if len(descMachine.names) <= int(descShut) || len(taskMachine.names) <= int(taskRejoining) {
		t.Error("a named constant has no name")
	}
}
