package main

import (
	"context"
	"errors"
	"fmt"
	"io"

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

func mockFlags() (*flagSet, *mock.Flags) {
	a := &mock.Flags{}
	fs := newFlagSet("mock", "", "Serves GET /health (\"OK\"), GET /fruits and / (after the think time, a fixed pretty-printed\n"+
		"JSON list of ten fruits) and 404 elsewhere, on carriers, keep-alive, TCP_NODELAY. Prints\n"+
		"\"listening on ADDR\" when ready and stops on SIGINT or SIGTERM.")
	a.Register(fs.FlagSet)
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
	if len(pos) > 0 {
		return badInput("mock takes no arguments (got %q)", pos[0])
	}
	if sum := a.FailRate + a.CloseRate; sum > 1 {
		return badInput("--fail-rate %v and --close-rate %v add up to %v: want at most 1 in all (each is its share of the /fruits requests)", a.FailRate, a.CloseRate, sum)
	}
	if err := checkCPUs("cpuset", a.CPUs); err != nil {
		return err
	}
	addr, err := listenAddr(a.Host, a.Port)
	if err != nil {
		return err
	}
	s, err := mock.Start(ctx, a.Options(addr))
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
