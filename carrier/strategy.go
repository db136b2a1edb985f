package carrier

import (
	"fmt"

	"spindle/carrier/wait"
)

// newStrategy returns a fresh idle strategy for one carrier (strategies
// keep per-thread state, so carriers never share one).
func newStrategy(name string) (wait.Strategy, error) {
	s, err := wait.New(name, wait.Options{})
	if err != nil {
		return nil, fmt.Errorf("wait strategy %s: %w", name, err)
	}
	return s, nil
}
