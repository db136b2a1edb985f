package load

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spindle-lab/spindle/latency"
)

// WriteText prints wrk2's layout; a run in which no request completed has
// no latency to print, and says so instead of printing zeros.
func TestWriteText(t *testing.T) {
	empty, err := latency.Summarize(latency.New())
	if err != nil {
		t.Fatal(err)
	}
	h := latency.New()
	for _, us := range []int64{800, 1000, 1200} {
		h.RecordValue(us)
	}
	full, err := latency.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		r        Result
		want     []string
		wantNone []string
	}{
		{"no request completed",
			Result{Corrected: empty, Uncorrected: empty, InFlight: 100, Intended: 100, DurationS: 3},
			[]string{"Latency   " + latency.NoLatency, "  " + latency.NoLatency, "Unfinished: 100 in flight", "0 requests in 3.00s"},
			[]string{"0.00us", "50.000%"}},
		{"no measured window",
			Result{Corrected: empty, Uncorrected: empty, NotSent: 1, Intended: 1, DurationS: 1e-9},
			[]string{"    Req/Sec   n/a (no 100ms rate sample in the 1ns window)\n",
				"Requests/sec: n/a (no request completed in the 1ns window)\n",
				"Transfer/sec: n/a (no request completed in the 1ns window)\n"},
			[]string{"0.00 ", "0.00\n", "0.00B\n"}},
		{"three requests",
			Result{Corrected: full, Uncorrected: full, Completed: 3, Intended: 3, DurationS: 3},
			[]string{"    Latency     1.00ms", " 50.000%    1.00ms", "3 requests in 3.00s"},
			[]string{latency.NoLatency, "Unfinished", "Send lag", "Request mix"}},
		{"a send lag at a fixed rate",
			Result{Corrected: full, Uncorrected: full, Completed: 3, Intended: 3, DurationS: 3, SendLag: &full},
			[]string{"3 requests in 3.00s, 0.00B read\n  Send lag: p50 1.00ms, p99 1.20ms, p99.9 1.20ms, max 1.20ms (3 scheduled sends)\n"},
			nil},
		{"no scheduled send",
			Result{Corrected: full, Uncorrected: full, Completed: 3, Intended: 3, DurationS: 3, SendLag: &empty},
			[]string{"  Send lag: no scheduled send in the window\n"},
			nil},
		{"a mix at a fixed rate",
			Result{Corrected: full, Uncorrected: full, Completed: 3, Sent: 4, Intended: 4, DurationS: 3, Config: Config{Rate: 10},
				Mix: []MixResult{{Target: "/fruits", Weight: 95, Sent: 3, Completed: 3, Queued: 1, Corrected: full},
					{Target: "/block?kind=sleep&d=20ms", Weight: 5, Sent: 1, Corrected: empty}}},
			[]string{"Transfer/sec:       0.00B\n" +
				"  Request mix (corrected latency):\n" +
				"    Target                   Weight    Share  Completed       p50       p99     p99.9       Max   Queued\n" +
				"    /fruits                      95   75.00%          3    1.00ms    1.20ms    1.20ms    1.20ms        1\n" +
				"    /block?kind=sleep&d=20ms      5   25.00%          0         -         -         -         -        0\n"},
			nil},
		{"a mix closed loop",
			Result{Corrected: full, Uncorrected: full, Completed: 3, Sent: 3, Intended: 3, DurationS: 3,
				Mix: []MixResult{{Target: "/", Weight: 1, Sent: 3, Completed: 3, Corrected: full}}},
			[]string{"    Target Weight    Share  Completed       p50       p99     p99.9       Max\n" +
				"    /           1  100.00%          3    1.00ms    1.20ms    1.20ms    1.20ms\n"},
			[]string{"Queued"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := tc.r.WriteText(&b, true, true); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantNone {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

// ReadResult reads a load.json from a newer spindle: members it does not
// know are ignored, the accounting is still checked.
func TestReadResultUnknownFields(t *testing.T) {
	h := latency.New()
	h.RecordValue(1000)
	s, err := latency.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	r := Result{SchemaVersion: SchemaVersion, Corrected: s, Uncorrected: s, Completed: 1, Intended: 1, DurationS: 1}
	r.ByStatus.C2xx = 1
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		json    string
		wantErr bool
	}{
		{"as written", string(b), false},
		{"a new member", `{"added_later":{"p99.99_us":[1,2]},` + string(b[1:]), false},
		{"a new member, bad accounting", string(b[:len(b)-1]) + `,"added_later":1,"completed":5}`, true},
		{"not JSON", `{"schema_version":`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "load.json")
			if err := os.WriteFile(path, []byte(tc.json), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadResult(path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ReadResult = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (got.Completed != 1 || got.Corrected.Count != 1) {
				t.Errorf("read %+v", got)
			}
		})
	}
}
