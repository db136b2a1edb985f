package carrier

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain runs the package's whole test suite once per poller: a table
// over Pollers, where Options.Poller "" means the poller of the current
// pass. A poller this machine cannot run is skipped with its reason.
// SPINDLE_TEST_POLLER=name restricts the run to one poller.
//
// go test names a failed test without its pass, so a failure names its
// poller three ways: each pass begins with a line "carrier tests: poller
// NAME" and a failed one ends with "carrier tests: poller NAME FAILED"; a
// failed test that started a group logs "this test ran with poller NAME"
// (notePoller); and the last line lists the pollers whose passes failed.
//
// The state machines' transition checks (states.go) are on throughout: a
// pass in which a transition broke its table fails, with the transition
// and where it happened.
func TestMain(m *testing.M) {
	checkTransitions = true
	var failed []string
	ran := 0
	for _, name := range Pollers {
		if only := os.Getenv("SPINDLE_TEST_POLLER"); only != "" && only != name {
			continue
		}
		if err := CheckPoller(name); err != nil {
			fmt.Printf("carrier tests: poller %s skipped: %v\n", name, err)
			continue
		}
		fmt.Printf("carrier tests: poller %s\n", name)
		defaultPoller = name
		ran++
		bad := m.Run() != 0
		if tr := badTransition.Swap(nil); tr != nil {
			bad = true
			fmt.Printf("carrier tests: poller %s: %s\n", name, *tr)
		}
		if bad {
			failed = append(failed, name)
			fmt.Printf("carrier tests: poller %s FAILED\n", name)
		}
	}
	defaultPoller = DefaultPoller
	switch {
	case ran == 0:
		fmt.Println("carrier tests: no poller ran")
		os.Exit(1)
	case len(failed) > 0:
		fmt.Printf("carrier tests: FAILED with poller %s\n", strings.Join(failed, ", "))
		os.Exit(1)
	}
	os.Exit(0)
}
