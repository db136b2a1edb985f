package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/rtmetrics"
	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/load"
)

// fakeEnv makes the test binary act as a spindle child (mock, serve or
// load) with just enough behaviour to exercise Run: health checks,
// /debug/carrier, /debug/runtime, load.json. The real children are tested end to end in
// cmd/spindle.
const fakeEnv = "BENCH_FAKE_CHILD"

// fakeFailEnv names a child that must fail at start ("serve").
const fakeFailEnv = "BENCH_FAKE_FAIL"

// fakeNoRuntimeEnv makes the fake server answer 404 to /debug/runtime, as
// an older spindle's does.
const fakeNoRuntimeEnv = "BENCH_FAKE_NO_RUNTIME"

// fakeZeroEnv makes the fake load generator complete no request.
const fakeZeroEnv = "BENCH_FAKE_ZERO"

// fakeErrorsEnv names a counter file: while it holds a number above 0, a
// fake load run counts it down and reports half its requests failed, a run
// that report.Check leaves out.
const fakeErrorsEnv = "BENCH_FAKE_ERRORS"

func TestMain(m *testing.M) {
	if dir := os.Getenv(fakeRunnerEnv); dir != "" {
		os.Exit(fakeRunner(dir))
	}
	if os.Getenv(fakeEnv) == "1" {
		os.Exit(fakeChild(os.Args[1], os.Args[2:]))
	}
	os.Exit(m.Run())
}

func fakeChild(name string, args []string) int {
	if os.Getenv(fakeFailEnv) == name {
		fmt.Fprintln(os.Stderr, "fake "+name+": boom")
		return 3
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if name == "load" { // the real flag set: the fake reads what "spindle load" would
		var lf load.Flags
		lfs := flag.NewFlagSet(name, flag.ContinueOnError)
		lf.Register(lfs)
		if err := lfs.Parse(args); err != nil {
			return 2
		}
		if lfs.NArg() != 1 {
			fmt.Fprintf(os.Stderr, "want one URL, got %q\n", lfs.Args())
			return 2
		}
		return fakeLoad(ctx, lf)
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	port := fs.Int("port", 0, "")
	admin := fs.Int("admin-port", 0, "")
	mode := fs.String("mode", "", "")
	for _, f := range []string{"think-time", "threads", "cpuset", "backend", "wait", "topology"} {
		fs.String(f, "", "")
	}
	fs.Bool("ws", false, "")
	fs.Bool("nplus1", false, "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	switch name {
	case "mock", "serve":
		mux := http.NewServeMux()
		mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "OK") })
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(*port))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go http.Serve(ln, mux)
		if *admin != 0 {
			amux := http.NewServeMux()
			if os.Getenv(fakeNoRuntimeEnv) != "1" {
				amux.HandleFunc("/debug/runtime", func(w http.ResponseWriter, _ *http.Request) {
					runtime.GC() // a cycle, forced, in every window
					snap, err := rtmetrics.Read()
					if err != nil {
						http.Error(w, err.Error(), http.StatusInternalServerError)
						return
					}
					json.NewEncoder(w).Encode(snap)
				})
			}
			if *mode != ModeNetHTTP {
				var cycles atomic.Uint64
				go func() {
					for ctx.Err() == nil {
						cycles.Add(10)
						time.Sleep(time.Millisecond)
					}
				}()
				amux.HandleFunc("/debug/carrier", func(w http.ResponseWriter, _ *http.Request) {
					c := cycles.Load()
					t := carrier.Telemetry{IOCycles: c, IOEvents: 2 * c, Drains: c, TasksRun: c}
					t.QueueDepth.Buckets[1] = c
					t.QueueDepth.Sum = c
					json.NewEncoder(w).Encode([]carrier.Telemetry{t})
				})
			}
			aln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(*admin))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			go http.Serve(aln, amux)
		}
		fmt.Println("listening on", ln.Addr())
		<-ctx.Done()
		return 0
	}
	return 2
}

// fakeLoad acts as "spindle load" with flags f: after the warm-up and the
// duration it writes a result of 1000 requests at the given rate to f.JSON.
func fakeLoad(ctx context.Context, f load.Flags) int {
	select {
	case <-ctx.Done():
		return 1
	case <-time.After(f.Warmup + f.Duration):
	}
	h := latency.New()
	for i := 1; i <= 1000; i++ {
		latency.Record(h, int64(i)*1000)
	}
	s, _ := latency.Summarize(h)
	tp := 1000 / f.Duration.Seconds()
	if f.RateGiven {
		tp = f.Rate
	}
	res := load.Result{Intended: 1000, Completed: 1000, AchievedRate: tp, DurationS: f.Duration.Seconds(), Corrected: s, Uncorrected: s}
	res.ByStatus.C2xx = 1000
	res.HostSteal = &load.HostSteal{Samples: 7, SampleMs: 100, TotalMs: 30, PerCPUMs: map[int]int64{0: 30}, MaxMs: 30, MaxSampleMs: 100, Bursts: 1}
	if os.Getenv(fakeZeroEnv) == "1" { // every request failed to connect
		res = load.Result{Intended: 5, Failed: 5, DurationS: f.Duration.Seconds(), Corrected: s, Uncorrected: s}
		res.Errors.Connect = 5
	}
	if path := os.Getenv(fakeErrorsEnv); path != "" {
		if b, err := os.ReadFile(path); err == nil {
			if n, _ := strconv.Atoi(string(b)); n > 0 {
				_ = os.WriteFile(path, []byte(strconv.Itoa(n-1)), 0o644)
				res.Completed, res.ByStatus.C2xx, res.Failed, res.Errors.Read = 500, 500, 500, 500
			}
		}
	}
	data, _ := json.Marshal(res)
	if err := os.WriteFile(f.JSON, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("Requests/sec: %.2f\n", tp)
	return 0
}
