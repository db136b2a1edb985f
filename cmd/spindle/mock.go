package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spindle-lab/spindle/mock"
)

func init() {
	register(command{
		name:    "mock",
		summary: "run the mock backend: /health, /fruits after a think time (a carrier timer), fault injection",
		run:     runMock,
		flags:   func() *flagSet { fs, _ := mockFlags(); return fs },
	})
}

type mockArgs struct {
	connArgs
	host             string
	port             int
	think, jitter    time.Duration
	threads          int
	cpus             cpuSetFlag
	failRate, closeR float64
	seed             uint64
}

func mockFlags() (*flagSet, *mockArgs) {
	a := &mockArgs{}
	fs := newFlagSet("mock", "", "Serves GET /health (\"OK\"), GET /fruits and / (after the think time, a fixed pretty-printed\n"+
		"JSON list of ten fruits) and 404 elsewhere, on carriers, keep-alive, TCP_NODELAY. Prints\n"+
		"\"listening on ADDR\" when ready and stops on SIGINT or SIGTERM.")
	fs.StringVar(&a.host, "host", DefaultHost, "address to listen on (\"\": every address)")
	fs.IntVar(&a.port, "port", mock.DefaultPort, "TCP port to listen on")
	fs.durationVar(&a.think, "think-time", mock.DefaultThinkTime, "time /fruits takes before answering (a timer on the carrier)")
	fs.durationVar(&a.jitter, "think-jitter", 0, "extra think time drawn uniformly from [0, jitter)")
	fs.IntVar(&a.threads, "threads", mock.DefaultThreads, "number of carriers")
	fs.Var(&a.cpus, "cpuset", "CPUs the carriers may run on, e.g. \"0\" or \"4-7\" (default: all allowed)")
	fs.Float64Var(&a.failRate, "fail-rate", 0, "fraction of /fruits requests answered 500 (0 to 1)")
	fs.Float64Var(&a.closeR, "close-rate", 0, "fraction of /fruits requests whose connection is closed without an answer (0 to 1)")
	fs.Uint64Var(&a.seed, "seed", 1, "seed of the fault and jitter draws")
	connFlags(fs, &a.connArgs)
	fs.example(
		`spindle mock --port 8080 --think-time 1ms --threads 1 --cpuset 0`,
		`spindle mock --fail-rate 0.01 --close-rate 0.001`,
	)
	return fs, a
}

func runMock(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs, a := mockFlags()
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return badInput("mock takes no arguments (got %q)", pos[0])
	case a.threads < 1: // (mock.Options takes 0 as its default)
		return badInput("--threads %d: must be at least 1", a.threads)
	}
	if err := checkCPUs("cpuset", a.cpus.set); err != nil {
		return err
	}
	if err := a.connArgs.check(); err != nil {
		return err
	}
	addr, err := listenAddr(a.host, "port", a.port)
	if err != nil {
		return err
	}
	s, err := mock.Start(ctx, mock.Options{
		Addr: addr, Threads: a.threads, CPUs: a.cpus.set,
		ThinkTime: a.think, ThinkJitter: a.jitter, FailRate: a.failRate, CloseRate: a.closeR, Seed: a.seed,
		HTTP: a.http, MaxConns: a.maxConns,
	})
	if errors.Is(err, mock.ErrBadOptions) { // think time, jitter, rates
		return asBadInput(err)
	}
	if err != nil {
		return listenFailure(err)
	}
	fmt.Fprintf(stdout, "listening on %s\n", s.Addr())
	<-ctx.Done()
	return s.Close()
}
