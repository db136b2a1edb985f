package carrier

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the package's whole test suite once per poller: a table
// over Pollers, where Options.Poller "" means the poller of the current
// pass. A poller this machine cannot run is skipped with its reason.
// SPINDLE_TEST_POLLER=name restricts the run to one poller.
//
// The state machines' transition checks (states.go) are on throughout: a
// pass in which a transition broke its table fails, with the transition
// and where it happened.
func TestMain(m *testing.M) {
	checkTransitions = true
	code := 0
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
		if c := m.Run(); c != 0 {
			code = c
			fmt.Printf("carrier tests: poller %s FAILED\n", name)
		}
		if bad := badTransition.Swap(nil); bad != nil {
			code = 1
			fmt.Printf("carrier tests: poller %s: %s\n", name, *bad)
		}
	}
	defaultPoller = DefaultPoller
	if ran == 0 {
		fmt.Println("carrier tests: no poller ran")
		code = 1
	}
	os.Exit(code)
}
