package server

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Mode is a scheduling design of the server, named by its flag value. Each
// mode lives in one file that registers it (registerMode) from its init
// function; ParseMode, Modes, ModeHelp and the bench's mode list are derived
// from the registry.
type Mode string

// String returns the flag value of m.
func (m Mode) String() string { return string(m) }

// modeSpec is one registered mode.
type modeSpec struct {
	mode Mode
	// order places the mode in lists (help, errors): lower first.
	order int
	// start starts the mode's listeners on s, whose options are checked.
	start func(s *Server) error
}

// registered holds the modes, sorted by order then name.
var registered []modeSpec

// registerMode adds a mode; it is called from init functions only.
// Registering a name twice, or an empty one, keeps the first and records
// the name in badModes, which TestModes reports.
func registerMode(m Mode, order int, start func(*Server) error) {
	if _, dup := lookupMode(m); dup || m == "" || start == nil {
		badModes = append(badModes, m)
		return
	}
	registered = append(registered, modeSpec{mode: m, order: order, start: start})
	slices.SortStableFunc(registered, func(a, b modeSpec) int {
		return cmp.Or(cmp.Compare(a.order, b.order), strings.Compare(string(a.mode), string(b.mode)))
	})
}

// badModes are the modes registerMode refused.
var badModes []Mode

// lookupMode returns the registered mode m.
func lookupMode(m Mode) (modeSpec, bool) {
	i := slices.IndexFunc(registered, func(s modeSpec) bool { return s.mode == m })
	if i < 0 {
		return modeSpec{}, false
	}
	return registered[i], true
}

// Modes lists every mode, in help order.
func Modes() []Mode {
	out := make([]Mode, len(registered))
	for i, s := range registered {
		out[i] = s.mode
	}
	return out
}

// modeNames lists the modes' flag values, in help order.
func modeNames() []string {
	out := make([]string, len(registered))
	for i, s := range registered {
		out[i] = string(s.mode)
	}
	return out
}

// ModeHelp lists the modes for a flag's help text: "a, b or c".
func ModeHelp() string {
	n := modeNames()
	if len(n) < 2 {
		return strings.Join(n, "")
	}
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

// ParseMode parses a mode flag value (one of Modes).
func ParseMode(s string) (Mode, error) {
	if _, ok := lookupMode(Mode(s)); ok {
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown mode %q (want %s)", s, strings.Join(modeNames(), ", "))
}
