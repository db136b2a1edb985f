package bench

import (
	"fmt"

	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/report"
)

// readLoad reads load.json (load.Result, its accounting checked) into the
// summary.
func (r *runner) readLoad() error {
	lr, err := load.ReadResult(r.path(LoadJSON))
	if err != nil {
		return fmt.Errorf("read load results: %w", err)
	}
	report.FillFromLoad(&r.sum, lr)
	if lr.Completed == 0 {
		// Nothing was measured: a run, not a figure of 0 req/s.
		return fmt.Errorf("no request completed in the window (%d failed, %d in flight, %d not sent); see %s and %s",
			lr.Failed, lr.InFlight, lr.NotSent, LoadText, ServerLog)
	}
	return nil
}
