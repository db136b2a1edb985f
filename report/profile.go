package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// ProfileFile is the server's CPU profile over the measured window in a
// result directory (bench --profile cpu), in pprof's format: "go tool pprof
// cpu.pprof" reads it.
const ProfileFile = "cpu.pprof"

// DefaultTopFunctions is how many functions a summary keeps of a profile:
// ten, pprof's own "top" default.
const DefaultTopFunctions = 10

// ProfileFunc is one function's share of a CPU profile.
type ProfileFunc struct {
	// Name is the function's full name ("github.com/spindle-lab/github.com/spindle-lab/spindle/carrier.(*Carrier).loop").
	Name string `json:"name"`
	// FlatPct is the percentage of the samples in the function itself;
	// CumPct of those with the function anywhere on the stack.
	FlatPct float64 `json:"flat_pct"`
	CumPct  float64 `json:"cum_pct"`
}

// TopFunctions parses a CPU profile (pprof's gzipped protobuf, as
// /debug/pprof/profile answers) and returns its n functions with the most
// samples of their own, most first (ties by name). Samples are weighted by
// the profile's CPU time (its last sample value, as pprof does).
func TopFunctions(r io.Reader, n int) ([]ProfileFunc, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("parse cpu profile: %w", err)
	}
	if len(p.SampleType) == 0 {
		return nil, fmt.Errorf("parse cpu profile: no sample type")
	}
	vi := len(p.SampleType) - 1
	flat, cum := map[string]int64{}, map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		if vi >= len(s.Value) {
			return nil, fmt.Errorf("parse cpu profile: a sample without its value")
		}
		v := s.Value[vi]
		total += v
		seen := map[string]bool{}
		for li, loc := range s.Location {
			// Lines of a location run from the innermost inlined call out.
			for i, ln := range loc.Line {
				name := "?"
				if ln.Function != nil {
					name = ln.Function.Name
				}
				if li == 0 && i == 0 {
					flat[name] += v
				}
				if !seen[name] {
					seen[name] = true
					cum[name] += v
				}
			}
		}
	}
	if total <= 0 {
		return nil, nil
	}
	names := make([]string, 0, len(flat))
	for name := range flat {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(flat[b], flat[a]), strings.Compare(a, b))
	})
	out := make([]ProfileFunc, 0, min(n, len(names)))
	for _, name := range names[:min(n, len(names))] {
		out = append(out, ProfileFunc{Name: name, FlatPct: 100 * float64(flat[name]) / float64(total),
			CumPct: 100 * float64(cum[name]) / float64(total)})
	}
	return out, nil
}

// writeProfiles writes the "Server CPU profile" section: for every
// configuration of every phase whose runs have a profile, the top
// functions of its first one. Without any, the section is left out.
func (r *Report) writeProfiles(b *strings.Builder) {
	first := true
	for _, g := range r.Groups {
		for _, s := range g.all {
			if len(s.Summary.Profile) == 0 {
				continue
			}
			if first {
				b.WriteString("## Server CPU profile\n\nThe functions with the most CPU samples of their own (flat) in the server " +
					"over the measured window, of one run per configuration (" + ProfileFile + " in its directory: " +
					"`go tool pprof " + ProfileFile + "` for more).\n\n")
				first = false
			}
			fmt.Fprintf(b, "%s, %s (`%s`):\n\n| function | flat %% | cum %% |\n|---|---|---|\n", g.Name, r.phaseTitle(g.Phase), s.Dir)
			for _, f := range s.Summary.Profile {
				fmt.Fprintf(b, "| `%s` | %.1f | %.1f |\n", f.Name, f.FlatPct, f.CumPct)
			}
			b.WriteString("\n")
			break
		}
	}
}
