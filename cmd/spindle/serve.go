package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/server"
)

func init() {
	register(command{
		name:    "serve",
		summary: "run the server under test (nethttp | handoff | carrier | nethttp-carrier): /health, /fruits via the mock backend",
		run:     runServe,
		flags:   func() *flagSet { fs, _ := serveFlags(); return fs },
	})
}

type serveArgs struct {
	connArgs
	mode, backend, wait, wsScope, topology, host string
	poller, adminHost                            string
	port, threads, adminPort                     int
	ws, float, nplus1, reusePort                 bool
	cpus                                         cpuSetFlag
	backendTimeout                               time.Duration
}

func serveFlags() (*flagSet, *serveArgs) {
	a := &serveArgs{}
	fs := newFlagSet("serve", "", "Serves GET /health (\"OK\") and GET /fruits (the backend's fruits, decoded and re-encoded\n"+
		"compactly; 502 when the backend fails, 504 when it is slow); other paths 404 and close.\n"+
		"Prints \"listening on ADDR\" when ready and stops on SIGINT or SIGTERM. See docs/server.md.")
	fs.StringVar(&a.mode, "mode", "carrier", "scheduling design: "+server.ModeHelp()+" (nethttp-carrier: nethttp's handler and client on carriers)")
	fs.StringVar(&a.host, "host", DefaultHost, "address to listen on (\"\": every address)")
	fs.IntVar(&a.port, "port", server.DefaultPort, "TCP port to listen on")
	fs.StringVar(&a.backend, "backend", server.DefaultBackend, "URL of the mock backend's /fruits")
	fs.durationVar(&a.backendTimeout, "backend-timeout", server.DefaultBackendTimeout, "bound on one backend exchange (then 504)")
	fs.IntVar(&a.threads, "threads", 0, "carriers (handoff, carrier, nethttp-carrier) or GOMAXPROCS (nethttp); 0: one per CPU of --cpuset / Go's default")
	fs.StringVar(&a.wait, "wait", carrier.DefaultWait, "carriers' idle strategy: "+wait.Help())
	fs.BoolVar(&a.ws, "ws", false, "work stealing of unstarted work between carriers")
	fs.BoolVar(&a.float, "float", false, "floating carriers: not locked to threads, so with --ws an idle carrier also takes a busy one's started tasks and their conns (excludes --topology, --nplus1, --cpuset: use taskset)")
	fs.StringVar(&a.poller, "poller", carrier.DefaultPoller, "carriers' I/O poller: epoll, io_uring (reads and writes as RECV/SEND) or io_uring_poll (readiness only); an error where the kernel refuses io_uring (spindle probe says why)")
	fs.StringVar(&a.wsScope, "ws-scope", "global", "where an idle carrier steals: global or cluster (L3)")
	fs.StringVar(&a.topology, "topology", "off", "pinning of carriers: off, cpu (carrier i on the i-th CPU) or nosmt (one CPU per core)")
	fs.BoolVar(&a.nplus1, "nplus1", false, "reserve the first CPU of the set for everything that is not a carrier")
	fs.BoolVar(&a.reusePort, "reuseport", false, "one SO_REUSEPORT listener per carrier instead of one balancing acceptor")
	fs.Var(&a.cpus, "cpuset", "CPUs for the carriers (nethttp: the whole process), e.g. \"1\" or \"2-3\" (default: all allowed)")
	fs.IntVar(&a.adminPort, "admin-port", 0, "port of /metrics, /debug/pprof/ and /debug/carrier on --admin-host; 0: off")
	fs.StringVar(&a.adminHost, "admin-host", DefaultHost, "address the admin port listens on (\"\": every address)")
	a.connArgs.Register(fs.FlagSet)
	fs.example(
		`spindle serve --mode carrier --port 8081 --backend http://127.0.0.1:8080/fruits --cpuset 1 --admin-port 9090`,
		`spindle serve --mode nethttp --threads 2`,
	)
	return fs, a
}

// serveOptions validates the flags and builds the server's options.
func serveOptions(a *serveArgs) (server.Options, error) {
	var o server.Options
	mode, err := server.ParseMode(a.mode)
	if err != nil {
		return o, badInput("--mode: %v", err)
	}
	pin, err := carrier.ParsePinning(a.topology)
	if err != nil {
		return o, badInput("--topology: %v", err)
	}
	scope, err := carrier.ParseScope(a.wsScope)
	if err != nil {
		return o, badInput("--ws-scope: %v", err)
	}
	addr, err := listenAddr(a.host, "port", a.port)
	if err != nil {
		return o, err
	}
	admin, err := listenAddrOf("admin-host", a.adminHost, "admin-port", a.adminPort)
	if err != nil {
		return o, err
	}
	if err := server.CheckBackend(a.backend); err != nil {
		return o, badInput("--backend: %v", err)
	}
	if err := checkConn(&a.connArgs); err != nil {
		return o, err
	}
	switch {
	case a.threads < 0:
		return o, badInput("--threads %d: must not be negative", a.threads)
	case a.backendTimeout <= 0:
		return o, badInput("--backend-timeout %v: must be positive", a.backendTimeout)
	}
	if err, known := wait.Available()[a.wait]; !known {
		return o, badInput("--wait %q: want one of %s", a.wait, strings.Join(wait.Names(), ", "))
	} else if err != nil {
		return o, badInput("--wait %s: %v", a.wait, err)
	}
	if err := checkCPUs("cpuset", a.cpus.set); err != nil {
		return o, err
	}
	if err := checkPoller(a.poller); err != nil {
		return o, err
	}
	o = server.Options{
		Mode:           mode,
		Addr:           addr,
		Backend:        a.backend,
		BackendTimeout: a.backendTimeout,
		Threads:        a.threads,
		ReusePort:      a.reusePort,
		HTTP:           a.HTTP,
		MaxConns:       a.MaxConns,
		Carrier: carrier.Options{
			CPUs: a.cpus.set, Wait: a.wait, Steal: a.ws, StealScope: scope, Pin: pin, NPlusOne: a.nplus1, Float: a.float,
			Poller: a.poller,
		},
	}
	if err := o.Carrier.Check(); err != nil {
		return o, badInput("--float: %v (flags --topology, --nplus1, --cpuset)", err)
	}
	if a.adminPort > 0 {
		o.AdminAddr = admin
	}
	return o, nil
}

func runServe(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs, a := serveFlags()
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInput("serve takes no arguments (got %q)", pos[0])
	}
	o, err := serveOptions(a)
	if err != nil {
		return err
	}
	s, err := server.Start(ctx, o)
	if err != nil {
		return listenFailure(err)
	}
	fmt.Fprintf(stdout, "listening on %s\n", s.Addr())
	<-ctx.Done()
	return s.Close()
}

// checkPoller refuses an unknown --poller and one this machine cannot run
// (io_uring where the kernel refuses it), with the reason: no fallback.
func checkPoller(name string) error {
	if err := carrier.CheckPoller(name); err != nil {
		return badInput("--poller %s: %v", name, err)
	}
	return nil
}
