package spectrum

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// column is one metric of the table.
type column struct {
	head string
	fmt  string // format of the median, min and max
	get  func(*Result) Figure
}

var columns = []column{
	{"fg Mop/s", "%.3g", func(r *Result) Figure { return r.FgMops }},
	{"fg rel", "%.3f", func(r *Result) Figure { return r.FgRel }},
	{"bg Mpkt/s", "%.3g", func(r *Result) Figure { return r.BgMpps }},
	{"bg Mop/s", "%.3g", func(r *Result) Figure { return r.BgMops }},
	{"wake p50 µs", "%.3g", func(r *Result) Figure { return r.WakeP50 }},
	{"wake p99 µs", "%.3g", func(r *Result) Figure { return r.WakeP99 }},
	{"bg CPU %", "%.0f", func(r *Result) Figure { return r.BgCPU }},
	{"bg csw/s", "%.0f", func(r *Result) Figure { return r.CtxSwitches }},
	{"wait cost %", "%.1f", func(r *Result) Figure { return r.WaitCost }},
	{"pkg W", "%.1f", func(r *Result) Figure { return r.Watts }},
	{"fg GHz", "%.2f", func(r *Result) Figure { return r.GHz }},
	{"steal %", "%.1f", func(r *Result) Figure { return r.Steal }},
	{"drv late µs", "%.3g", func(r *Result) Figure { return r.DriverLate }},
	{"busy %", "%.0f", func(r *Result) Figure { return r.BusyShare }},
	{"drv CPU %", "%.0f", func(r *Result) Figure { return r.DriverCPU }},
}

// cellText renders a figure for the table: "median [min-max]", the median
// alone for a single repeat, "-" when the metric does not apply to the
// cell and "n/a" (explained under the table) when it cannot be had.
func cellText(f Figure, format string) string {
	if f.Inapplicable {
		return "-"
	}
	if f.N == 0 {
		return "n/a"
	}
	if f.N == 1 || f.Min == f.Max {
		return fmt.Sprintf(format, f.Median)
	}
	return fmt.Sprintf(format+" ["+format+"-"+format+"]", f.Median, f.Min, f.Max)
}

// maxListed is how many cells a skip reason names before "and N more".
const maxListed = 3

// WriteTable writes one preset's results as an aligned table: one row a
// cell, medians with [min-max] over the repeats; columns that are empty
// for every cell are left out. Skipped cells and errors follow with their
// reasons, then the reasons behind every "n/a".
func WriteTable(w io.Writer, preset string, res []Result) error {
	var rows []*Result
	var reasons []string             // skip and error reasons, first-seen order
	cellsOf := map[string][]string{} // reason -> cells
	for i := range res {
		r := &res[i]
		if r.Preset != preset {
			continue
		}
		why := r.Skipped
		if r.Error != "" {
			why = "error: " + r.Error
		}
		if why == "" {
			rows = append(rows, r)
			continue
		}
		if _, ok := cellsOf[why]; !ok {
			reasons = append(reasons, why)
		}
		cellsOf[why] = append(cellsOf[why], r.Key())
	}
	fmt.Fprintf(w, "== %s ==\n", preset)
	var cols []column
	for _, c := range columns {
		if slices.ContainsFunc(rows, func(r *Result) bool { return cellText(c.get(r), c.fmt) != "-" }) {
			cols = append(cols, c)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"cell"}
	for _, c := range cols {
		head = append(head, c.head)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	naSeen := map[string]bool{}
	var reasonList []string
	for _, r := range rows {
		line := []string{r.Key()}
		for _, c := range cols {
			f := c.get(r)
			t := cellText(f, c.fmt)
			if t == "n/a" {
				key := c.head + ": " + f.NA
				if !naSeen[key] {
					naSeen[key] = true
					reasonList = append(reasonList, key)
				}
			}
			line = append(line, t)
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, why := range reasons {
		cs := cellsOf[why]
		more := ""
		if len(cs) > maxListed {
			cs, more = cs[:maxListed], fmt.Sprintf(" and %d more", len(cs)-maxListed)
		}
		fmt.Fprintf(w, "%s\n    (%s%s)\n", why, strings.Join(cs, "; "), more)
	}
	for _, s := range reasonList {
		fmt.Fprintln(w, s)
	}
	_, err := fmt.Fprintln(w)
	return err
}
