package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/rtmetrics"
	"github.com/spindle-lab/spindle/report"
)

// adminGet reads path of the server's admin endpoint; an answer other than
// 200 is an error with its status and the start of its body.
func (r *runner) adminGet(ctx context.Context, path string) ([]byte, error) {
	what := path
	if i := strings.IndexByte(what, '?'); i >= 0 {
		what = what[:i]
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hostURL(r.adminAddr, r.cfg.AdminPort, path), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512)) // a reason, not a page
		return nil, fmt.Errorf("read %s: %s: %s", what, resp.Status, strings.TrimSpace(string(msg)))
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return data, nil
}

// adminTimeout bounds a snapshot's read from the admin endpoint: the
// answer is ready at once, so 2 s is a server too busy to answer.
const adminTimeout = 2 * time.Second

// adminJSON reads path of the admin endpoint as JSON into v.
func (r *runner) adminJSON(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	data, err := r.adminGet(ctx, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// carrierSnapshot reads the server's /debug/carrier.
func (r *runner) carrierSnapshot(ctx context.Context) ([]carrier.Telemetry, error) {
	if r.cfg.Mode == ModeNetHTTP {
		return nil, fmt.Errorf("no carriers in %s mode", ModeNetHTTP)
	}
	var ts []carrier.Telemetry
	if err := r.adminJSON(ctx, "/debug/carrier", &ts); err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("no carriers in %s mode", r.cfg.Mode)
	}
	return ts, nil
}

// carrierFile is carrier.json.
type carrierFile struct {
	// Window is the observers' window, ns.
	Window time.Duration `json:"window_ns"`
	// Summary is in the study's terms; Carriers are the per-carrier
	// differences of /debug/carrier over the window.
	Summary  report.CarrierFigures `json:"summary"`
	Carriers []carrier.Telemetry   `json:"carriers"`
}

// writeCarrier writes carrier.json from two snapshots.
func (r *runner) writeCarrier(before, after []carrier.Telemetry, err error, window time.Duration) {
	if err == nil && len(before) != len(after) {
		err = fmt.Errorf("carrier count changed from %d to %d", len(before), len(after))
	}
	if err != nil {
		r.na["carrier"] = err.Error()
		return
	}
	diff := make([]carrier.Telemetry, len(after))
	for i := range after {
		diff[i] = after[i].Sub(before[i])
	}
	f := carrierFile{Window: window, Summary: report.CarrierFiguresOf(diff, window), Carriers: diff}
	if err := report.WriteJSON(r.path(CarrierJSON), f); err != nil {
		r.na["carrier"] = err.Error()
		return
	}
	r.sum.Carrier = &f.Summary
}

// runtimeFile is runtime.json (report.RuntimeFile).
type runtimeFile struct {
	// Window is the time between the two snapshots, ns.
	Window time.Duration `json:"window_ns"`
	// Summary is the figures the report shows; Diff the difference of
	// /debug/runtime over the window, the histograms' buckets kept.
	Summary report.RuntimeFigures `json:"summary"`
	Diff    rtmetrics.Snapshot    `json:"diff"`
}

// observeRuntime reads the server's /debug/runtime at the start and the
// end of the observers' window and writes runtime.json and the summary's
// runtime figures; a failure (a server without the endpoint, one that
// restarted) is the reason in NA["runtime"]. runtime.json's window is the
// time from the first answer to the second, window and a request.
func (r *runner) observeRuntime(ctx context.Context, window time.Duration, na func(string, error)) error {
	var before, after rtmetrics.Snapshot
	if err := r.adminJSON(ctx, "/debug/runtime", &before); err != nil {
		na("runtime", err)
		return ctx.Err()
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(window):
	}
	if err := r.adminJSON(ctx, "/debug/runtime", &after); err != nil {
		na("runtime", err)
		return ctx.Err()
	}
	diff, err := after.Sub(before)
	if err != nil {
		na("runtime", err)
		return nil
	}
	f := runtimeFile{Window: time.Since(start), Diff: diff}
	f.Summary = report.RuntimeFiguresOf(diff, f.Window)
	if err := report.WriteJSON(r.path(report.RuntimeFile), f); err != nil {
		na("runtime", err)
		return nil
	}
	r.sum.Runtime = &f.Summary
	return nil
}
