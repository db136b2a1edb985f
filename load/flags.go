package load

import (
	"flag"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
)

// Flags are the load role's options as "spindle load" spells them: the one
// definition of its flags (Register) and of its argv (Args), which the
// spindle command parses and checks into Options and the bench runner
// writes for its child. The URL is the command's one positional argument,
// not a flag: Args leaves it to the caller to append. Text fields hold the
// flags' words unchecked; the paths are the output files ("" none).
type Flags struct {
	// Threads are the load threads; Connections the connections over all
	// of them.
	Threads, Connections int
	// Rate is the total requests/s when RateGiven; without -R the load is
	// closed loop (and Rate is 0). An explicit -R 0 gives RateGiven with
	// Rate 0, which the command refuses.
	Rate      float64
	RateGiven bool
	// Duration is the measured duration; Warmup precedes it unrecorded;
	// Timeout bounds one request and one connect.
	Duration, Warmup, Timeout time.Duration
	// Latency prints the corrected distribution; Uncorrected also the
	// uncorrected one.
	Latency, Uncorrected bool
	// Headers are request headers "Name: value".
	Headers cliflag.Strings
	// Method and Body are the request's method and body.
	Method, Body string
	// Mix is the request mix (Options.Mix), checked as it is parsed;
	// empty: the URL's path alone.
	Mix Mix
	// JSON is the path of the JSON result ("-": stdout); Hgrm the prefix of
	// the .hgrm files; Hlog the path of the interval log, one interval per
	// HlogInterval.
	JSON, Hgrm, Hlog string
	HlogInterval     time.Duration
	// SLO are the thresholds checked at the end (slo.Parse).
	SLO string
	// StartAt is the RFC 3339 instant to start at; "": at once.
	StartAt string
	// CPUs are the load threads' CPUs; empty: not pinned.
	CPUs cpu.Set
	// Spin is how long before each intended send a thread polls instead of
	// sleeping.
	Spin time.Duration
	// Pipeline is the requests a connection sends at once (closed loop).
	Pipeline int
	// Insecure, TLSResume, SNI, TLSMin and TLSMax are the https options
	// (TLSMin, TLSMax as ParseTLSVersion reads them).
	Insecure, TLSResume bool
	SNI, TLSMin, TLSMax string
}

// DefaultFlags are the flags' defaults: those of "spindle load URL" alone.
func DefaultFlags() Flags { return cliflag.Defaults((*Flags).Register) }

// Register defines the load generator's flags on fs (wrk's short names and
// long ones), each field set to its default.
func (f *Flags) Register(fs *flag.FlagSet) {
	cliflag.CountVar(fs, &f.Threads, []string{"t", "threads"}, DefaultThreads, "load threads (event loops on their own OS threads)")
	cliflag.CountVar(fs, &f.Connections, []string{"c", "connections"}, DefaultConnections, "total connections, spread evenly over the threads")
	for _, n := range []string{"d", "duration"} {
		cliflag.DurationVar(fs, &f.Duration, n, DefaultDuration, "measured duration")
	}
	cliflag.MetricVar(fs, &f.Rate, &f.RateGiven, []string{"R", "rate"}, "total requests/s (absent: closed loop, maximum throughput)")
	for _, n := range []string{"L", "latency"} {
		fs.BoolVar(&f.Latency, n, false, "print the corrected latency distribution and spectrum")
	}
	for _, n := range []string{"U", "u_latency"} {
		fs.BoolVar(&f.Uncorrected, n, false, "also print the uncorrected latency distribution (implies --latency)")
	}
	f.Headers = nil
	for _, n := range []string{"H", "header"} {
		fs.Var(headerFlag{&f.Headers}, n, `request header "Name: value" (repeatable; not Content-Length, Transfer-Encoding, Expect or Upgrade, which the generator sets or cannot honour)`)
	}
	cliflag.DurationVar(fs, &f.Timeout, "timeout", DefaultTimeout, "per-request and connect timeout")
	fs.StringVar(&f.Method, "method", DefaultMethod, "request method")
	fs.StringVar(&f.Body, "body", "", "request body (sent with Content-Length)")
	f.Mix = nil
	fs.Var(&f.Mix, "mix", "request mix entry, repeatable: TARGET (a path and query on the URL's host) gets WEIGHT of every sum-of-weights requests; the URL then gives the host alone")
	cliflag.DurationVar(fs, &f.Warmup, "warmup", 0, "warm-up before the measured duration: sent, not recorded")
	fs.StringVar(&f.JSON, "json", "", "write the result as JSON to `FILE` (\"-\": stdout, the text report then goes to stderr)")
	fs.StringVar(&f.SLO, "slo", "", "check `THRESHOLDS` at the end (\"p99<=10ms,errors<=0.1%,rps>=20000\"); exit 3 when any fails")
	fs.StringVar(&f.Hgrm, "hgrm", "", "write `PREFIX`.corrected.hgrm and PREFIX.uncorrected.hgrm")
	fs.StringVar(&f.Hlog, "hlog", "", "write the corrected latency of every --hlog-interval to `FILE` (HdrHistogram interval log, ns)")
	cliflag.DurationVar(fs, &f.HlogInterval, "hlog-interval", DefaultInterval, "interval of --hlog")
	fs.StringVar(&f.StartAt, "start-at", "", "start the run (warm-up first) at this `INSTANT` (RFC 3339, e.g. 2026-01-02T15:04:05.5Z) instead of at once: load generators on several hosts start together")
	cliflag.CPUsVar(fs, &f.CPUs, "cpuset", "pin the load threads to these CPUs (thread i on the i-th, round robin)")
	cliflag.DurationVar(fs, &f.Spin, "spin", DefaultSpin, "poll instead of sleeping this long before each intended send")
	cliflag.CountVar(fs, &f.Pipeline, []string{"pipeline"}, 1, "requests each connection sends at once, closed loop only (wrk's pipeline script; TechEmpower's plaintext sends 16); the next batch goes when its last response is in")
	for _, n := range []string{"k", "insecure"} {
		fs.BoolVar(&f.Insecure, n, false, "https: do not verify the server's certificate (self-signed certificates)")
	}
	fs.BoolVar(&f.TLSResume, "tls-resume", false, "https: resume sessions on reconnection instead of full handshakes")
	fs.StringVar(&f.SNI, "sni", "", "https: server `NAME` to send and verify instead of the URL's host")
	fs.StringVar(&f.TLSMin, "tls-min", TLSVersionName(DefaultTLSMin), "https: lowest TLS `VERSION` offered (1.2 or 1.3)")
	fs.StringVar(&f.TLSMax, "tls-max", TLSVersionName(DefaultTLSMax), "https: highest TLS `VERSION` offered (1.2 or 1.3)")
}

// Args is the inverse of Register: the flags of "spindle load" that give f
// (those that differ from their defaults), without the URL.
func (f Flags) Args() []string { return cliflag.Args(f, (*Flags).Register) }

// headerFlag is -H: each header is checked as it is given (CheckHeader),
// so that a refused one is answered with the flag as typed.
type headerFlag struct{ p *cliflag.Strings }

func (f headerFlag) String() string {
	if f.p == nil {
		return ""
	}
	return f.p.String()
}

func (f headerFlag) Set(s string) error {
	if err := CheckHeader(s); err != nil {
		return err
	}
	return f.p.Set(s)
}

// Values are the headers given, in order (cliflag.Repeated).
func (f headerFlag) Values() []string { return f.p.Values() }
