package carrier

import (
	"fmt"

	"github.com/spindle-lab/spindle/carrier/wait"
)

// newStrategy returns a fresh idle strategy for one carrier (strategies
// keep per-thread state, so carriers never share one), tuned by o.
func newStrategy(name string, o wait.Options) (wait.Strategy, error) {
	s, err := wait.New(name, o)
	if err != nil {
		return nil, fmt.Errorf("wait strategy %s: %w", name, err)
	}
	return s, nil
}
