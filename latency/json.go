package latency

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// ErrBadHistogram is wrapped by every error decoding an encoded histogram.
var ErrBadHistogram = errors.New("bad encoded histogram")

// Summary is the JSON form of one latency distribution: the figures a reader
// wants at a glance, all in microseconds, and the whole histogram in
// HdrHistogram's compressed V2 encoding (base64), so that summaries can be
// decoded and merged later without loss. Field names are stable.
type Summary struct {
	Count       int64   `json:"count"`        // recorded values
	MeanUs      float64 `json:"mean_us"`      // arithmetic mean, µs
	StdDevUs    float64 `json:"stdev_us"`     // standard deviation, µs
	MinUs       int64   `json:"min_us"`       // smallest value, µs (0 when empty)
	MaxUs       int64   `json:"max_us"`       // largest value, µs (0 when empty)
	WithinStdev float64 `json:"within_stdev"` // percent of values within one stdev of the mean
	// PercentilesUs maps a percentile ("50", "99.9", "100": the Percentiles
	// list) to its value in µs.
	PercentilesUs map[string]int64 `json:"percentiles_us"`
	// Histogram is the V2 compressed, base64 encoded histogram (µs).
	Histogram string `json:"histogram"`
}

// PercentileKey is the key of percentile p in Summary.PercentilesUs ("99.9").
func PercentileKey(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

// Summarize computes h's summary, including its encoding.
func Summarize(h *Histogram) (Summary, error) {
	s := Summary{
		Count:         h.TotalCount(),
		PercentilesUs: make(map[string]int64, len(Percentiles)),
	}
	if s.Count > 0 {
		s.MeanUs = h.Mean()
		s.StdDevUs = h.StdDev()
		s.MinUs = h.Min()
		s.MaxUs = h.Max()
		s.WithinStdev = WithinStdev(h, s.MeanUs, s.StdDevUs)
	}
	for _, p := range Percentiles {
		s.PercentilesUs[PercentileKey(p)] = h.ValueAtPercentile(p)
	}
	enc, err := Encode(h)
	if err != nil {
		return s, err
	}
	s.Histogram = enc
	return s, nil
}

// Decode returns the histogram a Summary carries.
func (s Summary) Decode() (*Histogram, error) { return Decode(s.Histogram) }

// Encode returns h in HdrHistogram's V2 compressed encoding, base64 (the
// form the HdrHistogram log tools and other implementations read).
func Encode(h *Histogram) (string, error) {
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
}

// Decode parses a histogram written by Encode.
func Decode(s string) (*Histogram, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: empty", ErrBadHistogram)
	}
	h, err := hdr.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadHistogram, err)
	}
	return h, nil
}

// WithinStdev returns the percentage of h's values within one standard
// deviation of the mean, computed over histogram buckets as wrk2's
// stats_within_stdev does (wrk's "+/- Stdev" column).
func WithinStdev(h *Histogram, mean, stdev float64) float64 {
	total := h.TotalCount()
	if total == 0 {
		return 0
	}
	lower, upper := int64(mean-stdev), int64(mean+stdev)
	var lowerCount, upperCount, cum int64
	found := false
	for _, bar := range h.Distribution() {
		cum += bar.Count
		if lower > bar.From {
			lowerCount = cum
		}
		if upper < bar.To {
			upperCount = cum
			found = true
			break
		}
	}
	if !found {
		upperCount = total
	}
	return 100 * float64(upperCount-lowerCount) / float64(total)
}

// SchemaVersion is the schema_version that MarshalJSON gives the JSON files
// spindle writes (summary.json, config.json, plan.json, carrier.json,
// findings.json, spectrum.json, probe's output; load.json and threads.json
// carry their own). It is raised when a field is removed or changes
// meaning; new fields do not raise it, since readers ignore fields they do
// not know.
const SchemaVersion = 1

// MarshalJSON returns v as indented JSON ending in a newline, with HTML
// characters unescaped (thresholds read "p99<=10ms"). When v encodes as an
// object without a "schema_version" member, one with SchemaVersion is put
// first.
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode json: %w", err)
	}
	raw := bytes.TrimSpace(buf.Bytes())
	if len(raw) > 0 && raw[0] == '{' {
		var members map[string]json.RawMessage
		if err := json.Unmarshal(raw, &members); err != nil {
			return nil, fmt.Errorf("encode json: %w", err)
		}
		if _, ok := members["schema_version"]; !ok {
			head := `{"schema_version":` + strconv.Itoa(SchemaVersion)
			if len(members) > 0 {
				head += ","
			}
			raw = append([]byte(head), raw[1:]...)
		}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, fmt.Errorf("encode json: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// ReadJSON decodes one JSON document from r into v (a *load.Result, a
// *Summary, ...). Fields v does not know are ignored, so that files written
// by a newer spindle (with new fields, the same schema_version) still read.
func ReadJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode json: %w", err)
	}
	return nil
}

// ReadJSONFile reads the JSON document in path into v (see ReadJSON).
func ReadJSONFile(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := ReadJSON(f, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// MergeSummaries decodes every summary's histogram and merges them.
func MergeSummaries(ss ...Summary) (*Histogram, error) {
	hs := make([]*Histogram, 0, len(ss))
	for i, s := range ss {
		h, err := s.Decode()
		if err != nil {
			return nil, fmt.Errorf("summary %d: %w", i, err)
		}
		hs = append(hs, h)
	}
	return Merge(hs...)
}
