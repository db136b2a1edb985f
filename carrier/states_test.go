package carrier

import (
	"fmt"
	"os"
	"regexp"
	"slices"
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

// docs/carrier.md draws both machines as tables (state, meaning, moves
// to): each must list every state once, in the enum's order, with exactly
// the moves of its row in states.go.
func TestStateTablesDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/carrier.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, tc := range []struct {
		heading string
		m       *machine
	}{
		{"**The fd lifecycle**", &descMachine},
		{"**The task lifecycle**", &taskMachine},
	} {
		rows, err := docTable(doc, tc.heading)
		if err != nil {
			t.Errorf("%s machine: %v", tc.m.what, err)
			continue
		}
		if len(rows) != len(tc.m.names) {
			t.Errorf("%s machine: docs/carrier.md has %d rows, states.go %d states", tc.m.what, len(rows), len(tc.m.names))
			continue
		}
		for s, row := range rows {
			if row.state != tc.m.names[s] {
				t.Errorf("%s machine: docs row %d is %q, state %d is %q", tc.m.what, s, row.state, s, tc.m.names[s])
				continue
			}
			var moves uint16
			for _, to := range row.moves {
				i := slices.Index(tc.m.names, to)
				if i < 0 {
					t.Errorf("%s machine: docs row %s moves to %q, not a state", tc.m.what, row.state, to)
					continue
				}
				moves |= 1 << i
			}
			if moves != tc.m.moves[s] {
				t.Errorf("%s machine: docs row %s moves to %v, states.go to %v", tc.m.what, row.state, row.moves, tc.m.movesOf(uint8(s)))
			}
		}
	}
}

// movesOf lists the names of the states s may move to.
func (m *machine) movesOf(s uint8) []string {
	var names []string
	for i := range m.names {
		if m.moves[s]&(1<<i) != 0 {
			names = append(names, m.names[i])
		}
	}
	return names
}

type docRow struct {
	state string
	moves []string
}

// docTable reads the markdown table that follows heading in doc: each
// row's first cell, and the states named in its last (the words outside
// parentheses, separated by commas and "or").
func docTable(doc, heading string) ([]docRow, error) {
	i := strings.Index(doc, heading)
	if i < 0 {
		return nil, fmt.Errorf("no %s in docs/carrier.md", heading)
	}
	lines := strings.Split(doc[i:], "\n")
	var rows []docRow
	inTable := false
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(l, "|"), "|")
		first := strings.TrimSpace(cells[0])
		if first == "state" || strings.HasPrefix(first, "---") {
			continue
		}
		last := parenthesized.ReplaceAllString(cells[len(cells)-1], "")
		var moves []string
		for _, part := range strings.FieldsFunc(strings.ReplaceAll(last, " or ", ","), func(r rune) bool { return r == ',' }) {
			if p := strings.TrimSpace(part); p != "" {
				moves = append(moves, p)
			}
		}
		rows = append(rows, docRow{first, moves})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no table after %s in docs/carrier.md", heading)
	}
	return rows, nil
}

var parenthesized = regexp.MustCompile(`\([^)]*\)`)
