package remote

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fakeLink is a fake clock and a scripted network: each exchange takes
// out[i] to reach the host, which reads its clock (this one plus offset),
// and back[i] to return.
type fakeLink struct {
	now       time.Time
	offset    time.Duration
	out, back []time.Duration
	i         int
}

func (l *fakeLink) clock() time.Time { return l.now }

func (l *fakeLink) exchange() (time.Time, error) {
	l.now = l.now.Add(l.out[l.i])
	remote := l.now.Add(l.offset)
	l.now = l.now.Add(l.back[l.i])
	l.i++
	return remote, nil
}

func TestMeasureOffset(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		offset    time.Duration
		out, back []time.Duration
		want      time.Duration // the estimate
		rtt       time.Duration
	}{
		{"symmetric", 250 * ms, []time.Duration{5 * ms, ms, 3 * ms}, []time.Duration{5 * ms, ms, 3 * ms}, 250 * ms, 2 * ms},
		{"behind", -3 * time.Second, []time.Duration{2 * ms, 2 * ms}, []time.Duration{2 * ms, 2 * ms}, -3 * time.Second, 4 * ms},
		// The shortest round trip wins even when it is lopsided; the
		// error is then within its half round trip.
		{"asymmetric", 40 * ms, []time.Duration{10 * ms, 3 * ms, 8 * ms}, []time.Duration{10 * ms, ms, 8 * ms}, 40*ms + ms, 4 * ms},
	} {
		l := &fakeLink{now: time.Unix(1_700_000_000, 0), offset: tc.offset, out: tc.out, back: tc.back}
		got, err := MeasureOffset(l.clock, l.exchange, len(tc.out))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.Offset != tc.want || got.RTT != tc.rtt || got.Samples != len(tc.out) {
			t.Errorf("%s: got %+v, want offset %v rtt %v", tc.name, got, tc.want, tc.rtt)
		}
		if d := got.Offset - tc.offset; d < -got.Uncertainty || d > got.Uncertainty {
			t.Errorf("%s: true offset %v outside %v ± %v", tc.name, tc.offset, got.Offset, got.Uncertainty)
		}
	}
}

func TestEstimateOffsetBad(t *testing.T) {
	if _, err := EstimateOffset(nil); err == nil {
		t.Error("no samples: no error")
	}
	t0 := time.Unix(100, 0)
	if _, err := EstimateOffset([]ClockSample{{Sent: t0, Remote: t0, Received: t0.Add(-time.Second)}}); err == nil {
		t.Error("negative round trip: no error")
	}
	if _, err := MeasureOffset(time.Now, func() (time.Time, error) { return time.Now(), nil }, 0); err == nil {
		t.Error("0 samples: no error")
	}
}

func TestServeClock(t *testing.T) {
	at := time.Unix(1_700_000_000, 123)
	var out bytes.Buffer
	if err := ServeClock(strings.NewReader("\n\n"), &out, func() time.Time { return at }); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("answers %q, want 2", lines)
	}
	got, err := parseClockLine(lines[0])
	if err != nil || !got.Equal(at) {
		t.Errorf("parseClockLine(%q) = %v, %v; want %v", lines[0], got, err, at)
	}
	for _, bad := range []string{"", "x", "-5", "12abc"} {
		if _, err := parseClockLine(bad); err == nil {
			t.Errorf("parseClockLine(%q): no error", bad)
		}
	}
}

func FuzzParseClockLine(f *testing.F) {
	f.Add("1700000000000000123\n")
	f.Add("0")
	f.Fuzz(func(t *testing.T, s string) {
		if tm, err := parseClockLine(s); err == nil && tm.UnixNano() <= 0 {
			t.Fatalf("parseClockLine(%q) = %v", s, tm)
		}
	})
}
