package load

import (
	"flag"
	"io"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/internal/cliflag/cliflagtest"
)

// Flags -> Args -> parse gives the flags back; defaults give no argument.
// Args writes flags in the order of their first (shortest) names: -L, -R
// and -U come first.
func TestFlagsRoundTrip(t *testing.T) {
	d := DefaultFlags()
	tests := []struct {
		name string
		edit func(*Flags)
		args []string // nil: not checked, only the round trip
	}{
		{"defaults", func(*Flags) {}, []string{}},
		{"bench child", func(f *Flags) {
			f.Threads, f.Connections, f.Duration, f.Warmup = 4, 200, 30*time.Second, 5*time.Second
			f.Latency, f.JSON, f.CPUs, f.Rate, f.RateGiven = true, "-", cpu.Set{1, 2, 3}, 20000, true
			f.Hgrm, f.Hlog = "out/load", "out/load.hlog"
		}, []string{"--latency", "--rate", "20000", "--connections", "200", "--cpuset", "1-3", "--duration", "30s",
			"--hgrm", "out/load", "--hlog", "out/load.hlog", "--json", "-", "--threads", "4", "--warmup", "5s"}},
		{"rate zero given", func(f *Flags) { f.RateGiven = true }, []string{"--rate", "0"}},
		{"fractional rate", func(f *Flags) { f.Rate, f.RateGiven = 12.5, true }, []string{"--rate", "12.5"}},
		{"headers, request", func(f *Flags) {
			f.Headers = cliflag.Strings{"Host: a", "X-Y: z, w"}
			f.Method, f.Body, f.Uncorrected = "POST", "", true
		}, []string{"--header", "Host: a", "--header", "X-Y: z, w", "--u_latency", "--method", "POST"}},
		{"https", func(f *Flags) {
			f.Insecure, f.TLSResume, f.SNI, f.TLSMin, f.TLSMax = true, true, "example.com", "1.3", "1.3"
			f.Spin, f.Timeout = 50*time.Microsecond, 250*time.Millisecond
		}, []string{"--insecure", "--sni", "example.com", "--spin", "50µs", "--timeout", "250ms", "--tls-min", "1.3", "--tls-resume"}},
		{"mix", func(f *Flags) {
			f.Mix = Mix{{95, "/fruits"}, {5, "/block?kind=sleep&d=20ms"}, {1, "/a:b"}}
		}, []string{"--mix", "95:/fruits", "--mix", "5:/block?kind=sleep&d=20ms", "--mix", "1:/a:b"}},
		{"remote start", func(f *Flags) {
			f.StartAt, f.SLO, f.HlogInterval, f.Body = "2026-01-02T15:04:05.5Z", "p99<=10ms,errors<=0.1%", 100*time.Millisecond, "{}"
		}, nil},
	}
	for _, tc := range tests {
		f := d
		tc.edit(&f)
		cliflagtest.RoundTrip(t, tc.name, f, (*Flags).Register, tc.args)
	}
}

// wrk's short names and k/M suffixes parse as their long forms.
func TestFlagsShortNames(t *testing.T) {
	got := cliflagtest.Parse(t, (*Flags).Register, []string{"-t", "2", "-c", "10k", "-d", "2m", "-R", "1.5M", "-L", "-U", "-H", "A: b", "-k"})
	want := DefaultFlags()
	want.Threads, want.Connections, want.Duration, want.Rate, want.RateGiven = 2, 10000, 2*time.Minute, 1.5e6, true
	want.Latency, want.Uncorrected, want.Headers, want.Insecure = true, true, cliflag.Strings{"A: b"}, true
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// Bad values are refused by the flag set: not numbers, fractional counts,
// durations without units, bad CPU lists.
func TestFlagsRefuse(t *testing.T) {
	for _, args := range [][]string{
		{"-t", "2.5"}, {"-c", "many"}, {"-R", "fast"}, {"-d", "10"}, {"--cpuset", "3-1"}, {"--timeout", "soon"},
		{"--mix", "0:/"}, {"--mix", "5:fruits"}, {"--mix", "/fruits"}, {"--mix", "60000:/a", "--mix", "6000:/b"},
	} {
		var f Flags
		fs := flag.NewFlagSet("load", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.Register(fs)
		if err := fs.Parse(args); err == nil {
			t.Errorf("%q: parsed to %+v, want an error", args, f)
		}
	}
}

func FuzzFlagsRoundTrip(f *testing.F) {
	f.Add(2, 10, 20000.0, true, int64(time.Second), "A: b", "GET", "x.json", "0-3", "1.2")
	f.Add(-1, 1<<30, 0.0, false, int64(-5), "", "", "", "", "")
	f.Add(0, 0, -1e-300, true, int64(0), "--rate", "-", "-", "7", "1.3")
	f.Add(1, 1, 1.0, true, int64(time.Second), "5:/block?kind=sleep&d=20ms", "HEAD", "", "", "")
	f.Fuzz(func(t *testing.T, threads, conns int, rate float64, given bool, dur int64, header, method, path, cpus, tls string) {
		if math.IsNaN(rate) {
			return // NaN equals nothing, not even itself: DeepEqual cannot compare it
		}
		set, err := cpu.ParseList(cpus)
		if err != nil {
			return // not a CPU list: the flag refuses it (cpu's fuzzer)
		}
		fl := DefaultFlags()
		fl.Threads, fl.Connections, fl.Duration, fl.CPUs = threads, conns, time.Duration(dur), set
		if given {
			fl.Rate, fl.RateGiven = rate, true
		}
		if int64(threads) != int64(int32(threads)) || int64(conns) != int64(int32(conns)) {
			return // beyond an int32: the count flags refuse it
		}
		if header != "" && CheckHeader(header) == nil { // -H refuses another as it parses it
			fl.Headers = cliflag.Strings{header, header}
		}
		if e, err := ParseMixEntry(header); err == nil {
			fl.Mix = Mix{e, {1, "/"}} // the entry and another,
			if e.Weight == MaxMixWeight {
				fl.Mix = Mix{e} // unless its weight leaves no room for one
			}
		}
		fl.Method, fl.JSON, fl.Hlog, fl.TLSMin = method, path, path, tls
		if len(set) == 0 {
			fl.CPUs = nil // the empty list is the default, no set
		}
		cliflagtest.RoundTrip(t, "fuzz", fl, (*Flags).Register, nil)
	})
}
