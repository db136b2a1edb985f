// Package load is spindle's HTTP/1.1 load generator: wrk2's equal or better.
// It speaks HTTPS too (TLS 1.2 and 1.3 through crypto/tls, run as a
// coroutine per connection on the same event loops: see tls.go).
//
// Each load thread is an event loop on its own locked OS thread with its own
// epoll instance, optionally pinned to a CPU. Connections are spread over the
// threads evenly. With a rate (Options.Rate), every connection follows its own
// schedule of intended send times, waited for with nanosecond epoll timeouts;
// corrected latency runs from the intended send time (no coordinated
// omission), uncorrected latency from the actual send. Without a rate, the
// generator runs closed loop at maximum throughput, like wrk.
//
// Every intended request is accounted for: completed (by status class),
// failed (connect, read, write, timeout, parse), in flight at the end, or not
// sent by the end; the parts sum exactly to Result.Intended.
package load

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/latency"
)

// Defaults, reused as the spindle load flag defaults (wrk2's where it has one).
const (
	DefaultThreads     = 2
	DefaultConnections = 10
	DefaultDuration    = 10 * time.Second
	DefaultTimeout     = 2 * time.Second
	DefaultMethod      = "GET"
	// DefaultSpin is how long before an intended send time a load thread
	// stops sleeping in epoll and polls instead, to send on time despite
	// the kernel's wake-up latency.
	DefaultSpin = 0 * time.Microsecond
	// DefaultInterval is the length of an interval histogram (HdrHistogram
	// interval logs are conventionally per second).
	DefaultInterval = time.Second
	// MaxPipeline bounds Options.Pipeline (TechEmpower pipelines 16).
	MaxPipeline = 1024
	// MaxRate bounds Options.Rate, requests/s: one request per nanosecond.
	// The schedule's clock counts whole nanoseconds, so above it intended
	// send times collide, and it is a thousand times what one host's
	// HTTP/1.1 load generator sends (wrk's best runs: a few million
	// requests/s on many cores): a larger rate is a typo (1e20 for 1e4),
	// not a plan.
	MaxRate = 1e9
)

// Errors callers test with errors.Is.
var (
	// ErrBadOptions is wrapped by every Options validation error.
	ErrBadOptions = errors.New("bad load options")
	// ErrUnreachable is wrapped when the target refuses the first connection.
	ErrUnreachable = errors.New("target unreachable")
)

// Options configures a load run.
type Options struct {
	// URL is the target, http://host[:port]/path[?query] or https://...
	URL string
	// Mix, when not empty, is the requests to send instead of the URL's
	// path (the URL then gives the host alone: its path must be "/" or
	// empty, without a query): entry i's target gets Weight_i of every
	// sum(Weight) requests, in a fixed, evenly spread order, not at random
	// (smooth weighted round-robin over the intended send order of all
	// connections at a fixed rate, over each thread's requests closed
	// loop). At most MaxMixEntries entries, weights summing to at most
	// MaxMixWeight. Result.Mix has each entry's figures.
	Mix []MixEntry
	// Threads is the number of load threads (event loops, OS threads).
	Threads int
	// Connections is the total number of connections, at least Threads.
	Connections int
	// Duration is the measured window.
	Duration time.Duration
	// Warmup is a window before Duration whose requests are sent but
	// excluded from the histograms and counts.
	Warmup time.Duration
	// Rate is the total intended request rate in requests/s, at most
	// MaxRate; 0 runs closed loop (each connection sends its next request
	// as soon as the previous response arrives).
	Rate float64
	// Timeout bounds a request (from its send) and a connect (for https,
	// the connect and the TLS handshake together).
	Timeout time.Duration
	// Method is the request method ("GET", "POST", "HEAD", ...).
	Method string
	// Headers are extra request headers, "Name: value". A Host header
	// replaces the one derived from URL.
	Headers []string
	// Body is the request body, sent with a Content-Length header.
	Body string
	// CPUs pins the load threads: thread i runs on CPUs[i % len(CPUs)].
	// Empty: not pinned.
	CPUs cpu.Set
	// Spin is how long before an intended send time a thread polls instead
	// of sleeping (0: never spin).
	Spin time.Duration
	// Pipeline is how many requests a connection sends at once, closed
	// loop only (wrk's pipelining script, TechEmpower's plaintext test):
	// the next batch goes when the last response of the previous one has
	// arrived. Each response is a request in the counts and histograms,
	// its latency from the batch's send. 0 or 1: no pipelining; at most
	// MaxPipeline; no Mix.
	Pipeline int

	// StartAt, when not zero, is the instant the run starts (the warm-up
	// first), after the threads have connected nothing yet: load
	// generators on several hosts start together. An instant already past
	// starts at once.
	StartAt time.Time

	// IntervalSink, if not nil, receives the corrected latencies of every
	// Interval of the measured window (the last one may be shorter),
	// merged over the threads, in order, from one goroutine, while the run
	// goes on: the histogram (latency.NewNs: nanoseconds) of the requests
	// that completed in the interval, empty when none did. It is valid
	// only during the call. An error the sink returns stops the calls and
	// is returned by Run at the end (the run itself goes on).
	IntervalSink func(start, end time.Time, h *latency.Histogram) error
	// Interval is the length of IntervalSink's intervals; 0: DefaultInterval.
	Interval time.Duration

	// ProcRoot is the procfs whose stat the run reads for the host steal
	// (Result.HostSteal); "" means /proc.
	ProcRoot string

	// The TLS fields apply to https URLs only.

	// Insecure skips the verification of the server's certificate chain
	// and host name (self-signed certificates).
	Insecure bool
	// SNI is the server name sent in the handshake and verified against
	// the certificate; empty: the URL's host (none is sent for an IP
	// address, which is then verified against the certificate's IP SANs).
	SNI string
	// TLSResume lets reconnections resume an earlier session (session
	// tickets, a cache shared by the threads) instead of a full handshake.
	TLSResume bool
	// TLSMin and TLSMax bound the TLS version (tls.VersionTLS12 or
	// tls.VersionTLS13); 0: DefaultTLSMin, DefaultTLSMax.
	TLSMin, TLSMax uint16
}

// target is a parsed URL.
type target struct {
	addr     netip.AddrPort
	hostPort string // as written, for the Host header
	path     string // request target: path and query
	tls      bool   // https
	sni      string // TLS server name (https only)
}

func badOptions(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadOptions, fmt.Sprintf(format, args...))
}

// Validate checks o without contacting the target (the host name is
// resolved, though).
func (o *Options) Validate() error {
	_, err := o.validate()
	return err
}

func (o *Options) validate() (target, error) {
	switch {
	case o.Threads <= 0:
		return target{}, badOptions("threads must be at least 1 (got %d)", o.Threads)
	case o.Connections < o.Threads:
		return target{}, badOptions("connections (%d) must be at least threads (%d)", o.Connections, o.Threads)
	case o.Duration <= 0:
		return target{}, badOptions("duration must be positive (got %s)", o.Duration)
	case o.Warmup < 0:
		return target{}, badOptions("warmup must not be negative (got %s)", o.Warmup)
	case o.Rate < 0 || o.Rate != o.Rate:
		return target{}, badOptions("rate must be positive (got %g)", o.Rate)
	case o.Rate > MaxRate:
		return target{}, badOptions("rate %g is above %g requests/s (one per nanosecond)", o.Rate, float64(MaxRate))
	case o.Timeout <= 0:
		return target{}, badOptions("timeout must be positive (got %s)", o.Timeout)
	case o.Interval < 0 || (o.Interval > 0 && o.Interval < time.Millisecond):
		return target{}, badOptions("interval must be at least 1ms (got %s)", o.Interval)
	case o.Spin < 0:
		return target{}, badOptions("spin must not be negative (got %s)", o.Spin)
	case o.Pipeline < 0 || o.Pipeline > MaxPipeline:
		return target{}, badOptions("pipeline must be 1 to %d (got %d)", MaxPipeline, o.Pipeline)
	case o.Pipeline > 1 && o.Rate > 0:
		return target{}, badOptions("pipeline %d: pipelining runs closed loop only (no rate)", o.Pipeline)
	case o.Pipeline > 1 && len(o.Mix) > 0:
		return target{}, badOptions("pipeline %d: a pipeline sends the URL's request alone (no mix)", o.Pipeline)
	case o.Method != "" && strings.ContainsAny(o.Method, " \t\r\n"):
		return target{}, badOptions("method %q is not a token", o.Method)
	}
	lo, hi := cmp.Or(o.TLSMin, DefaultTLSMin), cmp.Or(o.TLSMax, DefaultTLSMax)
	for _, v := range []uint16{lo, hi} {
		if v != tls.VersionTLS12 && v != tls.VersionTLS13 {
			return target{}, badOptions("TLS version %#x is not supported (want TLS 1.2 or 1.3)", v)
		}
	}
	if lo > hi {
		return target{}, badOptions("TLS min %s is above TLS max %s", TLSVersionName(lo), TLSVersionName(hi))
	}
	if strings.ContainsAny(o.SNI, " \t\r\n/:") {
		return target{}, badOptions("SNI %q is not a host name", o.SNI)
	}
	for _, h := range o.Headers {
		if err := CheckHeader(h); err != nil {
			return target{}, badOptions("header %q: %v", h, err)
		}
	}
	t, err := parseTarget(o.URL)
	if err != nil {
		return t, err
	}
	if len(o.Mix) > 0 {
		if err := CheckMix(o.Mix); err != nil {
			return target{}, badOptions("%v", err)
		}
		if t.path != "/" {
			return target{}, badOptions("%s: with a request mix the URL gives the host alone (its path and query are the mix's), got target %s", o.URL, t.path)
		}
	}
	if t.tls && o.SNI != "" {
		t.sni = o.SNI
	}
	if !t.tls && (o.Insecure || o.SNI != "" || o.TLSResume) {
		return target{}, badOptions("%s: insecure, SNI and TLS resumption apply to https URLs only", o.URL)
	}
	return t, nil
}

// framingHeaders are the request headers the generator writes or acts on
// itself and so cannot take from Options.Headers, lower case, with why: a
// Content-Length without that body sent no request the server could
// answer (0 requests, exit 0).
var framingHeaders = map[string]string{
	"content-length":    "the load generator writes Content-Length itself, from the body (--body)",
	"transfer-encoding": "the load generator frames a body with Content-Length, never chunked",
	"expect":            "the load generator sends a body at once and reads no 100 Continue",
	"upgrade":           "the load generator speaks HTTP/1.1 alone and cannot switch protocols",
}

// CheckHeader checks one of Options.Headers: "Name: value" on one line,
// and no header that frames the request (Content-Length,
// Transfer-Encoding, Expect, Upgrade), which the generator cannot honour.
// The error says what is valid; it does not repeat h.
func CheckHeader(h string) error {
	name, _, ok := strings.Cut(h, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(h, "\r\n") {
		return errors.New(`want "Name: value" on one line`)
	}
	if why, ok := framingHeaders[strings.ToLower(name)]; ok {
		return fmt.Errorf("%s: leave %s out", why, name)
	}
	return nil
}

// parseTarget parses and resolves an http or https URL.
func parseTarget(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, badOptions("malformed URL %q: %v", raw, errors.Unwrap(err))
	}
	port := uint64(80)
	switch u.Scheme {
	case "http":
	case "https":
		port = 443
	case "":
		return target{}, badOptions("malformed URL %q: no scheme (want http://host[:port]/path)", raw)
	default:
		return target{}, badOptions("%s: scheme %q is not supported (want http or https)", raw, u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return target{}, badOptions("malformed URL %q: no host", raw)
	}
	if u.User != nil || u.Fragment != "" {
		return target{}, badOptions("malformed URL %q: user info and fragments are not allowed", raw)
	}
	if p := u.Port(); p != "" {
		port, err = strconv.ParseUint(p, 10, 16)
		if err != nil || port == 0 {
			return target{}, badOptions("malformed URL %q: bad port %q", raw, p)
		}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		ips, rerr := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
		if rerr != nil || len(ips) == 0 {
			return target{}, badOptions("%s: cannot resolve host %q: %v", raw, host, rerr)
		}
		ip = ips[0]
		for _, a := range ips { // prefer IPv4, as wrk does with getaddrinfo's order
			if a.Unmap().Is4() {
				ip = a
				break
			}
		}
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	t := target{addr: netip.AddrPortFrom(ip.Unmap(), uint16(port)), hostPort: u.Host, path: path, tls: u.Scheme == "https"}
	if t.tls {
		t.sni = host
	}
	return t, nil
}

// withDefaults fills unset fields that have a natural default.
func (o Options) withDefaults() Options {
	if o.Method == "" {
		o.Method = DefaultMethod
	}
	o.Interval = cmp.Or(o.Interval, DefaultInterval)
	o.TLSMin, o.TLSMax = cmp.Or(o.TLSMin, DefaultTLSMin), cmp.Or(o.TLSMax, DefaultTLSMax)
	return o
}

// buildRequests renders the request of each mix entry (the URL's alone
// without a mix) once; every send reuses the bytes.
func buildRequests(o Options, t target) [][]byte {
	if len(o.Mix) == 0 {
		// A pipeline's batch is the request Pipeline times, one write.
		return [][]byte{bytes.Repeat(buildRequest(o, t), max(1, o.Pipeline))}
	}
	reqs := make([][]byte, len(o.Mix))
	for i, e := range o.Mix {
		t.path = e.Target
		reqs[i] = buildRequest(o, t)
	}
	return reqs
}

// buildRequest renders the request to t.path.
func buildRequest(o Options, t target) []byte {
	var b strings.Builder
	b.WriteString(o.Method)
	b.WriteByte(' ')
	b.WriteString(t.path)
	b.WriteString(" HTTP/1.1\r\n")
	hasHost := false
	for _, h := range o.Headers {
		name, value, _ := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if strings.EqualFold(name, "host") {
			hasHost = true
		}
		b.WriteString(name)
		b.WriteString(": ")
		b.WriteString(strings.TrimSpace(value))
		b.WriteString("\r\n")
	}
	if !hasHost {
		b.WriteString("Host: ")
		b.WriteString(t.hostPort)
		b.WriteString("\r\n")
	}
	if o.Body != "" {
		b.WriteString("Content-Length: ")
		b.WriteString(strconv.Itoa(len(o.Body)))
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	b.WriteString(o.Body)
	return []byte(b.String())
}
