// Package slo parses service-level objectives written as thresholds
// ("p99<=10ms,p99.9<=50ms,errors<=0.1%,rps>=20000") and checks a run's
// figures against them, as k6's thresholds do: every threshold is reported
// pass or fail, and a caller fails the run (spindle exits 3) when any fails.
//
// A threshold is METRIC OP VALUE:
//
//	pN      latency percentile N (0 < N <= 100: p50, p99, p99.9), a duration with a unit (10ms, 250us)
//	mean    mean latency, a duration
//	max     largest latency, a duration (the same as p100)
//	rps     achieved requests per second, a number (k and M suffixes: 20k)
//	errors  failed requests, a count (5) or a percentage of the requests (0.1%)
//
// OP is one of <=, <, >=, >. Spaces around the parts are ignored; thresholds
// are separated by commas.
package slo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrBadThreshold is wrapped by every parse error.
var ErrBadThreshold = errors.New("bad slo threshold")

// Metric kinds.
const (
	Percentile = "percentile" // latency at Threshold.Percentile
	Mean       = "mean"       // mean latency
	RPS        = "rps"        // achieved requests/s
	Errors     = "errors"     // failed requests, a count or a fraction
)

// Threshold is one parsed objective.
// Its JSON form (in a JSON summary's outcomes) names every field.
type Threshold struct {
	// Text is the threshold as written, spaces removed ("p99<=10ms").
	Text string `json:"threshold"`
	// Kind is one of Percentile, Mean, RPS, Errors.
	Kind string `json:"kind"`
	// Percentile is the latency percentile (0 < p <= 100) of a Percentile threshold.
	Percentile float64 `json:"percentile,omitempty"`
	// Op is the comparison: "<=", "<", ">=" or ">".
	Op string `json:"op"`
	// Duration is the bound of a latency threshold.
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Value is the bound of an rps threshold, or of an errors threshold:
	// a count, or a fraction of the requests (0.001 for 0.1%) when Ratio.
	Value float64 `json:"value,omitempty"`
	// Ratio marks an errors bound written as a percentage.
	Ratio bool `json:"ratio,omitempty"`
}

// Parse parses a comma-separated list of thresholds. An empty list is an
// error: a caller that wants no objectives does not call Parse.
func Parse(s string) ([]Threshold, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty list (want e.g. \"p99<=10ms,errors<=0.1%%\")", ErrBadThreshold)
	}
	var out []Threshold
	for part := range strings.SplitSeq(s, ",") {
		t, err := parseOne(part)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// ops in the order they are tried: two-character operators first.
var ops = []string{"<=", ">=", "<", ">"}

func parseOne(raw string) (Threshold, error) {
	text := strings.Join(strings.Fields(raw), "")
	bad := func(format string, args ...any) (Threshold, error) {
		return Threshold{}, fmt.Errorf("%w %q: %s", ErrBadThreshold, text, fmt.Sprintf(format, args...))
	}
	if text == "" {
		return bad("empty threshold (a stray comma?)")
	}
	t := Threshold{Text: text}
	var metric, value string
	for _, op := range ops {
		if i := strings.Index(text, op); i >= 0 {
			metric, value, t.Op = text[:i], text[i+len(op):], op
			break
		}
	}
	switch {
	case t.Op == "":
		return bad("no comparison (want METRIC<=VALUE, <, >= or >)")
	case metric == "":
		return bad("no metric before %s", t.Op)
	case value == "":
		return bad("no value after %s", t.Op)
	}
	switch metric = strings.ToLower(metric); {
	case metric == "mean":
		t.Kind = Mean
	case metric == "max":
		t.Kind, t.Percentile = Percentile, 100
	case metric == "rps":
		t.Kind = RPS
	case metric == "errors":
		t.Kind = Errors
	case strings.HasPrefix(metric, "p"):
		p, err := strconv.ParseFloat(metric[1:], 64)
		if err != nil || !(p > 0 && p <= 100) || strings.ContainsAny(metric[1:], "eExXpP_") {
			return bad("percentile %q is not a number in (0, 100]", metric[1:])
		}
		t.Kind, t.Percentile = Percentile, p
	default:
		return bad("unknown metric %q (want pN, mean, max, rps or errors)", metric)
	}
	switch t.Kind {
	case Percentile, Mean:
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return bad("%q is not a duration with a unit (10ms, 250us, 1.5s)", value)
		}
		t.Duration = d
	case RPS:
		v, err := parseNumber(value)
		if err != nil {
			return bad("%v", err)
		}
		t.Value = v
	case Errors:
		if num, ok := strings.CutSuffix(value, "%"); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || !(v >= 0 && v <= 100) {
				return bad("%q is not a percentage in [0, 100]", value)
			}
			t.Value, t.Ratio = v/100, true
		} else {
			v, err := strconv.ParseUint(value, 10, 63)
			if err != nil {
				return bad("%q is not a whole count or a percentage (5, 0.1%%)", value)
			}
			t.Value = float64(v)
		}
	}
	return t, nil
}

// parseNumber parses a non-negative finite number with an optional k or M
// suffix (spindle's request-rate notation: 20k).
func parseNumber(s string) (float64, error) {
	mult, num := 1.0, s
	switch {
	case strings.HasSuffix(s, "k") || strings.HasSuffix(s, "K"):
		mult, num = 1e3, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, num = 1e6, s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || strings.ContainsAny(num, "xXpP_") || math.IsInf(v, 0) || math.IsNaN(v) || v < 0 {
		return 0, fmt.Errorf("%q is not a non-negative number (20000, 20k)", s)
	}
	return v * mult, nil
}

// Figures are what a run measured, the input of Check.
type Figures struct {
	// Latency returns the latency at percentile p (0 < p <= 100; 100 is
	// the largest). Nil when nothing was measured.
	Latency func(p float64) time.Duration
	// MeanLatency is the mean latency.
	MeanLatency time.Duration
	// LatencyCount is the number of latencies measured; latency thresholds
	// fail when it is 0 (nothing met them).
	LatencyCount int64
	// Requests is the number of requests the error ratio is taken of.
	Requests int64
	// Errors is the number of failed requests (including error responses,
	// as the caller defines them).
	Errors int64
	// RPS is the achieved request rate, requests/s.
	RPS float64
}

// Outcome is one threshold checked.
type Outcome struct {
	Threshold
	// Pass reports whether the figure met the threshold.
	Pass bool `json:"pass"`
	// Measured is the figure, formatted with its unit ("3.2ms", "0.05%",
	// "18234.1").
	Measured string `json:"measured"`
}

// Check compares f with every threshold, in order.
func Check(ts []Threshold, f Figures) []Outcome {
	out := make([]Outcome, 0, len(ts))
	for _, t := range ts {
		o := Outcome{Threshold: t}
		switch t.Kind {
		case Percentile, Mean:
			if f.LatencyCount == 0 || (t.Kind == Percentile && f.Latency == nil) {
				o.Measured = "no latency measured"
				break
			}
			d := f.MeanLatency
			if t.Kind == Percentile {
				d = f.Latency(t.Percentile)
			}
			o.Pass = compare(float64(d), t.Op, float64(t.Duration))
			o.Measured = d.String()
		case RPS:
			o.Pass = compare(f.RPS, t.Op, t.Value)
			o.Measured = strconv.FormatFloat(f.RPS, 'f', 1, 64)
		case Errors:
			if !t.Ratio {
				o.Pass = compare(float64(f.Errors), t.Op, t.Value)
				o.Measured = strconv.FormatInt(f.Errors, 10)
				break
			}
			if f.Requests == 0 {
				o.Measured = "no requests"
				break
			}
			r := float64(f.Errors) / float64(f.Requests)
			o.Pass = compare(r, t.Op, t.Value)
			o.Measured = fmt.Sprintf("%.4g%% (%d of %d)", 100*r, f.Errors, f.Requests)
		}
		out = append(out, o)
	}
	return out
}

func compare(got float64, op string, bound float64) bool {
	switch op {
	case "<=":
		return got <= bound
	case "<":
		return got < bound
	case ">=":
		return got >= bound
	case ">":
		return got > bound
	}
	return false
}

// Passed reports whether every outcome passed.
func Passed(os []Outcome) bool {
	for _, o := range os {
		if !o.Pass {
			return false
		}
	}
	return true
}

// String formats o as one report line: "pass  p99<=10ms  (measured 3.2ms)".
func (o Outcome) String() string {
	verdict := "FAIL"
	if o.Pass {
		verdict = "pass"
	}
	return fmt.Sprintf("%s  %-16s (measured %s)", verdict, o.Text, o.Measured)
}
