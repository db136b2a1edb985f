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

// carrierSnapshot reads the server's /debug/carrier.
func (r *runner) carrierSnapshot(ctx context.Context) ([]carrier.Telemetry, error) {
	if r.cfg.Mode == ModeNetHTTP {
		return nil, fmt.Errorf("no carriers in %s mode", ModeNetHTTP)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	data, err := r.adminGet(ctx, "/debug/carrier")
	if err != nil {
		return nil, err
	}
	var ts []carrier.Telemetry
	if err := json.Unmarshal(data, &ts); err != nil {
		return nil, fmt.Errorf("read /debug/carrier: %w", err)
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
