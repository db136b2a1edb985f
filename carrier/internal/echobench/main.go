// Command echobench measures echo throughput: a carrier echo server (one
// carrier per listener mode) against a goroutine-per-connection net echo
// server, each run as a child process pinned with taskset, driven by a
// closed-loop client pinned to another CPU, interleaved round by round.
//
//	go run ./carrier/internal/echobench compare -a carrier -b net -server-cpus 1 -client-cpus 0
//
// Subcommands:
//
//	serve -mode M       run an echo server (modes below) on 127.0.0.1:0, print its
//	                    address, serve until stdin closes
//	load -addr A        run the client (closed loop, or paced with -rate R round
//	                    trips per second), print "rate N" (round trips per second)
//	compare -a M -b M   interleave A and B for -rounds rounds and print each round's
//	                    rates and the median B/A... ratio with min and max
//
// Server modes: carrier-reuseport and carrier-single (-carriers carriers,
// default 1, with one SO_REUSEPORT listener each, or one balancing
// acceptor; carrier is another name for carrier-single; -steal turns work
// stealing on), carrier-float (carrier-single with floating, stealing
// carriers), net (goroutine per connection; run it with GOMAXPROCS set as
// wanted, compare sets it to the server CPU count).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/cpu"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: echobench serve|load|compare [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "load":
		err = load(os.Args[2:])
	case "compare":
		err = compare(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "echobench:", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	mode := fs.String("mode", "carrier", "carrier | carrier-reuseport | carrier-single | carrier-float | net")
	carriers := fs.Int("carriers", 1, "carriers for the carrier modes")
	wait := fs.String("wait", carrier.DefaultWait, "carrier idle strategy")
	steal := fs.Bool("steal", false, "work stealing between carriers (carrier-float always steals)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var addr string
	var stop func()
	switch *mode {
	case "carrier", "carrier-reuseport", "carrier-single", "carrier-float":
		float := *mode == "carrier-float"
		g, err := carrier.New(carrier.Options{Carriers: *carriers, Wait: *wait, Steal: *steal || float, Float: float})
		if err != nil {
			return err
		}
		echo := func(t *carrier.Task, c *carrier.Conn) { io.CopyBuffer(c, c, make([]byte, 4096)) }
		l, err := g.Listen("127.0.0.1:0", echo, carrier.ListenOptions{ReusePort: *mode == "carrier-reuseport"})
		if err != nil {
			return err
		}
		addr, stop = l.Addr().String(), func() { g.Close() }
	case "net":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					// A plain read/write loop, as the carrier echo handler runs (hiding ReadFrom
					// keeps io.Copy from splicing).
					io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, make([]byte, 4096))
				}()
			}
		}()
		addr, stop = ln.Addr().String(), func() { ln.Close() }
	default:
		return fmt.Errorf("unknown mode %q", *mode)
	}
	fmt.Println(addr)
	io.Copy(io.Discard, os.Stdin)
	stop()
	return nil
}

// load runs conns closed-loop clients on one carrier (an efficient client,
// so that the server is the bottleneck), each sending size bytes and
// reading them back, for d; it prints round trips per second.
func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	addr := fs.String("addr", "", "server address")
	conns := fs.Int("conns", 100, "connections")
	size := fs.Int("size", 64, "message bytes")
	d := fs.Duration("d", 2*time.Second, "measurement time (after a 10% warm-up)")
	churn := fs.Bool("churn", false, "a new connection for every round trip (measures accepting)")
	rate := fs.Float64("rate", 0, "round trips per second over all connections, paced (0: closed loop, as fast as the server answers)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkRate(*rate); err != nil {
		return err
	}
	// Each connection sends on its own schedule, interval apart, so that
	// a slow answer delays that connection's later sends (no catching up).
	var interval time.Duration
	if *rate > 0 {
		interval = time.Duration(float64(*conns) / *rate * float64(time.Second))
	}
	g, err := carrier.New(carrier.Options{Carriers: 1})
	if err != nil {
		return err
	}
	defer g.Close()
	var count, total atomic.Int64 // round trips in the window, and in all
	var measuring, stop atomic.Bool
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		g.Go(func(t *carrier.Task) {
			defer wg.Done()
			msg := make([]byte, *size)
			buf := make([]byte, *size)
			var c *carrier.Conn
			defer func() {
				if c != nil {
					c.Close()
				}
			}()
			n, all := int64(0), int64(0)
			defer func() { count.Add(n); total.Add(all) }()
			next := time.Now().Add(time.Duration(rand.Int64N(int64(interval) + 1))) // spread the first sends
			for !stop.Load() {
				if interval > 0 {
					t.Sleep(time.Until(next))
					next = next.Add(interval)
				}
				if c == nil {
					var err error
					if c, err = t.Dial(*addr, 5*time.Second); err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
				}
				if _, err := c.Write(msg); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				for got := 0; got < len(buf); {
					k, err := c.Read(buf[got:])
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
					got += k
				}
				if measuring.Load() {
					n++
				}
				all++
				if *churn {
					c.Close()
					c = nil
				}
			}
		})
	}
	time.Sleep(*d / 10)
	measuring.Store(true)
	start := time.Now()
	time.Sleep(*d)
	measuring.Store(false)
	el := time.Since(start)
	stop.Store(true)
	wg.Wait()
	if e, ok := firstErr.Load().(error); ok && e != nil {
		return e
	}
	fmt.Printf("rate %.0f total %d\n", float64(count.Load())/el.Seconds(), total.Load())
	return nil
}

func compare(args []string) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	a := fs.String("a", "net", "server mode A")
	b := fs.String("b", "carrier", "server mode B")
	rounds := fs.Int("rounds", 5, "rounds (each runs A then B)")
	serverCPUs := fs.String("server-cpus", "1", "CPU list for the server (taskset)")
	clientCPUs := fs.String("client-cpus", "0", "CPU list for the client (taskset)")
	carriers := fs.Int("carriers", 1, "carriers for the carrier modes")
	conns := fs.Int("conns", 100, "connections")
	d := fs.Duration("d", 2*time.Second, "measurement time per run")
	size := fs.Int("size", 64, "message bytes")
	churn := fs.Bool("churn", false, "a new connection for every round trip")
	rate := fs.Float64("rate", 0, "paced round trips per second over all connections (0: closed loop); compare the servers' CPU per round trip below saturation")
	waitName := fs.String("wait", carrier.DefaultWait, "idle strategy of the carrier servers")
	steal := fs.Bool("steal", false, "work stealing between the carrier servers' carriers (carrier-float always steals)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkRate(*rate); err != nil {
		return err
	}
	spec := runSpec{wait: *waitName, steal: *steal, carriers: *carriers, conns: *conns, size: *size, d: *d, churn: *churn, rate: *rate}
	var err error
	if spec.serverCPUs, err = cpu.ParseList(*serverCPUs); err != nil {
		return fmt.Errorf("-server-cpus: %w", err)
	}
	if spec.clientCPUs, err = cpu.ParseList(*clientCPUs); err != nil {
		return fmt.Errorf("-client-cpus: %w", err)
	}
	if len(spec.serverCPUs) == 0 || len(spec.clientCPUs) == 0 {
		return errors.New("-server-cpus and -client-cpus must each name at least one CPU")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var ratios, effRatios, clientBusy []float64
	for r := 1; r <= *rounds; r++ {
		var res [2]result
		for i, mode := range []string{*a, *b} {
			res[i], err = runOnce(self, mode, spec)
			if err != nil {
				return fmt.Errorf("round %d %s: %w", r, mode, err)
			}
		}
		ratio := res[1].rate / res[0].rate
		eff := res[1].perCPU / res[0].perCPU
		ratios = append(ratios, ratio)
		effRatios = append(effRatios, eff)
		clientBusy = append(clientBusy, res[0].clientBusy, res[1].clientBusy)
		fmt.Printf("round %d: %s %.0f/s (%.0f per server CPU-s, client CPU %.0f%%)  %s %.0f/s (%.0f per server CPU-s, client CPU %.0f%%)  ratio %.3f, per CPU %.3f\n",
			r, *a, res[0].rate, res[0].perCPU, 100*res[0].clientBusy, *b, res[1].rate, res[1].perCPU, 100*res[1].clientBusy, ratio, eff)
	}
	fmt.Printf("%s/%s throughput ratio: %s over %d rounds\n", *b, *a, summary(ratios), len(ratios))
	fmt.Printf("%s/%s round trips per server CPU-second: %s\n", *b, *a, summary(effRatios))
	// A client that keeps its CPUs busy bounds the throughput whatever the
	// server does: on loopback each side's send also runs the other
	// side's TCP receive path, so the work per round trip is about
	// symmetric, and the throughput ratio then measures the client.
	fmt.Printf("client CPU use (per client CPU, both modes): %s\n", summary(clientBusy))
	if slices.Min(clientBusy) > clientBound {
		fmt.Printf("note: the client was over %.0f%% busy in every run: the throughput ratio is bounded by the client, not set by the servers\n", 100*clientBound)
	}
	return nil
}

// checkRate refuses a -rate that cannot be paced.
func checkRate(rate float64) error {
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return fmt.Errorf("-rate %v: want a finite rate >= 0", rate)
	}
	return nil
}

// summary formats the median, min and max of xs.
func summary(xs []float64) string {
	slices.Sort(xs)
	return fmt.Sprintf("median %.3f (min %.3f, max %.3f)", xs[len(xs)/2], xs[0], xs[len(xs)-1])
}

// result is one run: the client's rate in the window, round trips per
// CPU-second the server process used (user+system over its whole life),
// and the share of its CPUs the client used over its life.
type result struct{ rate, perCPU, clientBusy float64 }

// clientBound is the client CPU use above which a run is taken to be
// limited by the client.
const clientBound = 0.9

// runSpec is what every run of a comparison shares.
type runSpec struct {
	serverCPUs, clientCPUs cpu.Set // taskset lists, never empty
	wait                   string  // the carrier servers' idle strategy
	steal                  bool    // the carrier servers steal work
	carriers, conns, size  int
	d                      time.Duration
	churn                  bool
	rate                   float64 // paced round trips per second; 0: closed loop
}

// runOnce starts a server in mode pinned to the spec's server CPUs and a
// client pinned to its client CPUs, and returns the run's figures.
func runOnce(self, mode string, sp runSpec) (result, error) {
	srv := exec.Command("taskset", "-c", sp.serverCPUs.String(), self, "serve", "-mode", mode,
		"-carriers", strconv.Itoa(sp.carriers), "-wait", sp.wait, "-steal="+strconv.FormatBool(sp.steal))
	srv.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(len(sp.serverCPUs)))
	srv.Stderr = os.Stderr
	stdin, err := srv.StdinPipe()
	if err != nil {
		return result{}, err
	}
	stdout, err := srv.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	if err := srv.Start(); err != nil {
		return result{}, err
	}
	waited := false
	defer func() {
		if !waited {
			stdin.Close()
			srv.Wait()
		}
	}()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return result{}, fmt.Errorf("server gave no address: %w", err)
	}
	args := []string{"-c", sp.clientCPUs.String(), self, "load", "-addr", strings.TrimSpace(addr),
		"-conns", strconv.Itoa(sp.conns), "-size", strconv.Itoa(sp.size), "-d", sp.d.String(),
		"-rate", strconv.FormatFloat(sp.rate, 'f', -1, 64)}
	if sp.churn {
		args = append(args, "-churn")
	}
	cl := exec.Command("taskset", args...)
	cl.Env = append(os.Environ(), "GOMAXPROCS=1")
	cl.Stderr = os.Stderr
	began := time.Now()
	out, err := cl.Output()
	if err != nil {
		return result{}, fmt.Errorf("client: %w", err)
	}
	clientCPU := cl.ProcessState.UserTime() + cl.ProcessState.SystemTime()
	r := result{clientBusy: clientCPU.Seconds() / time.Since(began).Seconds() / float64(len(sp.clientCPUs))}
	var total float64
	if r.rate, total, err = parseLoadOutput(out); err != nil {
		return result{}, err
	}
	stdin.Close()
	waited = true
	if err := srv.Wait(); err != nil {
		return result{}, fmt.Errorf("server: %w", err)
	}
	cpu := srv.ProcessState.UserTime() + srv.ProcessState.SystemTime()
	r.perCPU = total / cpu.Seconds()
	return r, nil
}

// parseLoadOutput parses the load subcommand's output line,
// "rate <round trips per second> total <round trips>".
func parseLoadOutput(b []byte) (rate, total float64, err error) {
	f := strings.Fields(string(b))
	if len(f) != 4 || f[0] != "rate" || f[2] != "total" {
		return 0, 0, errors.New("client printed " + strconv.Quote(string(b)))
	}
	if rate, err = strconv.ParseFloat(f[1], 64); err != nil {
		return 0, 0, fmt.Errorf("client rate: %w", err)
	}
	if total, err = strconv.ParseFloat(f[3], 64); err != nil {
		return 0, 0, fmt.Errorf("client total: %w", err)
	}
	if !(rate >= 0) || !(total >= 0) { // also NaN
		return 0, 0, fmt.Errorf("client printed bad counts: %q", b)
	}
	return rate, total, nil
}
