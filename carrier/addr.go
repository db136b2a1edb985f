package carrier

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ErrHostName is returned (wrapped) by Group.Listen for an address whose
// host is a name other than "localhost": Listen runs no resolver, because
// a lookup may block, and Listen may be called from a carrier's task.
// Resolve the name first (net.DefaultResolver.LookupNetIP) and listen on
// the IP address. Task.Dial does resolve names, on an offloaded goroutine.
var ErrHostName = errors.New("host is a name, not an IP address: resolve it first")

// addrUse says what an address is parsed for; the rules differ only in
// the empty host and in names.
type addrUse uint8

const (
	forDial   addrUse = iota // Task.Dial
	forListen                // Group.Listen
)

// parseAddr is the one "host:port" parser of Task.Dial and Group.Listen.
//
// Both accept, after net.SplitHostPort:
//   - a port of decimal digits, 0 to 65535 (no service names such as
//     "http": their lookup reads /etc/services); Dial rejects port 0;
//   - an IP literal host, "1.2.3.4" or "[::1]"; an IPv4-mapped IPv6
//     address is unmapped (the socket is IPv4 then); zones ("%eth0") are
//     rejected because the socket address would drop them;
//   - "localhost" (any case), meaning 127.0.0.1 without a lookup.
//
// They differ in two points. An empty host (":8080") means 0.0.0.0 to
// Listen and is an error to Dial (dial 127.0.0.1:port for this machine).
// Any other name is an error to Listen (ErrHostName), while for Dial it
// is returned in name, with the port in ap and no address: Dial looks it
// up on an offloaded goroutine, so that no carrier thread blocks.
//
// Everything else, such as "127.0.0.1" (no port), "1.2.3.4:99999" or
// "::1:80" (an IPv6 host needs brackets), is an error.
func parseAddr(addr string, use addrUse) (ap netip.AddrPort, name string, err error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, "", err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return netip.AddrPort{}, "", fmt.Errorf("address %q: port %q is not a number from 0 to 65535", addr, portStr)
	}
	if port == 0 && use == forDial {
		return netip.AddrPort{}, "", fmt.Errorf("address %q: cannot dial port 0", addr)
	}
	switch {
	case host == "":
		if use == forDial {
			return netip.AddrPort{}, "", fmt.Errorf("address %q: missing host (dial 127.0.0.1:%d for this machine)", addr, port)
		}
		return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(port)), "", nil
	case strings.EqualFold(host, "localhost"):
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port)), "", nil
	}
	ip, err := netip.ParseAddr(host)
	switch {
	case err == nil && ip.Zone() != "":
		return netip.AddrPort{}, "", fmt.Errorf("address %q: IPv6 zones are not supported", addr)
	case err == nil:
		return netip.AddrPortFrom(ip.Unmap(), uint16(port)), "", nil
	case looksLikeIP(host):
		return netip.AddrPort{}, "", fmt.Errorf("address %q: %w", addr, err)
	case use == forListen:
		return netip.AddrPort{}, "", fmt.Errorf("address %q: %w", addr, ErrHostName)
	}
	return netip.AddrPortFrom(netip.Addr{}, uint16(port)), host, nil
}

// looksLikeIP reports whether a host that did not parse as an IP address
// was meant as one (it has a colon, or only digits and dots), so that the
// caller gets netip's reason instead of a failed name lookup.
func looksLikeIP(host string) bool {
	return strings.Trim(host, "0123456789.") == "" || strings.Contains(host, ":")
}
