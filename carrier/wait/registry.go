package wait

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Spec is everything spindle needs to know about one strategy. Each strategy
// lives in one file that calls Register from its init function; New, Names,
// Available, the command's help text, the waiting spectrum's presets and
// verdicts, probe and the compare matrix are derived from the registered
// specs, so adding a strategy is adding that one file.
type Spec struct {
	// Name is the strategy's flag name.
	Name string
	// Order places the strategy in every list (help, probe, presets):
	// lower first. The built-in strategies use 10, 20, ... so that a new
	// one can slot between them.
	Order int
	// New returns a fresh strategy. It receives Options with every default
	// applied and returns an error wrapping ErrNotSupported when this
	// machine cannot run it.
	New func(Options) (Strategy, error)
	// Available returns nil when this machine can run the strategy, or the
	// error New would return; nil Available means it runs everywhere.
	Available func() error
	// Adaptive is true for a strategy that learns when to spin and when to
	// block; false for a fixed one. The spectrum compares each adaptive
	// strategy with the fixed ones.
	Adaptive bool
	// SharesCore is true for a strategy that gives its core back while it
	// waits (it blocks in the kernel), so that other threads may run there.
	SharesCore bool
}

// registry holds the registered specs, sorted by Order then Name.
var registry []Spec

// Register adds a strategy. It is called from init functions only; a
// malformed or duplicate spec is a programming error, reported by the
// registry's test (TestRegistry) rather than by a panic here, so Register
// keeps the first spec of a name.
func Register(s Spec) {
	if _, dup := Lookup(s.Name); dup || s.Name == "" || s.New == nil {
		bad = append(bad, s.Name)
		return
	}
	registry = append(registry, s)
	slices.SortStableFunc(registry, func(a, b Spec) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), strings.Compare(a.Name, b.Name))
	})
}

// bad lists the names of specs Register refused (empty, duplicate, or
// without a constructor), for TestRegistry.
var bad []string

// Lookup returns the spec registered under name.
func Lookup(name string) (Spec, bool) {
	i := slices.IndexFunc(registry, func(s Spec) bool { return s.Name == name })
	if i < 0 {
		return Spec{}, false
	}
	return registry[i], true
}

// CheckB checks a fixed B (Options.BlockWake with FixedB) for strategy
// name: 0 (none: measured, then learned) or a positive duration for an
// adaptive strategy, the only kind that weighs spinning against B.
func CheckB(name string, b time.Duration) error {
	switch s, _ := Lookup(name); {
	case b < 0:
		return fmt.Errorf("B %v: want 0 (measured, then learned) or more", b)
	case b > 0 && !s.Adaptive:
		return fmt.Errorf("B sets the adaptive strategy's block-and-wake cost: it needs an adaptive strategy, not %s", name)
	}
	return nil
}

// Specs returns every registered strategy, in Order.
func Specs() []Spec { return slices.Clone(registry) }

// Names lists every strategy New knows, including those this CPU cannot run.
func Names() []string {
	out := make([]string, len(registry))
	for i, s := range registry {
		out[i] = s.Name
	}
	return out
}

// NamesWhere lists, in Order, the strategies whose spec satisfies keep.
func NamesWhere(keep func(Spec) bool) []string {
	var out []string
	for _, s := range registry {
		if keep(s) {
			out = append(out, s.Name)
		}
	}
	return out
}

// Help lists the strategy names for a flag's help text: "a, b or c".
func Help() string {
	n := Names()
	if len(n) < 2 {
		return strings.Join(n, "")
	}
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

// New returns a fresh strategy by name (see Names). Each carrier needs its
// own: strategies keep per-thread state. A strategy this CPU cannot run
// returns an error wrapping ErrNotSupported that says why.
func New(name string, o Options) (Strategy, error) {
	s, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown wait strategy %q (want one of %v)", name, Names())
	}
	return s.New(o.withDefaults())
}

// Available reports, for each strategy name, nil when this machine can run it
// or the error New would return.
func Available() map[string]error {
	out := make(map[string]error, len(registry))
	for _, s := range registry {
		var err error
		if s.Available != nil {
			err = s.Available()
		}
		out[s.Name] = err
	}
	return out
}

// Supported lists the strategy names this machine can run, in Names order.
func Supported() []string {
	av := Available()
	return slices.DeleteFunc(Names(), func(n string) bool { return av[n] != nil })
}
