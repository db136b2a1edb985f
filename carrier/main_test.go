package carrier

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain runs the package's whole test suite once per poller: a table
// over Pollers, where Options.Poller "" means the poller of the current
// pass, and once more on DefaultPoller with every carrier parking when
// idle (Options.ParkIdle; parkAll). A poller this machine cannot run is
// skipped with its reason. SPINDLE_TEST_POLLER=name restricts the run to
// one poller; SPINDLE_TEST_PARK=1 runs every poller's pass parking and no
// other, SPINDLE_TEST_PARK=0 none parking.
//
// go test names a failed test without its pass, so a failure names its
// pass three ways: each pass begins with a line "carrier tests: poller
// NAME" and a failed one ends with "carrier tests: poller NAME FAILED"; a
// failed test that started a group logs "this test ran with poller NAME"
// (notePoller); and the last line lists the passes that failed.
//
// The state machines' transition checks (states.go) are on throughout: a
// pass in which a transition broke its table fails, with the transition
// and where it happened.
func TestMain(m *testing.M) {
	checkTransitions = true
	type pass struct {
		poller string
		park   bool
	}
	var passes []pass
	for _, name := range Pollers {
		passes = append(passes, pass{name, false})
	}
	passes = append(passes, pass{DefaultPoller, true})
	switch os.Getenv("SPINDLE_TEST_PARK") {
	case "1":
		for i := range passes[:len(Pollers)] {
			passes[i].park = true
		}
		passes = passes[:len(Pollers)]
	case "0":
		passes = passes[:len(Pollers)]
	}
	var failed []string
	ran := 0
	for _, ps := range passes {
		if only := os.Getenv("SPINDLE_TEST_POLLER"); only != "" && only != ps.poller {
			continue
		}
		name := ps.poller
		if ps.park {
			name += " (parking)"
		}
		if err := CheckPoller(ps.poller); err != nil {
			fmt.Printf("carrier tests: poller %s skipped: %v\n", name, err)
			continue
		}
		fmt.Printf("carrier tests: poller %s\n", name)
		defaultPoller, parkAll = ps.poller, ps.park
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
	defaultPoller, parkAll = DefaultPoller, false
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
