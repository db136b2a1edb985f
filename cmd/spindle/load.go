package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/slo"
)

func init() {
	register(command{
		name:    "load",
		summary: "generate HTTP load at a fixed rate (coordinated-omission corrected) or closed loop, wrk2-style",
		run:     runLoad,
		flags:   func() *flagSet { fs, _ := loadFlags(); return fs },
	})
}

// loadConfig is what the load flags fill in.
type loadConfig struct {
	opts            load.Options
	rate            metricFlag
	threads, conns  metricFlag
	duration        time.Duration
	warmup          time.Duration
	timeout         time.Duration
	cpus            cpuSetFlag
	headers         stringsFlag
	latency, uncorr bool
	jsonPath, hgrm  string
	slo             string
	tlsMin, tlsMax  string
	hlog            string
	hlogInterval    time.Duration
	startAt         string
}

func loadFlags() (*flagSet, *loadConfig) {
	fs := newFlagSet("load", "URL", `Sends HTTP/1.1 requests to URL (http or https) and prints wrk2's report. With -R the
requests follow a fixed schedule and latency is corrected for coordinated
omission; without it the load is closed loop at maximum throughput, like wrk.
Counts take k/M suffixes (20k); durations need a unit (10s, 500ms, 2m).`)
	c := &loadConfig{}
	c.threads.v, c.conns.v = load.DefaultThreads, load.DefaultConnections
	c.threads.whole, c.conns.whole = true, true
	c.duration, c.timeout, c.hlogInterval = load.DefaultDuration, load.DefaultTimeout, load.DefaultInterval
	for _, n := range []string{"t", "threads"} {
		fs.Var(&c.threads, n, "load threads (event loops on their own OS threads)")
	}
	for _, n := range []string{"c", "connections"} {
		fs.Var(&c.conns, n, "total connections, spread evenly over the threads")
	}
	for _, n := range []string{"d", "duration"} {
		fs.Var(durationFlag{&c.duration}, n, "measured duration")
	}
	for _, n := range []string{"R", "rate"} {
		fs.Var(&c.rate, n, "total requests/s (absent: closed loop, maximum throughput)")
	}
	for _, n := range []string{"L", "latency"} {
		fs.BoolVar(&c.latency, n, false, "print the corrected latency distribution and spectrum")
	}
	for _, n := range []string{"U", "u_latency"} {
		fs.BoolVar(&c.uncorr, n, false, "also print the uncorrected latency distribution (implies --latency)")
	}
	for _, n := range []string{"H", "header"} {
		fs.Var(&c.headers, n, `request header "Name: value" (repeatable)`)
	}
	fs.Var(durationFlag{&c.timeout}, "timeout", "per-request and connect timeout")
	fs.StringVar(&c.opts.Method, "method", load.DefaultMethod, "request method")
	fs.StringVar(&c.opts.Body, "body", "", "request body (sent with Content-Length)")
	fs.Var(durationFlag{&c.warmup}, "warmup", "warm-up before the measured duration: sent, not recorded")
	fs.StringVar(&c.jsonPath, "json", "", "write the result as JSON to `FILE` (\"-\": stdout, the text report then goes to stderr)")
	fs.StringVar(&c.slo, "slo", "", "check `THRESHOLDS` at the end (\"p99<=10ms,errors<=0.1%,rps>=20000\"); exit 3 when any fails")
	fs.StringVar(&c.hgrm, "hgrm", "", "write `PREFIX`.corrected.hgrm and PREFIX.uncorrected.hgrm")
	fs.StringVar(&c.hlog, "hlog", "", "write the corrected latency of every --hlog-interval to `FILE` (HdrHistogram interval log, ns)")
	fs.Var(durationFlag{&c.hlogInterval}, "hlog-interval", "interval of --hlog")
	fs.StringVar(&c.startAt, "start-at", "", "start the run (warm-up first) at this `INSTANT` (RFC 3339, e.g. 2026-01-02T15:04:05.5Z) instead of at once: load generators on several hosts start together")
	fs.Var(&c.cpus, "cpuset", "pin the load threads to these CPUs (thread i on the i-th, round robin)")
	fs.durationVar(&c.opts.Spin, "spin", load.DefaultSpin, "poll instead of sleeping this long before each intended send")
	for _, n := range []string{"k", "insecure"} {
		fs.BoolVar(&c.opts.Insecure, n, false, "https: do not verify the server's certificate (self-signed certificates)")
	}
	fs.BoolVar(&c.opts.TLSResume, "tls-resume", false, "https: resume sessions on reconnection instead of full handshakes")
	fs.StringVar(&c.opts.SNI, "sni", "", "https: server `NAME` to send and verify instead of the URL's host")
	fs.StringVar(&c.tlsMin, "tls-min", load.TLSVersionName(load.DefaultTLSMin), "https: lowest TLS `VERSION` offered (1.2 or 1.3)")
	fs.StringVar(&c.tlsMax, "tls-max", load.TLSVersionName(load.DefaultTLSMax), "https: highest TLS `VERSION` offered (1.2 or 1.3)")
	fs.example(
		`spindle load -t2 -c100 -d30s -R20000 --latency http://127.0.0.1:8081/fruits`,
		`spindle load -R20k -d30s --slo 'p99<=10ms,errors<=0.1%' --json - http://127.0.0.1:8081/ > load.json`,
		`spindle load -k --hlog load.hlog https://127.0.0.1:8443/`,
	)
	return fs, c
}

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) (retErr error) {
	fs, c := loadFlags()
	pos, err := fs.parse(splitAttached(args), stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badInput("load: want exactly one URL, got %d arguments (try \"spindle help load\")", len(pos))
	}
	if err := checkCPUs("cpuset", c.cpus.set); err != nil {
		return err
	}
	o := c.opts
	o.URL = pos[0]
	o.Threads, o.Connections = int(c.threads.v), int(c.conns.v)
	o.Duration, o.Warmup, o.Timeout = c.duration, c.warmup, c.timeout
	o.Headers, o.CPUs = c.headers, c.cpus.set
	if c.rate.set {
		if c.rate.v <= 0 {
			return badInput("load: --rate must be positive (got %s); omit it for closed-loop load", c.rate.raw)
		}
		o.Rate = c.rate.v
	}
	for _, v := range []struct {
		name string
		s    string
		dst  *uint16
	}{{"tls-min", c.tlsMin, &o.TLSMin}, {"tls-max", c.tlsMax, &o.TLSMax}} {
		if *v.dst, err = load.ParseTLSVersion(v.s); err != nil {
			return badInput("load: --%s: %v", v.name, err)
		}
	}
	if c.startAt != "" {
		if o.StartAt, err = parseStartAt(c.startAt, time.Now()); err != nil {
			return badInput("load: --start-at: %v", err)
		}
	}
	var thresholds []slo.Threshold
	if c.slo != "" {
		if thresholds, err = slo.Parse(c.slo); err != nil {
			return badInput("load: --slo: %v", err)
		}
	}
	if c.hlogInterval < time.Millisecond { // 0 would silently mean the library's default
		return badInput("load: --hlog-interval %v: must be at least 1ms", c.hlogInterval)
	}
	if c.hlog != "" {
		o.Interval = c.hlogInterval
	}
	for _, f := range []struct{ name, path string }{{"json", c.jsonPath}, {"hgrm", c.hgrm}} {
		if err := checkOutFile(f.name, f.path); err != nil {
			return err
		}
	}
	if err := load.Preflight(ctx, o); err != nil {
		return asBadInput(err)
	}
	if c.hlog != "" {
		f, err := os.Create(c.hlog)
		if err != nil {
			return badInput("load: --hlog: %v", err)
		}
		defer f.Close()
		bw := bufio.NewWriter(f)
		hlog := latency.NewIntervalLog(bw)
		o.IntervalSink = func(start, end time.Time, h *latency.Histogram) error {
			if err := hlog.Write(start, end, h); err != nil {
				return err
			}
			return bw.Flush() // a reader (tail -f, a dashboard) sees each interval as it ends
		}
	}
	jsonOut := stdout
	if c.jsonPath == "-" { // stdout carries the JSON alone
		stdout = stderr
	}
	fmt.Fprintf(stdout, "Running %s test @ %s\n", durationWords(o.Duration), o.URL)
	fmt.Fprintf(stdout, "  %d threads and %d connections\n", o.Threads, o.Connections)

	var progress func(load.Progress)
	tty := isTerminal(stderr)
	if tty {
		progress = func(p load.Progress) {
			fmt.Fprintf(stderr, "\r  %6.1fs  sent %d  %.0f req/s  errors %d   ", p.Elapsed.Seconds(), p.Sent, p.Rate, p.Errors)
		}
	} else { // a CI log: started, a heartbeat every heartbeatEvery, finished
		plog := startProgressLog(stderr, "load", heartbeatEvery, heartbeatTick)
		plog.printf("started: %s at %s", durationWords(o.Duration), o.URL)
		progress = func(p load.Progress) {
			plog.setStatus(fmt.Sprintf("%.0fs elapsed, sent %d, %.0f req/s, errors %d", p.Elapsed.Seconds(), p.Sent, p.Rate, p.Errors))
		}
		defer func() {
			plog.setStatus("")
			plog.close()
			plog.printf("finished")
		}()
	}
	res, err := load.Run(ctx, o, progress)
	if tty {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if errors.Is(err, load.ErrBadOptions) || errors.Is(err, load.ErrUnreachable) {
		return asBadInput(err)
	}
	if res == nil {
		return err
	}
	if sinkErr := err; sinkErr != nil { // the --hlog sink failed: the result stands, the run fails (exit 1)
		defer func() { retErr = fmt.Errorf("load: --hlog %s: %w", c.hlog, sinkErr) }()
	}
	if thresholds != nil { // checked now, so that the JSON has the outcomes too
		f, err := res.SLOFigures()
		if err != nil {
			return err
		}
		res.SLO = slo.Check(thresholds, f)
	}
	if err := res.WriteText(stdout, c.latency || c.uncorr, c.uncorr); err != nil {
		return err
	}
	if c.jsonPath != "" {
		if err := writeJSONOut(c.jsonPath, jsonOut, res); err != nil {
			return err
		}
	}
	if c.hgrm != "" {
		if err := res.WriteHgrm(c.hgrm); err != nil {
			return err
		}
	}
	if res.SLO != nil {
		return reportSLO(stdout, "load", res.SLO)
	}
	return nil
}

// reportSLO prints every threshold's outcome and returns an error that exits
// 3 when any failed.
func reportSLO(w io.Writer, cmd string, outcomes []slo.Outcome) error {
	return sloFailure(cmd, printSLO(w, "SLO", outcomes), len(outcomes))
}

// splitAttached turns wrk's attached short options ("-t2", "-c100", "-d10s",
// "-R20k", "-HName: v") into separate arguments for the flag package.
func splitAttached(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.IndexByte("tcdRH", a[1]) >= 0 && a[2] != '=' {
			out = append(out, a[:2], a[2:])
			continue
		}
		out = append(out, a)
	}
	return out
}

// durationWords formats the test duration as wrk does ("10s", "2m"), with
// sub-second precision when the duration has it.
func durationWords(d time.Duration) string {
	if d%time.Second == 0 && d < time.Minute || d%time.Minute == 0 {
		if d < time.Minute {
			return fmt.Sprintf("%ds", int(d/time.Second))
		}
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return d.String()
}

// metricFlag is a number with an optional k/M/G suffix (wrk's scan_metric).
type metricFlag struct {
	v   float64
	set bool
	raw string
	// whole makes Set refuse values that are not whole counts ("-t 2.5"),
	// which would otherwise be truncated silently.
	whole bool
}

func (f *metricFlag) placeholder() string { return "N" }

func (f *metricFlag) String() string {
	if f == nil || (!f.set && f.v == 0) {
		return ""
	}
	return strconv.FormatFloat(f.v, 'f', -1, 64)
}

func (f *metricFlag) Set(s string) error {
	mult := 1.0
	t := strings.TrimSpace(s)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult, t = 1e3, t[:n-1]
		case 'm', 'M':
			mult, t = 1e6, t[:n-1]
		case 'g', 'G':
			mult, t = 1e9, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v != v {
		return fmt.Errorf("%q is not a number (k, M, G suffixes allowed)", s)
	}
	v *= mult
	if f.whole && (v != math.Trunc(v) || math.Abs(v) > math.MaxInt32) {
		return fmt.Errorf("%q is not a whole count", s)
	}
	f.v, f.set, f.raw = v, true, s
	return nil
}

// maxStartAhead bounds --start-at: an instant further ahead is a typo (a
// wrong date or zone), not a plan.
const maxStartAhead = time.Hour

// parseStartAt parses --start-at (RFC 3339 with a zone) against now.
func parseStartAt(s string, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want an RFC 3339 instant such as 2026-01-02T15:04:05.5Z", s)
	}
	if t.Sub(now) > maxStartAhead {
		return time.Time{}, fmt.Errorf("%s is more than %v ahead", s, maxStartAhead)
	}
	return t, nil
}
