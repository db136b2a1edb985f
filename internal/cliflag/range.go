package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// Number are the kinds of value a Range flag holds: whole numbers, float64
// and time.Duration (a duration with a unit, not a bare number).
type Number interface {
	~int | ~int64 | ~uint64 | ~float64
}

// Range is a numeric flag that accepts only values within its bounds and
// refuses any other with what it accepts ("want a whole number of at least
// 1"), so that a wrong value is answered the same way by every command.
// Whole numbers take an optional k, M or G suffix ("10k"), as wrk's
// counts; durations need a unit.
type Range[T Number] struct {
	P *T
	// Min and Max are the least and the largest value accepted; with
	// Above, Min itself is refused ("above 0").
	Min, Max T
	Above    bool
}

// AtLeast is the Range of values from min up.
func AtLeast[T Number](p *T, min T) Range[T] {
	_, hi := limits[T]()
	return Range[T]{P: p, Min: min, Max: hi}
}

// Within is the Range of values from min to max, both included.
func Within[T Number](p *T, min, max T) Range[T] { return Range[T]{P: p, Min: min, Max: max} }

// Positive is the Range of values above 0.
func Positive[T Number](p *T) Range[T] {
	r := AtLeast(p, 0)
	r.Above = true
	return r
}

// Any is the Range of every value of T.
func Any[T Number](p *T) Range[T] {
	lo, hi := limits[T]()
	return Within(p, lo, hi)
}

// Var sets *r.P to value, its default, and defines r on fs as name.
func (r Range[T]) Var(fs *flag.FlagSet, name string, value T, usage string) {
	*r.P = value
	fs.Var(r, name, usage)
}

// Placeholder names the value in help: N, NUMBER or DURATION.
func (r Range[T]) Placeholder() string {
	switch kindOf[T]() {
	case kindDuration:
		return "DURATION"
	case kindFloat:
		return "NUMBER"
	}
	return "N"
}

// String is the value as Set reads it back.
func (r Range[T]) String() string {
	if r.P == nil {
		return ""
	}
	return format(*r.P)
}

// Set parses s and stores it when it is within the bounds.
func (r Range[T]) Set(s string) error {
	v, err := parseNumber[T](s)
	if err != nil && !errors.Is(err, errNumber) {
		return err // a duration without its unit says so
	}
	if err != nil || !r.contains(v) {
		return errors.New(r.Want() + r.beyond(s))
	}
	*r.P = v
	return nil
}

// beyond is what Set adds to Want for a whole number beyond the largest
// value of T, which Want, without an upper bound, does not name: ", at
// most 2147483647".
func (r Range[T]) beyond(s string) string {
	_, hi := limits[T]()
	if v, err := parseMetric(s); err == nil && kindOf[T]() == kindWhole && r.Max == hi && v >= float64(hi) {
		return ", at most " + format(hi)
	}
	return ""
}

// contains reports whether v is within r's bounds (a NaN never is).
func (r Range[T]) contains(v T) bool {
	if v != v { // NaN
		return false
	}
	return v >= r.Min && v <= r.Max && !(r.Above && v == r.Min)
}

// Want says what r accepts: "want a whole number of at least 1", "want a
// number from 0 to 1", "want a duration above 0 such as 10s, 500ms or 2m".
func (r Range[T]) Want() string {
	kind := kindOf[T]()
	w := "want " + kindNames[kind] + r.bounds()
	if kind == kindDuration {
		w += " such as 10s, 500ms or 2m"
	}
	return w
}

// bounds is the part of Want after the kind: "", " of at least 1", " from
// 0 to 65535", " above 0".
func (r Range[T]) bounds() string {
	lo, hi := limits[T]()
	if !signed[T]() {
		lo = 1 // an unsigned type's 0 is said: "of at least 0"
	}
	switch {
	case r.Above && r.Max == hi:
		return " above " + formatBound(r.Min)
	case r.Above:
		return " above " + formatBound(r.Min) + " and at most " + formatBound(r.Max)
	case r.Min == lo && r.Max == hi:
		return ""
	case r.Max == hi:
		return " of at least " + formatBound(r.Min)
	case r.Min == lo:
		return " of at most " + formatBound(r.Max)
	}
	return " from " + formatBound(r.Min) + " to " + formatBound(r.Max)
}

// kind is how a Range's values are written.
type kind int

const (
	kindWhole kind = iota
	kindFloat
	kindDuration
)

var kindNames = [...]string{kindWhole: "a whole number", kindFloat: "a number", kindDuration: "a duration"}

func kindOf[T Number]() kind {
	var zero T
	switch any(zero).(type) {
	case time.Duration:
		return kindDuration
	case float64:
		return kindFloat
	}
	if one := T(1); one/2 != 0 { // a float type of another name
		return kindFloat
	}
	return kindWhole
}

// signed reports whether the whole type T has negative values.
func signed[T Number]() bool {
	var zero T
	return zero-1 < 0
}

// limits are the least and the largest values of T.
func limits[T Number]() (lo, hi T) {
	if kindOf[T]() == kindFloat {
		return T(math.Inf(-1)), T(math.Inf(1))
	}
	bits := 8 * unsafe.Sizeof(lo)
	if !signed[T]() {
		var max uint64 = math.MaxUint64 >> (64 - bits)
		return 0, T(max)
	}
	var max int64 = math.MaxInt64 >> (64 - bits)
	return T(-max - 1), T(max)
}

// errNumber is returned by parseNumber for text that is no value of T.
var errNumber = errors.New("not a number")

// parseNumber reads s as a value of T: a duration with a unit, a number,
// or a whole number (exactly when it has no suffix).
func parseNumber[T Number](s string) (T, error) {
	switch kindOf[T]() {
	case kindDuration:
		d, err := parseDuration(s)
		return T(d), err
	case kindFloat:
		v, err := parseMetric(s)
		return T(v), err
	}
	t := strings.TrimSpace(s)
	bits := int(8 * unsafe.Sizeof(T(0)))
	if signed[T]() {
		if i, err := strconv.ParseInt(t, 10, bits); err == nil {
			return T(i), nil
		}
	} else if u, err := strconv.ParseUint(t, 10, bits); err == nil {
		return T(u), nil
	}
	v, err := parseMetric(s) // a suffix: "10k", "1.5M"
	lo, hi := limits[T]()
	// float64(hi) rounds up to a power of two, which T cannot hold.
	if err != nil || v != math.Trunc(v) || v < float64(lo) || v >= float64(hi) {
		return 0, errNumber
	}
	return T(v), nil
}

// parseDuration reads a duration that has a unit ("0" alone may go
// without), refusing a bare number with the spellings it might have meant.
func parseDuration(s string) (time.Duration, error) {
	if _, err := strconv.ParseFloat(s, 64); err == nil && s != "0" {
		return 0, fmt.Errorf("needs a unit: %ss, %sms or %sus", s, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errNumber
	}
	return d, nil
}

// parseMetric parses a finite number with an optional k, M or G suffix
// (wrk's scan_metric: "20k" is 20000). The suffix shifts the decimal exponent
// rather than multiplying, so that "1.1k" is 1100, not 1100.0000000000002.
func parseMetric(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if n := len(t); n > 1 && !strings.ContainsAny(t, "eEpPxX") {
		if exp, ok := map[byte]string{'k': "e3", 'K': "e3", 'm': "e6", 'M': "e6", 'g': "e9", 'G': "e9"}[t[n-1]]; ok {
			t = t[:n-1] + exp
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errNumber
	}
	return v, nil
}

// format writes v as Set reads it back.
func format[T Number](v T) string {
	switch kindOf[T]() {
	case kindDuration:
		return time.Duration(v).String()
	case kindFloat:
		return strconv.FormatFloat(float64(v), 'g', -1, 64)
	}
	if signed[T]() {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatUint(uint64(v), 10)
}

// formatBound writes a bound in Want: as format, but a zero duration is
// "0", not "0s".
func formatBound[T Number](v T) string {
	if v == 0 {
		return "0"
	}
	return format(v)
}

// Metric is a number flag with an optional k/M/G suffix ("20k") that
// records whether it was given, so that a command can tell an explicit
// value from the flag's absence (-R: a fixed rate or closed loop). Its
// default is "not given": String is "" until Set.
type Metric struct {
	P     *float64
	Given *bool
	// Positive refuses a value that is not above 0; without it any finite
	// number is accepted.
	Positive bool
	// Max, when above 0, refuses a larger value.
	Max float64
}

// Placeholder names the value in help.
func (f Metric) Placeholder() string { return "N" }

// String is the value, "" when not given.
func (f Metric) String() string {
	if f.P == nil || f.Given == nil || !*f.Given {
		return ""
	}
	return format(*f.P)
}

// Set parses s (k, M, G suffixes) and marks the flag given.
func (f Metric) Set(s string) error {
	var v float64
	r := Any(&v)
	if f.Positive {
		r = Positive(&v)
	}
	if f.Max > 0 {
		r.Max = f.Max
	}
	if err := r.Set(s); err != nil {
		return fmt.Errorf("%w (k, M, G suffixes allowed)", err)
	}
	*f.P, *f.Given = v, true
	return nil
}

// MetricVar defines a Metric flag on fs under each of names; it starts
// not given, at 0.
func MetricVar(fs *flag.FlagSet, p *float64, given *bool, names []string, usage string) {
	*p, *given = 0, false
	for _, n := range names {
		fs.Var(Metric{P: p, Given: given}, n, usage)
	}
}

// MaxCount is the largest value of a CountVar flag: an int32's, so that a
// conversion to one cannot change a count silently.
const MaxCount = math.MaxInt32

// CountVar defines a count flag on fs under each of names, with value as
// its default: a whole number within an int32's range, k, M and G
// suffixes allowed ("-c 10k"). A command narrows it to the counts it
// accepts (Narrow).
func CountVar(fs *flag.FlagSet, p *int, names []string, value int, usage string) {
	*p = value
	for _, n := range names {
		fs.Var(Within(p, math.MinInt32, MaxCount), n, usage)
	}
}

// Narrow makes each flag of fs named in names take v instead of its own
// value, so that a command accepts less than the role that registered the
// flags (a load generator's -t takes any count; spindle load, 1 or more)
// and refuses the rest at parse time with what is valid. v must write
// where the flags' own value writes (Within(&f.Threads, 1, MaxCount) for
// a flag registered on &f.Threads); a name fs lacks is left alone.
func Narrow(fs *flag.FlagSet, v flag.Value, names ...string) {
	for _, n := range names {
		if f := fs.Lookup(n); f != nil {
			f.Value = v
		}
	}
}

// MaxPort is the largest TCP port, the upper bound of every port flag.
const MaxPort = 65535
