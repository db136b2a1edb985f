package slo

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want []Threshold
	}{
		{"p99<=10ms", []Threshold{{Text: "p99<=10ms", Kind: Percentile, Percentile: 99, Op: "<=", Duration: 10 * time.Millisecond}}},
		{" p99.9 < 50ms , max<1s", []Threshold{
			{Text: "p99.9<50ms", Kind: Percentile, Percentile: 99.9, Op: "<", Duration: 50 * time.Millisecond},
			{Text: "max<1s", Kind: Percentile, Percentile: 100, Op: "<", Duration: time.Second}}},
		{"mean<=250us", []Threshold{{Text: "mean<=250us", Kind: Mean, Op: "<=", Duration: 250 * time.Microsecond}}},
		{"rps>=20000", []Threshold{{Text: "rps>=20000", Kind: RPS, Op: ">=", Value: 20000}}},
		{"rps>1.5k", []Threshold{{Text: "rps>1.5k", Kind: RPS, Op: ">", Value: 1500}}},
		{"RPS>=2M", []Threshold{{Text: "RPS>=2M", Kind: RPS, Op: ">=", Value: 2e6}}},
		{"errors<=0.1%", []Threshold{{Text: "errors<=0.1%", Kind: Errors, Op: "<=", Value: 0.001, Ratio: true}}},
		{"errors<5", []Threshold{{Text: "errors<5", Kind: Errors, Op: "<", Value: 5}}},
		{"p100<=0s", []Threshold{{Text: "p100<=0s", Kind: Percentile, Percentile: 100, Op: "<=", Duration: 0}}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			g, w := got[i], tt.want[i]
			// Value of a ratio is computed: compare within rounding.
			if g.Ratio && w.Ratio && abs(g.Value-w.Value) < 1e-12 {
				g.Value = w.Value
			}
			if g != w {
				t.Errorf("Parse(%q)[%d] = %+v, want %+v", tt.in, i, g, w)
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty list"},
		{"  ", "empty list"},
		{"p99<=10ms,", "empty threshold"},
		{"p99", "no comparison"},
		{"p99=10ms", "no comparison"},
		{"<=10ms", "no metric"},
		{"p99<=", "no value"},
		{"p99<=10", "not a duration with a unit"},
		{"p99<=-1ms", "not a duration"},
		{"p0<=1ms", "percentile"},
		{"p101<=1ms", "percentile"},
		{"pabc<=1ms", "percentile"},
		{"p1e1<=1ms", "percentile"},
		{"p<=1ms", "percentile"},
		{"latency<=1ms", "unknown metric"},
		{"rps>=fast", "not a non-negative number"},
		{"rps>=-5", "not a non-negative number"},
		{"rps>=Inf", "not a non-negative number"},
		{"rps>=0x10", "not a non-negative number"},
		{"errors<=101%", "percentage"},
		{"errors<=-1%", "percentage"},
		{"errors<=1.5", "whole count"},
		{"errors<=ten", "whole count"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		if !errors.Is(err, ErrBadThreshold) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q): error %v, want ErrBadThreshold mentioning %q", tt.in, err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): error is not one line: %q", tt.in, err)
		}
	}
}

func TestCheck(t *testing.T) {
	lat := func(p float64) time.Duration { return time.Duration(p * float64(time.Millisecond) / 10) } // p99: 9.9ms
	f := Figures{Latency: lat, MeanLatency: 2 * time.Millisecond, LatencyCount: 1000,
		Requests: 1000, Errors: 1, RPS: 19999.5}
	tests := []struct {
		spec     string
		pass     bool
		measured string
	}{
		{"p99<=10ms", true, "9.9ms"},
		{"p99<9.9ms", false, "9.9ms"},
		{"p99<=9.9ms", true, "9.9ms"},
		{"max<=10ms", true, "10ms"},
		{"max>10ms", false, "10ms"},
		{"mean<=2ms", true, "2ms"},
		{"mean<2ms", false, "2ms"},
		{"rps>=20000", false, "19999.5"},
		{"rps>=19k", true, "19999.5"},
		{"errors<=0.1%", true, "0.1% (1 of 1000)"},
		{"errors<0.1%", false, "0.1% (1 of 1000)"},
		{"errors<=0", false, "1"},
		{"errors<=1", true, "1"},
	}
	for _, tt := range tests {
		ts, err := Parse(tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		o := Check(ts, f)
		if len(o) != 1 || o[0].Pass != tt.pass || o[0].Measured != tt.measured {
			t.Errorf("Check(%s) = %+v, want pass=%v measured %q", tt.spec, o, tt.pass, tt.measured)
		}
		if Passed(o) != tt.pass {
			t.Errorf("Passed(%s) = %v", tt.spec, Passed(o))
		}
	}
}

func TestCheckNothingMeasured(t *testing.T) {
	ts, err := Parse("p99<=1s,mean<=1s,errors<=1%,errors<=0,rps>=0")
	if err != nil {
		t.Fatal(err)
	}
	o := Check(ts, Figures{})
	want := []bool{false, false, false, true, true}
	for i, w := range want {
		if o[i].Pass != w {
			t.Errorf("%s on an empty run: pass=%v, want %v (%s)", o[i].Text, o[i].Pass, w, o[i].Measured)
		}
	}
	if Passed(o) {
		t.Error("Passed with failing outcomes")
	}
	if got := o[0].String(); !strings.HasPrefix(got, "FAIL  p99<=1s") || !strings.Contains(got, "no latency measured") {
		t.Errorf("String() = %q", got)
	}
	if got := o[4].String(); !strings.HasPrefix(got, "pass  rps>=0") {
		t.Errorf("String() = %q", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"p99<=10ms,p99.9<=50ms,errors<=0.1%,rps>=20000", "max<1s", "errors<5", "mean>=1us", ",", "p<=", "rps>=1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrBadThreshold) {
				t.Fatalf("Parse(%q): error %v does not wrap ErrBadThreshold", s, err)
			}
			return
		}
		if len(ts) == 0 {
			t.Fatalf("Parse(%q) returned no thresholds and no error", s)
		}
		for _, th := range ts {
			switch th.Kind {
			case Percentile:
				if !(th.Percentile > 0 && th.Percentile <= 100) || th.Duration < 0 {
					t.Fatalf("Parse(%q): bad percentile threshold %+v", s, th)
				}
			case Mean:
				if th.Duration < 0 {
					t.Fatalf("Parse(%q): negative duration %+v", s, th)
				}
			case RPS, Errors:
				if th.Value < 0 || th.Value != th.Value {
					t.Fatalf("Parse(%q): bad value %+v", s, th)
				}
			default:
				t.Fatalf("Parse(%q): unknown kind %+v", s, th)
			}
			// A threshold's text parses back to itself.
			again, err := Parse(th.Text)
			if err != nil || len(again) != 1 || again[0] != th {
				t.Fatalf("Parse(%q) of %q: %+v, %v; want %+v", th.Text, s, again, err, th)
			}
		}
		Check(ts, Figures{Latency: func(float64) time.Duration { return time.Millisecond }, LatencyCount: 1, Requests: 1})
	})
}

func TestOutcomeJSON(t *testing.T) {
	ts, err := Parse("p99.9<=50ms,errors<=0.1%,rps>=20k")
	if err != nil {
		t.Fatal(err)
	}
	want := Check(ts, Figures{Latency: func(float64) time.Duration { return time.Millisecond }, LatencyCount: 1, Requests: 10, RPS: 5})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // thresholds read "p99<=10ms", not "p99\u003c=10ms"
	if err := enc.Encode(want); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if !strings.Contains(string(b), `{"threshold":"p99.9<=50ms","kind":"percentile","percentile":99.9,"op":"<=","duration_ns":50000000,"pass":true,"measured":"1ms"}`) {
		t.Errorf("JSON: %s", b)
	}
	var got []Outcome
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip: %+v, want %+v", got, want)
	}
}
