// Package remote places spindle's roles on other hosts through the system's
// OpenSSH client: one shared connection per host (ControlMaster, a control
// socket in a per-run temporary directory), the user's ~/.ssh/config
// honoured (or --ssh-config FILE), BatchMode so that nothing prompts.
//
// Before a run, Prepare reaches each host, checks its OS and architecture
// against this binary's, copies the binary by content hash into
// ~/.cache/spindle/<sha256>/spindle (skipped when present), probes its CPUs
// and tools, and estimates its clock offset NTP-style. During a run every
// remote process runs under "spindle remote exec" (Exec), which kills its
// child's process group when its standard input closes, so remote children
// die with their SSH session; a cleanup pass (Leftovers) confirms nothing
// tagged with the run is left on the host.
package remote

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ErrBadDest is wrapped by every destination parse error.
var ErrBadDest = errors.New("bad ssh destination")

// Dest is an SSH destination: [user@]host[:port]. An empty User or a zero
// Port leaves them to ssh's configuration.
type Dest struct {
	User string
	Host string
	Port int
}

// ParseDest parses [user@]host[:port]; an IPv6 address with a port is
// written in brackets ([::1]:22). Host names and users that ssh would read
// as options (a leading '-') or that hold spaces or shell characters are
// rejected.
func ParseDest(s string) (Dest, error) {
	var d Dest
	rest := s
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		d.User, rest = rest[:i], rest[i+1:]
		if d.User == "" {
			return Dest{}, fmt.Errorf("%w %q: empty user before '@'", ErrBadDest, s)
		}
		if err := checkWord(d.User, "user"); err != nil {
			return Dest{}, fmt.Errorf("%w %q: %w", ErrBadDest, s, err)
		}
	}
	host, port := rest, ""
	switch {
	case strings.HasPrefix(rest, "["):
		h, p, err := net.SplitHostPort(rest)
		if err != nil {
			end := strings.IndexByte(rest, ']')
			if end < 0 || end != len(rest)-1 {
				return Dest{}, fmt.Errorf("%w %q: %v", ErrBadDest, s, err)
			}
			h = rest[1:end] // "[::1]" without a port
		}
		host, port = h, p
	case strings.Count(rest, ":") == 1:
		i := strings.IndexByte(rest, ':')
		host, port = rest[:i], rest[i+1:]
		if port == "" {
			return Dest{}, fmt.Errorf("%w %q: empty port after ':'", ErrBadDest, s)
		}
	}
	if host == "" {
		return Dest{}, fmt.Errorf("%w %q: empty host", ErrBadDest, s)
	}
	if err := checkWord(host, "host"); err != nil {
		return Dest{}, fmt.Errorf("%w %q: %w", ErrBadDest, s, err)
	}
	d.Host = host
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return Dest{}, fmt.Errorf("%w %q: port %q: want 1 to 65535", ErrBadDest, s, port)
		}
		d.Port = n
	}
	return d, nil
}

// ParseDests parses a comma-separated list of destinations; each must be
// distinct.
func ParseDests(s string) ([]Dest, error) {
	var ds []Dest
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		d, err := ParseDest(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		if seen[d.String()] {
			return nil, fmt.Errorf("%w %q: listed twice", ErrBadDest, d)
		}
		seen[d.String()] = true
		ds = append(ds, d)
	}
	return ds, nil
}

// checkWord accepts what ssh takes as a user or host name: letters, digits
// and ".-_:%" (IPv6 addresses and their zones), not starting with '-'.
func checkWord(s, what string) error {
	if strings.HasPrefix(s, "-") {
		return fmt.Errorf("%s %q starts with '-'", what, s)
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-_:%", c)
		if !ok {
			return fmt.Errorf("%s %q: character %q not allowed", what, s, c)
		}
	}
	return nil
}

// String is the destination as the user writes it.
func (d Dest) String() string {
	s := d.Host
	if d.Port != 0 {
		s = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
	} else if strings.Contains(d.Host, ":") {
		s = "[" + d.Host + "]"
	}
	if d.User != "" {
		s = d.User + "@" + s
	}
	return s
}

// Label is the destination as a file name: the host and the port when not
// the default ("h2", "h2_2222", "10.0.0.2").
func (d Dest) Label() string {
	s := strings.NewReplacer(":", "_", "%", "_").Replace(d.Host)
	if d.Port != 0 {
		s += "_" + strconv.Itoa(d.Port)
	}
	return s
}

// args are ssh's options for the destination, then the host.
func (d Dest) args() []string {
	var a []string
	if d.User != "" {
		a = append(a, "-l", d.User)
	}
	if d.Port != 0 {
		a = append(a, "-p", strconv.Itoa(d.Port))
	}
	return append(a, d.Host)
}
