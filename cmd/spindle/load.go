package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/internal/cliflag"
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

func loadFlags() (*flagSet, *load.Flags) {
	fs := newFlagSet("load", "URL", `Sends HTTP/1.1 requests to URL (http or https) and prints wrk2's report. With -R the
requests follow a fixed schedule and latency is corrected for coordinated
omission; without it the load is closed loop at maximum throughput, like wrk.
Counts take k/M suffixes (20k); durations need a unit (10s, 500ms, 2m).`)
	c := &load.Flags{}
	c.Register(fs.FlagSet)
	// The load generator's flags take any value of their kind; the command
	// takes what load.Options accepts, refused at parse time with what is
	// valid.
	cliflag.Narrow(fs.FlagSet, cliflag.Within(&c.Threads, 1, cliflag.MaxCount), "t", "threads")
	cliflag.Narrow(fs.FlagSet, cliflag.Within(&c.Connections, 1, cliflag.MaxCount), "c", "connections")
	cliflag.Narrow(fs.FlagSet, cliflag.Positive(&c.Duration), "d", "duration")
	cliflag.Narrow(fs.FlagSet, cliflag.Metric{P: &c.Rate, Given: &c.RateGiven, Positive: true, Max: load.MaxRate}, "R", "rate")
	cliflag.Narrow(fs.FlagSet, cliflag.Positive(&c.Timeout), "timeout")
	cliflag.Narrow(fs.FlagSet, cliflag.AtLeast(&c.Warmup, 0), "warmup")
	cliflag.Narrow(fs.FlagSet, cliflag.AtLeast(&c.Spin, 0), "spin")
	cliflag.Narrow(fs.FlagSet, cliflag.Within(&c.Pipeline, 1, load.MaxPipeline), "pipeline")
	// 0 would silently mean the library's default interval.
	cliflag.Narrow(fs.FlagSet, cliflag.AtLeast(&c.HlogInterval, time.Millisecond), "hlog-interval")
	fs.example(
		`spindle load -t2 -c100 -d30s -R20000 --latency http://127.0.0.1:8081/fruits`,
		`spindle load -R20k -d30s --slo 'p99<=10ms,errors<=0.1%' --json - http://127.0.0.1:8081/ > load.json`,
		`spindle load -k --hlog load.hlog https://127.0.0.1:8443/`,
		`spindle load -R500 -d30s --mix 95:/fruits --mix '5:/block?kind=sleep&d=20ms' http://127.0.0.1:8081/`,
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
	if err := checkCPUs("cpuset", c.CPUs); err != nil {
		return err
	}
	o := load.Options{URL: pos[0], Threads: c.Threads, Connections: c.Connections,
		Duration: c.Duration, Warmup: c.Warmup, Timeout: c.Timeout, Headers: c.Headers, CPUs: c.CPUs, Mix: c.Mix,
		Method: c.Method, Body: c.Body, Spin: c.Spin, Insecure: c.Insecure, TLSResume: c.TLSResume, SNI: c.SNI,
		Pipeline: c.Pipeline}
	if c.RateGiven {
		o.Rate = c.Rate
	}
	if err := checkTLSFlags(fs, o.URL); err != nil {
		return err
	}
	for _, v := range []struct {
		name string
		s    string
		dst  *uint16
	}{{"tls-min", c.TLSMin, &o.TLSMin}, {"tls-max", c.TLSMax, &o.TLSMax}} {
		if *v.dst, err = load.ParseTLSVersion(v.s); err != nil {
			return badInput("load: --%s %q: want 1.2 or 1.3", v.name, v.s)
		}
	}
	if c.StartAt != "" {
		if o.StartAt, err = parseStartAt(c.StartAt, time.Now()); err != nil {
			return badInput("load: --start-at: %v", err)
		}
	}
	var thresholds []slo.Threshold
	if c.SLO != "" {
		if thresholds, err = slo.Parse(c.SLO); err != nil {
			return badInput("load: --slo: %v", err)
		}
	}
	if c.Hlog != "" {
		o.Interval = c.HlogInterval
	}
	jsonOut, stdout, err := jsonOutput(c.JSON, stdout, stderr)
	if err != nil {
		return err
	}
	if err := checkOutFile("hgrm", c.Hgrm); err != nil {
		return err
	}
	if err := load.Preflight(ctx, o); err != nil {
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			// Also an absurdly small --timeout's doing: say which bound it was.
			return badInput("load: %v (no connection within --timeout %v)", err, o.Timeout)
		}
		return asBadInput(err)
	}
	if c.Hlog != "" {
		f, err := os.Create(c.Hlog)
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
		defer func() { retErr = fmt.Errorf("load: --hlog %s: %w", c.Hlog, sinkErr) }()
	}
	if thresholds != nil { // checked now, so that the JSON has the outcomes too
		f, err := res.SLOFigures()
		if err != nil {
			return err
		}
		res.SLO = slo.Check(thresholds, f)
	}
	if err := res.WriteText(stdout, c.Latency || c.Uncorrected, c.Uncorrected); err != nil {
		return err
	}
	if c.JSON != "" {
		if err := writeJSONOut(c.JSON, jsonOut, res); err != nil {
			return err
		}
	}
	if c.Hgrm != "" {
		if err := res.WriteHgrm(c.Hgrm); err != nil {
			return err
		}
	}
	if res.SLO != nil {
		return reportSLO(stdout, "load", res.SLO)
	}
	return nil
}

// tlsFlags are load's flags that apply to https URLs only, as typed.
var tlsFlags = []string{"k", "insecure", "sni", "tls-resume", "tls-min", "tls-max"}

// checkTLSFlags refuses the https flags given with an http URL, naming
// every one given.
func checkTLSFlags(fs *flagSet, rawURL string) error {
	if u, err := url.Parse(rawURL); err != nil || !strings.EqualFold(u.Scheme, "http") {
		return nil // https, or a URL the options refuse with their reason
	}
	var given []string
	for _, f := range tlsFlags {
		if fs.given(f) {
			given = append(given, dashes(f))
		}
	}
	switch len(given) {
	case 0:
		return nil
	case 1:
		return badInput("load: %s applies to https URLs only, not %s", given[0], rawURL)
	}
	return badInput("load: %s apply to https URLs only, not %s", strings.Join(given, ", "), rawURL)
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
	if t.Before(now) { // at once would lose the other hosts' start: say so
		return time.Time{}, fmt.Errorf("%s has passed (now %s): load generators on several hosts would not start together; want an instant ahead",
			s, now.UTC().Format(time.RFC3339Nano))
	}
	return t, nil
}
