package report

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Captions: the lines under a plot that say which runs it draws and which
// configurations it leaves out and why, so that the picture read alone
// does not pass a missing configuration or a left-out run off as data.
// The rule for runs that failed a check (Check, the report's "Runs left
// out") is that no plot draws one as if it counted: the plots of figures
// over rounds (percentiles, bars, latency against load) leave them out and
// their caption says how many there were; a timeline, which draws one run,
// draws one only for a configuration without a run that passed, in grey
// and marked "left out" (timelineOf).

// Caption layout: 10 pt text (the axes' labels are 12 pt) in dark grey
// (contrast 11:1 on white), 6 pt from the image's edges.
var (
	captionSize  = vg.Points(10)
	captionPad   = vg.Points(6)
	captionColor = color.Gray{Y: 60}
)

// chart is a plot and the caption under it, one note a paragraph.
type chart struct {
	p     *plot.Plot
	notes []string
}

// saveTo returns a function that saves a chart into path (save), or
// returns the error of building it, naming the file.
func saveTo(path string) func(chart, error) error {
	return func(c chart, err error) error {
		if err != nil {
			return fmt.Errorf("plot %s: %w", filepath.Base(path), err)
		}
		return c.save(path)
	}
}

// save draws the chart into path (its extension names the format): the
// caption's lines, wrapped to the width, at the bottom and the plot above
// them.
func (c chart) save(path string) error {
	cv, err := draw.NewFormattedCanvas(plotWidth, plotHeight, strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), "."))
	if err != nil {
		return fmt.Errorf("plot %s: %w", filepath.Base(path), err)
	}
	dc := draw.New(cv)
	sty := captionStyle(c.p)
	var lines []string
	for _, n := range c.notes {
		lines = append(lines, wrap(sty, n, plotWidth-2*captionPad)...)
	}
	var height vg.Length
	if len(lines) > 0 {
		txt := strings.Join(lines, "\n")
		height = sty.Height(txt) + 2*captionPad
		dc.FillText(sty, vg.Point{X: dc.Min.X + captionPad, Y: dc.Min.Y + height - captionPad}, txt)
	}
	c.p.Draw(draw.Crop(dc, 0, 0, height, 0))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := cv.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}

// captionStyle is the captions' text style: p's title font, smaller.
func captionStyle(p *plot.Plot) draw.TextStyle {
	return draw.TextStyle{Color: captionColor, Font: font.From(p.Title.TextStyle.Font, captionSize),
		Handler: p.Title.TextStyle.Handler, XAlign: draw.XLeft, YAlign: draw.YTop}
}

// wrap breaks s at spaces into lines no wider than width in sty; a word
// wider than width gets a line of its own.
func wrap(sty draw.TextStyle, s string, width vg.Length) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case sty.Width(line+" "+w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// drawnNote states the rule for the runs of groups: only those that
// passed the checks are drawn; how many failed one.
func drawnNote(groups []*Group) string {
	n := 0
	for _, g := range groups {
		n += g.LeftOut
	}
	if n == 0 {
		return "Drawn: every complete run (all passed the checks)."
	}
	return fmt.Sprintf("Drawn: only the runs that passed the checks; %s: not drawn (see \"Runs left out\").", failed(n))
}

// failed says how many runs failed a check: "1 run failed one".
func failed(n int) string {
	if n == 1 {
		return "1 run failed one"
	}
	return fmt.Sprintf("%d runs failed one", n)
}

// missingNotes name the groups a plot leaves out (drawn false) and why:
// no run passed the checks (with how many were left out or incomplete),
// or lacks, the figure missing from their runs ("no latency recorded").
// A name is listed once however many of its groups (phases) are missing.
func missingNotes(groups []*Group, drawn func(*Group) bool, lacks string) []string {
	var none, without, seen []string
	for _, g := range groups {
		if drawn(g) || slices.Contains(seen, g.Name) {
			continue
		}
		seen = append(seen, g.Name)
		if g.Runs > 0 {
			without = append(without, g.Name)
			continue
		}
		name := g.Name
		if n := unusedRuns(g, ""); n != "" {
			name += " (" + n + ")"
		}
		none = append(none, name)
	}
	var ns []string
	if len(none) > 0 {
		ns = append(ns, "Not drawn, no valid run: "+strings.Join(none, ", ")+".")
	}
	if len(without) > 0 {
		ns = append(ns, "Not drawn, "+lacks+": "+strings.Join(without, ", ")+".")
	}
	return ns
}

// unusedRuns counts g's runs that no figure uses, each count after prefix
// ("+" in the tables' runs column): "3 left out, 1 incomplete"; "" without
// any.
func unusedRuns(g *Group, prefix string) string {
	var ns []string
	if g.LeftOut > 0 {
		ns = append(ns, fmt.Sprintf("%s%d left out", prefix, g.LeftOut))
	}
	if g.Incomplete > 0 {
		ns = append(ns, fmt.Sprintf("%s%d incomplete", prefix, g.Incomplete))
	}
	return strings.Join(ns, ", ")
}
