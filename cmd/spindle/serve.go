package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spindle-lab/spindle/bench"
	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/server"
)

func init() {
	register(command{
		name:    "serve",
		summary: "run the server under test (nethttp | handoff | carrier | nethttp-carrier): /health, /fruits via the mock backend, or --app tfb",
		run:     runServe,
		flags:   func() *flagSet { fs, _ := serveFlags(); return fs },
	})
}

func serveFlags() (*flagSet, *server.Flags) {
	a := &server.Flags{}
	fs := newFlagSet("serve", "", "Serves GET /health (\"OK\") and GET /fruits (the backend's fruits, decoded and re-encoded\n"+
		"compactly; 502 when the backend fails, 504 when it is slow); other paths 404 and close.\n"+
		"With --blocking-endpoint also GET /block?kind=sleep|mutex|singleflight&d=DURATION, a handler\n"+
		"that blocks the Go way.\n"+
		"With --app tfb it serves TechEmpower's test types on the PostgreSQL at --db instead (docs/tfb.md).\n"+
		"Prints \"listening on ADDR\" when ready and stops on SIGINT or SIGTERM. See docs/server.md.")
	a.Register(fs.FlagSet)
	fs.example(
		`spindle serve --mode carrier --port 8081 --backend http://127.0.0.1:8080/fruits --cpuset 1 --admin-port 9090`,
		`spindle serve --mode nethttp --threads 2`,
		`spindle serve --mode nethttp-carrier --blocking-endpoint`,
		`spindle serve --app tfb --mode nethttp-carrier --db postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable`,
	)
	return fs, a
}

// serveFlagOf names serve's flag of each carrier.Options field a
// carrier.ConflictError names.
var serveFlagOf = map[string]string{"Float": "--float", "Pin": "--topology", "NPlusOne": "--nplus1", "CPUs": "--cpuset", "Slice": "--slice"}

// conflictInput is carrier.Options.Check's error as bad input, a conflict
// named with serve's flags as typed ("--float --topology cpu: ...").
func conflictInput(err error) error {
	var ce *carrier.ConflictError
	if !errors.As(err, &ce) {
		return badInput("%v", err)
	}
	flags := []string{serveFlagOf[ce.Option]}
	fix := ce.Fix
	for _, w := range ce.With {
		flags = append(flags, strings.TrimSpace(serveFlagOf[w.Field]+" "+w.Value))
		if w.Field == "Slice" {
			fix = "leave --slice out: with --float it is none"
		}
	}
	return badInput("%s: %s: they exclude each other (%s)", strings.Join(flags, " "), ce.Why, fix)
}

// placementFlags names the flags that place carriers, as typed: "--threads
// 8 --topology cpu --nplus1 --cpuset 0-1" (the last by cpusFlag, where
// given).
func placementFlags(threads int, topology string, nplus1 bool, cpusFlag string, cpus cpu.Set) string {
	s := fmt.Sprintf("--threads %d", threads)
	if topology != "" && topology != bench.DefaultTopology {
		s += " --topology " + topology
	}
	if nplus1 {
		s += " --nplus1"
	}
	if len(cpus) > 0 {
		s += " " + cpusFlag + " " + cpus.String()
	}
	return s
}

// serveOptions validates the flags and builds the server's options;
// given reports whether a flag was typed.
func serveOptions(a *server.Flags, given func(string) bool) (server.Options, error) {
	var o server.Options
	mode, err := server.ParseMode(a.Mode)
	if err != nil {
		return o, badInput("--mode: %v", err)
	}
	if err := server.CheckModeFlags(mode, given); err != nil {
		return o, asBadInput(err)
	}
	pin, err := carrier.ParsePinning(a.Topology)
	if err != nil {
		return o, badInput("--topology: %v", err)
	}
	scope, err := carrier.ParseScope(a.StealScope)
	if err != nil {
		return o, badInput("--ws-scope: %v", err)
	}
	addr, err := listenAddr(a.Host, a.Port)
	if err != nil {
		return o, err
	}
	admin, err := listenAddrOf("admin-host", a.AdminHost, a.AdminPort)
	if err != nil {
		return o, err
	}
	if err := server.CheckBackend(a.Backend); err != nil {
		return o, badInput("--backend: %v", err)
	}
	app, err := checkApp(a.App, mode, a.BlockingEndpoint)
	if err != nil {
		return o, err
	}
	switch {
	case app != server.AppTFB && a.DB != "":
		return o, badInput("--db is for --app %s (the %s app has no database)", server.AppTFB, app)
	case app == server.AppTFB:
		if err := server.CheckDB(a.DB, a.DBPool); err != nil {
			return o, badInput("--db: %v", err)
		}
	}
	if a.DBConns != server.DBConnsCarrier && a.DBConns != server.DBConnsGo {
		return o, badInput("--db-conns %q: want %s or %s", a.DBConns, server.DBConnsCarrier, server.DBConnsGo)
	}
	if err, known := wait.Available()[a.Wait]; !known {
		return o, badInput("--wait %q: want one of %s", a.Wait, strings.Join(wait.Names(), ", "))
	} else if err != nil {
		return o, badInput("--wait %s: %v", a.Wait, err)
	}
	if err := wait.CheckB(a.Wait, a.WaitB); err != nil {
		return o, badInput("--wait-b: %v", err)
	}
	if err := carrier.CheckSlice(a.Slice); err != nil {
		return o, badInput("--slice: %v", err)
	}
	if err := checkCPUs("cpuset", a.CPUs); err != nil {
		return o, err
	}
	if err := checkPoller(a.Poller); err != nil {
		return o, err
	}
	o = server.Options{
		Mode:           mode,
		Addr:           addr,
		Backend:        a.Backend,
		BackendTimeout: a.BackendTimeout,
		Threads:        a.Threads,
		ReusePort:      a.ReusePort,
		HTTP:           a.Conn.HTTP,
		MaxConns:       a.Conn.MaxConns,
		// BlockingEndpoint takes any mode: where carriers do not hand off
		// (--handoff-threshold negative) its blocking stalls a carrier,
		// which is a figure to measure too (docs/server.md, "Blocking
		// endpoint").
		BlockingEndpoint: a.BlockingEndpoint,
		App:              app,
		DB:               a.DB,
		DBPool:           a.DBPool,
		DBGoConns:        a.DBConns == server.DBConnsGo,
		Carrier: carrier.Options{
			CPUs: a.CPUs, Wait: a.Wait, WaitOptions: wait.Options{BlockWake: a.WaitB, FixedB: a.WaitB > 0}, Steal: a.Steal, StealScope: scope, Pin: pin, NPlusOne: a.NPlusOne, Float: a.Float, ParkIdle: server.ParkIdleFor(mode, a.ParkIdle), NoParkWatch: !a.ParkWatch, NoBatch: !a.BatchOthers,
			Slice:  server.SliceOption(a.Slice, a.Float),
			Poller: a.Poller, BacklogPollGap: a.BacklogPollGap, HandoffThreshold: server.HandoffFor(mode, app, a.HandoffThreshold, a.BlockingEndpoint),
		},
	}
	if err := o.Carrier.Check(); err != nil {
		return o, conflictInput(err)
	}
	if mode != server.ModeNetHTTP { // nethttp's --threads is GOMAXPROCS: no carrier to place
		c := o.Carrier
		c.Carriers = a.Threads
		if err := carrier.CheckPlacement(c); err != nil {
			return o, badInput("%s: %v", placementFlags(a.Threads, a.Topology, a.NPlusOne, "--cpuset", a.CPUs), err)
		}
	}
	if a.AdminPort > 0 {
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
	a.Mode = appMode(fs, a.App, a.Mode)
	o, err := serveOptions(a, fs.given)
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

// appMode is the server mode for --app: --mode's value where it was given
// or the app runs in the default mode, else the app's own default (tfb:
// nethttp-carrier, its carrier mode), so that "--app tfb" alone runs.
func appMode(fs *flagSet, app, mode string) string {
	if fs.given("mode") || server.App(app) != server.AppTFB {
		return mode
	}
	return string(server.ModeNetHTTPCarrier)
}

// checkApp checks --app against --mode and --blocking-endpoint (of serve
// and bench alike), and returns the app.
func checkApp(name string, mode server.Mode, blocking bool) (server.App, error) {
	app, err := server.ParseApp(name)
	if err != nil {
		return "", badInput("--app: %v", err)
	}
	if err := server.CheckApp(app, mode); err != nil {
		return "", badInput("--%v", err)
	}
	if app == server.AppTFB && blocking {
		return "", badInput("--blocking-endpoint: --app %s does not serve %s (the fruits app does)", app, server.BlockPath)
	}
	return app, nil
}

// checkPoller refuses an unknown --poller and one this machine cannot run
// (io_uring where the kernel refuses it), with the reason: no fallback.
func checkPoller(name string) error {
	if err := carrier.CheckPoller(name); err != nil {
		return badInput("--poller %s: %v", name, err)
	}
	return nil
}
