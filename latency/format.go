package latency

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// unitScale is one of wrk's unit ladders: values are divided by scale while
// they are at least 85% of it (wrk's rounding threshold), for at most
// len(units)-1 steps, exactly as wrk's format_units does.
type unitScale struct {
	scale float64
	base  string
	units []string
}

var (
	timeUnitsUs  = unitScale{1000, "us", []string{"ms", "s"}}
	timeUnitsS   = unitScale{60, "s", []string{"m", "h"}}
	binaryUnits  = unitScale{1024, "", []string{"K", "M", "G", "T", "P"}}
	metricUnits  = unitScale{1000, "", []string{"k", "M", "G", "T", "P"}}
	roundingFrac = 0.85 // wrk switches to the next unit at 85% of it
)

func (u unitScale) format(n float64, prec int) string {
	unit := u.base
	limit := u.scale * roundingFrac
	for i := 0; i+1 < len(u.units) && n >= limit; i++ {
		n /= u.scale
		unit = u.units[i]
	}
	return strconv.FormatFloat(n, 'f', prec, 64) + unit
}

// FormatTimeUs formats a duration in µs as wrk does ("612.00us", "1.23ms",
// "2.00s", "1.50m").
func FormatTimeUs(us float64) string {
	if us >= 1e6 {
		return timeUnitsS.format(us/1e6, 2)
	}
	return timeUnitsUs.format(us, 2)
}

// FormatTimeS formats whole seconds as wrk does in "Running 10s test".
func FormatTimeS(s float64) string { return timeUnitsS.format(s, 0) }

// FormatBinary formats a byte count with 1024-based units ("19.81M").
func FormatBinary(n float64) string { return binaryUnits.format(n, 2) }

// FormatMetric formats a count with 1000-based units ("1.04k").
func FormatMetric(n float64) string { return metricUnits.format(n, 2) }

// Units pads s into a column of width characters the way wrk's print_units
// does: right-aligned, followed by two spaces less one per trailing letter.
func Units(s string, width int) string {
	pad := 2
	if l := len(s); l > 0 && isAlpha(s[l-1]) {
		pad--
		if l > 1 && isAlpha(s[l-2]) {
			pad--
		}
	}
	width -= pad
	if len(s) > width {
		s = s[:width]
	}
	return fmt.Sprintf("%*s%s", width, s, "  "[:pad])
}

func isAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// NoLatency stands where a latency would be printed when no request
// completed: never a zero that no request took.
const NoLatency = "n/a (no request completed)"

// Percentiles are the percentiles of wrk2's "Latency Distribution" block.
var Percentiles = []float64{50, 75, 90, 99, 99.9, 99.99, 99.999, 100}

// TicksPerHalfDistance is the resolution of the detailed percentile spectrum
// (wrk2 prints with 5 ticks per half distance to 100%).
const TicksPerHalfDistance = 5

// WriteDistribution writes wrk2's latency block for h: the header naming
// description, the percentiles of Percentiles, and the detailed spectrum with
// its footer.
func WriteDistribution(w io.Writer, h *Histogram, description string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "  Latency Distribution (HdrHistogram - %s)\n", description)
	if h.TotalCount() == 0 {
		// An empty histogram's percentiles read 0, which no request took.
		fmt.Fprintf(bw, "  %s\n", NoLatency)
		return bw.Flush()
	}
	for _, p := range Percentiles {
		fmt.Fprintf(bw, "%7.3f%%%s\n", p, Units(FormatTimeUs(float64(h.ValueAtPercentile(p))), 10))
	}
	fmt.Fprintf(bw, "\n%s\n", "  Detailed Percentile spectrum:")
	if err := writeSpectrum(bw, h); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteSpectrum writes the detailed percentile spectrum of h in the classic
// HdrHistogram text format (values in milliseconds) with its footer: the
// content of a .hgrm file, which the HdrHistogram plotter reads.
func WriteSpectrum(w io.Writer, h *Histogram) error {
	bw := bufio.NewWriter(w)
	if err := writeSpectrum(bw, h); err != nil {
		return err
	}
	return bw.Flush()
}

// spectrumHeader is wrk2's header of the spectrum: hdrhistogram-go's
// PercentilesPrint writes the same rows and footer under a tab-separated
// header, which wrk2's parsers do not expect.
var spectrumHeader = fmt.Sprintf("%12s %12s %12s %12s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)")

// writeSpectrum writes the spectrum through hdrhistogram-go's
// PercentilesPrint (its rows, and its footer with the histogram's own
// bucket geometry) under wrk2's header.
func writeSpectrum(w *bufio.Writer, h *Histogram) error {
	var b bytes.Buffer
	if _, err := h.PercentilesPrint(&b, TicksPerHalfDistance, ValueScale); err != nil {
		return err
	}
	out := b.Bytes()
	// Its header is one line and a blank one.
	for range 2 {
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		}
	}
	if h.TotalCount() == 0 {
		// An empty histogram gets one row at value 0, which no request
		// took: keep the footer only.
		out = out[bytes.Index(out, []byte("#[")):]
	}
	w.WriteString(spectrumHeader)
	_, err := w.Write(out)
	return err
}
