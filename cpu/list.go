package cpu

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxCPU bounds the CPU numbers a list may name. It matches the kernel's
// largest NR_CPUS configuration (CONFIG_MAXSMP), so a larger number is a typo.
const MaxCPU = 8192

// ErrBadList is wrapped by every CPU-list parse error.
var ErrBadList = errors.New("bad CPU list")

// Set is a sorted list of distinct CPU numbers.
type Set []int

// ParseList parses the kernel's CPU-list syntax ("0-3,8,10-11", also the
// stride form "0-15:2" the kernel accepts). Blank input is the empty set.
func ParseList(s string) (Set, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Set{}, nil
	}
	var out Set
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("%w %q: empty element", ErrBadList, s)
		}
		rng, stride := part, 1
		if i := strings.IndexByte(part, ':'); i >= 0 {
			v, err := strconv.Atoi(part[i+1:])
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("%w %q: bad stride in %q", ErrBadList, s, part)
			}
			rng, stride = part[:i], v
		}
		lo, hi := rng, rng
		if i := strings.IndexByte(rng, '-'); i >= 0 {
			lo, hi = rng[:i], rng[i+1:]
			if strings.TrimSpace(lo) == "" || strings.TrimSpace(hi) == "" { // "-1", "3-": not an empty CPU number
				return nil, fmt.Errorf("%w %q: %q is not a CPU number or range: CPUs count from 0, a range is FIRST-LAST", ErrBadList, s, part)
			}
		} else if stride != 1 {
			return nil, fmt.Errorf("%w %q: stride without a range in %q", ErrBadList, s, part)
		}
		a, err := parseCPU(lo)
		b := a
		if err == nil && hi != lo {
			b, err = parseCPU(hi)
		}
		if err != nil { // the first bad number only: the message stays one line
			return nil, fmt.Errorf("%w %q: %v", ErrBadList, s, err)
		}
		if b < a {
			return nil, fmt.Errorf("%w %q: descending range %q", ErrBadList, s, part)
		}
		for c := a; c <= b; c += stride {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func parseCPU(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	if v >= MaxCPU {
		return 0, fmt.Errorf("CPU %d is beyond the largest possible (%d)", v, MaxCPU-1)
	}
	return v, nil
}

// String formats the set in the kernel's list syntax, with ranges collapsed.
func (s Set) String() string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Contains reports whether c is in the set.
func (s Set) Contains(c int) bool {
	_, ok := slices.BinarySearch(s, c)
	return ok
}

// Intersect returns the CPUs in both sets.
func (s Set) Intersect(o Set) Set {
	out := Set{}
	for _, c := range s {
		if o.Contains(c) {
			out = append(out, c)
		}
	}
	return out
}

// Minus returns the CPUs of s that are not in o.
func (s Set) Minus(o Set) Set {
	out := Set{}
	for _, c := range s {
		if !o.Contains(c) {
			out = append(out, c)
		}
	}
	return out
}
