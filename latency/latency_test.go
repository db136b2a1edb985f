package latency

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFormatUnits(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{FormatTimeUs(612), "612.00us"},
		{FormatTimeUs(849), "849.00us"},
		{FormatTimeUs(850), "0.85ms"},
		{FormatTimeUs(1234), "1.23ms"},
		{FormatTimeUs(999_999), "1000.00ms"},
		{FormatTimeUs(2e6), "2.00s"},
		{FormatTimeUs(90e6), "1.50m"},
		{FormatTimeS(10), "10s"},
		{FormatTimeS(120), "2m"},
		{FormatBinary(20_772_618), "19.81M"},
		{FormatBinary(512), "512.00"},
		{FormatMetric(1040), "1.04k"},
		{FormatMetric(12), "12.00"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestUnitsPadding(t *testing.T) {
	// wrk's print_units: width minus (2 - trailing letters), then that padding.
	tests := []struct {
		s     string
		width int
		want  string
	}{
		{"6.60ms", 8, "  6.60ms"},
		{"1.92ms", 10, "    1.92ms"},
		{"1.04k", 8, "  1.04k "},
		{"12.00", 9, "  12.00  "},
	}
	for _, tt := range tests {
		if got := Units(tt.s, tt.width); got != tt.want {
			t.Errorf("Units(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
		}
	}
}

func sample() *Histogram {
	h := New()
	for i := int64(1); i <= 10000; i++ {
		Record(h, i*int64(time.Microsecond)*7)
	}
	return h
}

// The spectrum must match the HdrHistogram library's own classic printer
// line for line (after its differently spaced header), footer included.
func TestSpectrumMatchesLibrary(t *testing.T) {
	h := sample()
	var ours, lib bytes.Buffer
	if err := WriteSpectrum(&ours, h); err != nil {
		t.Fatal(err)
	}
	if _, err := h.PercentilesPrint(&lib, TicksPerHalfDistance, ValueScale); err != nil {
		t.Fatal(err)
	}
	oursLines := strings.Split(ours.String(), "\n")
	libLines := strings.Split(lib.String(), "\n")
	if want := "       Value   Percentile   TotalCount 1/(1-Percentile)"; oursLines[0] != want {
		t.Errorf("header %q, want %q", oursLines[0], want)
	}
	if len(oursLines) != len(libLines) {
		t.Fatalf("%d lines, library printed %d", len(oursLines), len(libLines))
	}
	for i := 2; i < len(oursLines); i++ {
		if oursLines[i] != libLines[i] {
			t.Errorf("line %d: %q, library %q", i, oursLines[i], libLines[i])
		}
	}
	if !strings.Contains(ours.String(), "#[Buckets =           22, SubBuckets     =         2048]") {
		t.Errorf("footer geometry: %s", ours.String()[len(ours.String())-200:])
	}
}

func TestDistributionLayout(t *testing.T) {
	h := sample()
	var b bytes.Buffer
	if err := WriteDistribution(&b, h, "Recorded Latency"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"  Latency Distribution (HdrHistogram - Recorded Latency)\n",
		" 50.000%   35.01ms\n",
		"100.000%   70.02ms\n",
		"\n  Detailed Percentile spectrum:\n",
		"#[Mean    =       35.004",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRecordClamps(t *testing.T) {
	h := New()
	Record(h, 10)                 // 10 ns: below 1 µs
	Record(h, int64(2*time.Hour)) // above the range
	Record(h, -5)                 // clock went backwards
	if h.TotalCount() != 3 {
		t.Fatalf("count %d, want 3 (no value lost)", h.TotalCount())
	}
	if h.Min() != LowestUs || !h.ValuesAreEquivalent(h.Max(), HighestUs) {
		t.Fatalf("min %d max %d", h.Min(), h.Max())
	}
}

func TestSummaryRoundTripAndMerge(t *testing.T) {
	a, b := New(), New()
	for i := int64(1); i <= 1000; i++ {
		Record(a, i*1000)
		Record(b, i*2000)
	}
	sa, err := Summarize(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := Summarize(b)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(sa)
	if err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := ReadJSON(bytes.NewReader(js), &back); err != nil {
		t.Fatal(err)
	}
	ha, err := back.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if !ha.Equals(a) {
		t.Fatal("decoded histogram differs from the original")
	}
	if back.PercentilesUs["50"] != a.ValueAtPercentile(50) || back.PercentilesUs["99.999"] == 0 {
		t.Fatalf("percentiles %v", back.PercentilesUs)
	}
	m, err := MergeSummaries(back, sb)
	if err != nil {
		t.Fatal(err)
	}
	direct, _ := Merge(a, b)
	if m.TotalCount() != 2000 || !m.Equals(direct) {
		t.Fatalf("merged count %d, equal to direct merge: %v", m.TotalCount(), m.Equals(direct))
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, s := range []string{"", "!!!", "aGVsbG8=", "HISTFAAAAA=="} {
		if _, err := Decode(s); !errors.Is(err, ErrBadHistogram) {
			t.Errorf("Decode(%q) = %v, want ErrBadHistogram", s, err)
		}
	}
}

// A file from a newer spindle (a field this version does not know) reads;
// a document that is not JSON does not.
func TestReadJSONUnknownFields(t *testing.T) {
	var s Summary
	if err := ReadJSON(strings.NewReader(`{"count":1,"from_the_future":{"x":[1]}}`), &s); err != nil || s.Count != 1 {
		t.Errorf("ReadJSON with an unknown field = %v, count %d; want nil, 1", err, s.Count)
	}
	if err := ReadJSON(strings.NewReader(`{"count":`), &s); err == nil {
		t.Error("truncated JSON accepted")
	}
}

func TestMarshalJSONSchemaVersion(t *testing.T) {
	type own struct {
		V int    `json:"schema_version"`
		A string `json:"a"`
	}
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"object gets it first", struct {
			A string `json:"a"`
		}{"p99<=1ms"}, "{\n  \"schema_version\": " + strconv.Itoa(SchemaVersion) + ",\n  \"a\": \"p99<=1ms\"\n}\n"},
		{"empty object", struct{}{}, "{\n  \"schema_version\": " + strconv.Itoa(SchemaVersion) + "\n}\n"},
		{"its own version kept", own{V: 7, A: "x"}, "{\n  \"schema_version\": 7,\n  \"a\": \"x\"\n}\n"},
		{"not an object", []int{1, 2}, "[\n  1,\n  2\n]\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := MarshalJSON(c.v)
			if err != nil || string(b) != c.want {
				t.Errorf("MarshalJSON = %q, %v; want %q", b, err, c.want)
			}
		})
	}
	if _, err := MarshalJSON(func() {}); err == nil {
		t.Error("MarshalJSON(func) did not fail")
	}
}

func TestWithinStdev(t *testing.T) {
	h := New()
	for _, v := range []int64{10, 10, 10, 10, 1000} {
		_ = h.RecordValue(v)
	}
	got := WithinStdev(h, h.Mean(), h.StdDev())
	if got != 80 {
		t.Fatalf("within stdev %.2f%%, want 80%%", got)
	}
	if WithinStdev(New(), 0, 0) != 0 {
		t.Fatal("empty histogram")
	}
}

func FuzzDecode(f *testing.F) {
	s, _ := Summarize(sample())
	f.Add(s.Histogram)
	f.Add("")
	f.Add("HISTFAAAACl4nJNpmSzMwMDAxgABzFCaEUzOsf")
	f.Fuzz(func(t *testing.T, in string) {
		h, err := Decode(in)
		if err != nil {
			return
		}
		// Whatever decodes must re-encode and decode to the same histogram.
		enc, err := Encode(h)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		h2, err := Decode(enc)
		if err != nil || !h2.Equals(h) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func BenchmarkRecord(b *testing.B) {
	b.ReportAllocs()
	h := New()
	for i := 0; i < b.N; i++ {
		Record(h, int64(i%100000)*1000)
	}
}

// An empty histogram has no latencies to print: n/a, never a 0 no request took.
func TestDistributionEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteDistribution(&b, New(), "Recorded Latency"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, NoLatency) || strings.Contains(out, "0.00us") || strings.Contains(out, "50.000%") {
		t.Errorf("empty distribution:\n%s", out)
	}
}

// TestSpectrumEmpty: an empty histogram's .hgrm has the header and the
// footer, and no row at value 0 (which hdrhistogram-go's printer writes).
func TestSpectrumEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSpectrum(&b, New()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[2], "#[Mean") || !strings.Contains(lines[3], "Total count    =            0") {
		t.Errorf("empty spectrum:\n%s", b.String())
	}
}
