package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
)

func TestServeMockFlagsRejected(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for _, args := range [][]string{
		{"serve", "--port", busy},
		{"mock", "--port", busy},
		{"serve", "--backend", "ftp://127.0.0.1/fruits"},
		{"serve", "--backend", "http://"},
		{"serve", "--backend", "127.0.0.1:8080"},
		{"mock", "--think-time", "1"},
		{"serve", "--mode", "fork-join"},
		{"serve", "--topology", "everywhere"},
		{"serve", "--ws-scope", "planet"},
		{"serve", "--wait", "doze"},
		{"serve", "--wait-b", "200us"}, // the default strategy, block, has no B
		{"serve", "--wait", "busy", "--wait-b", "1ms"},
		{"serve", "--wait", "adaptive", "--wait-b", "-1us"},
		{"serve", "--wait", "adaptive", "--wait-b", "soon"},
		{"serve", "--port", "70000"},
		{"serve", "--admin-port", "-2"},
		{"serve", "--host", "localhost"},
		{"serve", "--host", "127.0.0.1:80"},
		{"serve", "--threads", "-1"},
		{"serve", "--backend-timeout", "0s"},
		{"serve", "--backlog-poll-gap", "0"},
		{"serve", "--backlog-poll-gap", "many"},
		{"serve", "--cpuset", "9999"},
		{"serve", "--float", "--topology", "cpu"},
		{"serve", "--float", "--nplus1"},
		{"serve", "--float", "--cpuset", "0"},
		{"serve", "--float", "--slice", "1ms"},
		{"serve", "--slice", "50us"},
		{"serve", "--slice", "1s"},
		{"serve", "--slice", "-1ms"},
		{"serve", "--slice", "short"},
		{"serve", "--poller", "kqueue"},
		{"serve", "--park-watch=often"},
		{"serve", "--db-conns", "both"},
		{"serve", "extra"},
		{"serve", "--admin-host", "localhost", "--admin-port", "9090"},
		{"serve", "--max-conns", "-1"},
		{"serve", "--blocking-endpoint=maybe"},
		{"serve", "--blocking-endpoint", "yes"}, // a bool flag takes no separate word: "yes" is an argument
		{"serve", "--read-timeout", "0s"},
		{"serve", "--write-timeout", "-1s"},
		{"serve", "--read-header-timeout", "0s"},
		{"serve", "--idle-timeout", "0s"},
		{"mock", "--max-conns", "-5"},
		{"mock", "--read-timeout", "0s"},
		{"mock", "--fail-rate", "1.5"},
		{"serve", "--app", "tfb", "--mode", "handoff", "--db", "postgres://u@127.0.0.1/db"},
		{"serve", "--app", "tfb", "--mode", "nethttp"},
		{"serve", "--app", "tfb", "--mode", "nethttp", "--db", "postgres://u@[::1/db"},
		{"serve", "--app", "tfb", "--mode", "nethttp", "--db", "postgres://u@127.0.0.1:99999/db"},
		{"serve", "--app", "tfb", "--mode", "nethttp", "--db", "postgres://u@127.0.0.1/db", "--db-pool", "0"},
		{"serve", "--app", "tfb", "--mode", "nethttp", "--db", "postgres://u@127.0.0.1/db", "--blocking-endpoint"},
		{"serve", "--app", "shop"},
		{"serve", "--db", "postgres://u@127.0.0.1/db"},
		{"mock", "--threads", "0"},
		{"mock", "--think-time", "-1ms"},
		{"mock", "--think-jitter", "-1ms"},
		{"mock", "--close-rate", "-0.5"},
		{"mock", "--port", "-1"},
		{"mock", "--host", "example.com"},
		{"mock", "extra"},
	} {
		if err := run(context.Background(), args, io.Discard, io.Discard); !errors.Is(err, errBadInput) {
			t.Errorf("run(%q) = %v, want bad input", args, err)
		}
	}
}

// lineWriter collects output and signals the first line.
type lineWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	ready chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if line, _, ok := strings.Cut(w.buf.String(), "\n"); ok && w.ready != nil {
		w.ready <- line
		w.ready = nil
	}
	return len(p), nil
}

// start runs a spindle command until the test ends and returns the address
// from its "listening on ADDR" line.
func startCommand(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1) // read here, not through out: Write clears out.ready
	out := &lineWriter{ready: ready}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, out, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%q after cancel: %v", args, err)
		}
	})
	select {
	case line := <-ready:
		addr, ok := strings.CutPrefix(line, "listening on ")
		if !ok {
			t.Fatalf("first line %q", line)
		}
		return addr
	case err := <-done:
		t.Fatalf("%q ended: %v", args, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("%q printed no address", args)
	}
	return ""
}

// TestServeAdminHost: the admin port listens on --admin-host, loopback by
// default, whatever --host says.
func TestServeAdminHost(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--host", "", "--admin-port", "9090"}, "127.0.0.1:9090"},
		{[]string{"--admin-host", "", "--admin-port", "9090"}, ":9090"},
		{[]string{"--admin-host", "::1", "--admin-port", "9090"}, "[::1]:9090"},
		{[]string{"--admin-host", "10.0.0.1"}, ""}, // no admin port: no admin server
	} {
		fs, a := serveFlags()
		if _, err := fs.parse(tt.args, io.Discard); err != nil {
			t.Fatal(err)
		}
		o, err := serveOptions(a, fs.given)
		if err != nil || o.AdminAddr != tt.want {
			t.Errorf("%q: admin address %q, %v; want %q", tt.args, o.AdminAddr, err, tt.want)
		}
	}
}

// TestServeWaitB: --wait-b fixes the adaptive strategy's B; without it
// the strategy measures and learns B (zero options).
func TestServeWaitB(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want wait.Options
	}{
		{[]string{"--wait", "adaptive", "--wait-b", "200us"}, wait.Options{BlockWake: 200 * time.Microsecond, FixedB: true}},
		{[]string{"--wait", "adaptive"}, wait.Options{}},
		{[]string{"--wait", "adaptive", "--wait-b", "0"}, wait.Options{}},
		{[]string{"--wait", "busy"}, wait.Options{}},
	} {
		fs, a := serveFlags()
		if _, err := fs.parse(tt.args, io.Discard); err != nil {
			t.Fatal(err)
		}
		o, err := serveOptions(a, fs.given)
		if err != nil || o.Carrier.WaitOptions != tt.want {
			t.Errorf("%q: wait options %+v, %v; want %+v", tt.args, o.Carrier.WaitOptions, err, tt.want)
		}
	}
}

// TestServeAndMockCommands serves /fruits in carrier mode with every
// poller this machine can run, and with the lowest tail's switches (a
// parking carrier that polls first; docs/server.md): requests with idle
// gaps between them, so that the carrier waits, polls and parks in turn.
func TestServeAndMockCommands(t *testing.T) {
	mockAddr := startCommand(t, "mock", "--port", "0", "--think-time", "0")
	type config struct {
		name, poller string
		args         []string
	}
	var configs []config
	for _, poller := range carrier.Pollers {
		configs = append(configs, config{poller, poller, nil})
	}
	configs = append(configs, config{"lowest tail", carrier.DefaultPoller,
		[]string{"--park-idle", "--wait", "adaptive", "--wait-b", "200us"}})
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			if err := carrier.CheckPoller(c.poller); err != nil {
				t.Skipf("poller %s: %v", c.poller, err)
			}
			addr := startCommand(t, append([]string{"serve", "--mode", "carrier", "--port", "0", "--threads", "1",
				"--poller", c.poller, "--backend", "http://" + mockAddr + "/fruits"}, c.args...)...)
			// Both listen on loopback unless --host says otherwise.
			for _, a := range []string{mockAddr, addr} {
				if !strings.HasPrefix(a, DefaultHost+":") {
					t.Errorf("listening on %s, want %s by default", a, DefaultHost)
				}
			}
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			for i, gap := range []time.Duration{0, 0, 50 * time.Microsecond, time.Millisecond, 0, 5 * time.Millisecond, 0} {
				time.Sleep(gap)
				resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("http://" + addr + "/fruits")
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.HasPrefix(string(b), `[{"name":"Apple"`) {
					t.Fatalf("request %d, /fruits through spindle serve: %d %q", i, resp.StatusCode, b)
				}
			}
		})
	}
}

// Where the kernel refuses io_uring, --poller io_uring is bad input that
// says why, for serve and bench alike: never a silent fallback to epoll.
func TestPollerUnavailable(t *testing.T) {
	if carrier.CheckPoller(carrier.PollerURing) == nil {
		t.Skip("io_uring is available here: the refusal cannot be observed")
	}
	for _, args := range [][]string{
		{"serve", "--poller", "io_uring", "--port", "0"},
		{"bench", "--poller", "io_uring", "--duration", "1s"},
	} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		if !errors.Is(err, errBadInput) || !strings.Contains(err.Error(), "io_uring") {
			t.Errorf("run(%q) = %v, want bad input naming io_uring", args, err)
		}
	}
}

// TestServeBlockingEndpoint: --blocking-endpoint serves /block, whose bad
// queries are 400 with the reason; without it /block is 404.
func TestServeBlockingEndpoint(t *testing.T) {
	mockAddr := startCommand(t, "mock", "--port", "0", "--think-time", "0")
	backend := "http://" + mockAddr + "/fruits"
	on := startCommand(t, "serve", "--mode", "nethttp-carrier", "--port", "0", "--threads", "1", "--backend", backend, "--blocking-endpoint")
	off := startCommand(t, "serve", "--mode", "nethttp-carrier", "--port", "0", "--threads", "1", "--backend", backend)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	for _, tc := range []struct {
		addr, target string
		status       int
		body         string
	}{
		{on, "/block?kind=sleep&d=5ms", 200, "OK"},
		{on, "/block?kind=singleflight", 200, ""},
		{on, "/block?kind=sleep&d=5", 400, `bad /block query: d "5": want a duration with its unit, such as 20ms`},
		{on, "/health", 200, "OK"},
		{off, "/block?kind=sleep&d=5ms", 404, "Not Found"},
	} {
		resp, err := (&http.Client{Transport: tr}).Get("http://" + tc.addr + tc.target)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || tc.body != "" && string(b) != tc.body {
			t.Errorf("%s%s: %d %q, want %d %q", tc.addr, tc.target, resp.StatusCode, b, tc.status, tc.body)
		}
	}
}

// TestAppMode: --app tfb without --mode runs tfb's carrier mode
// (nethttp-carrier), where the default mode (carrier) does not serve it; a
// given --mode, and the fruits app, keep theirs.
func TestAppMode(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--app", "tfb"}, "nethttp-carrier"},
		{[]string{"--app", "tfb", "--mode", "nethttp"}, "nethttp"},
		{[]string{"--app", "tfb", "--mode", "carrier"}, "carrier"},
		{[]string{"--app", "tfb", "--mode", "handoff"}, "handoff"}, // refused later, by checkApp
		{[]string{"--app", "fruits"}, "carrier"},
		{nil, "carrier"},
	}
	for _, tt := range tests {
		for _, cmd := range []string{"serve", "bench"} {
			var fs *flagSet
			var mode, app *string
			if cmd == "serve" {
				f, a := serveFlags()
				fs, mode, app = f, &a.Mode, &a.App
			} else {
				f, a := benchFlags()
				fs, mode, app = f, &a.mode, &a.app.app
			}
			if _, err := fs.parse(tt.args, io.Discard); err != nil {
				t.Fatalf("%s %q: %v", cmd, tt.args, err)
			}
			if got := appMode(fs, *app, *mode); got != tt.want {
				t.Errorf("%s %q: mode %q, want %q", cmd, tt.args, got, tt.want)
			}
		}
	}
}

// A server or mock that runs out of file descriptors while it makes its
// carriers exits 1 with one line that says so: the machine's limit, not the
// flag, is short (the same --threads runs under a higher ulimit -n). It
// panicked with a nil dereference: a poller that could not be made was a
// typed nil that the carrier's cleanup closed.
func TestOutOfFDsOneLine(t *testing.T) {
	exe := spindleBinary(t)
	for _, args := range []string{
		"mock --port 0 --threads 200",
		"serve --port 0 --threads 200",
		"serve --port 0 --threads 200 --poller io_uring",
		"serve --port 0 --threads 200 --park-idle",
		"connmem --mode mock --threads 200",
	} {
		// Each carrier takes an eventfd, then its poller's fd: one of two
		// limits in a row runs out at the poller.
		for _, limit := range []string{"128", "129"} {
			cmd := exec.Command("sh", "-c", "ulimit -n "+limit+" && exec \"$0\" "+args, exe)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Errorf("%s under ulimit -n %s: %v, want exit status 1; stderr:\n%s", args, limit, err, stderr.String())
				continue
			}
			msg := strings.TrimSuffix(stderr.String(), "\n")
			if strings.Contains(msg, "\n") || !strings.Contains(msg, "too many open files") || strings.Contains(msg, "panic") {
				t.Errorf("%s under ulimit -n %s: stderr %q, want one line saying too many open files", args, limit, msg)
			}
		}
	}
}

// serve refuses, before it starts, carriers its CPUs cannot place (exit 2
// naming the flags; it was 1 with "place carriers: plan carriers: ..."),
// carrier flags in nethttp mode (naming the modes they apply to), and
// --float's conflicts named by the flags, not carrier.Options' fields.
func TestServeRefusesBeforeStart(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--topology", "cpu", "--threads", "9000", "--port", "0"}, "serve: --threads 9000 --topology cpu: 9000 carriers need 9000 CPUs"},
		{[]string{"serve", "--topology", "nosmt", "--threads", "9000", "--port", "0"}, "serve: --threads 9000 --topology nosmt: 9000 carriers need 9000 cores"},
		{[]string{"serve", "--mode", "nethttp", "--ws"}, "serve: --ws applies to modes handoff, carrier, nethttp-carrier, not nethttp"},
		{[]string{"serve", "--mode", "nethttp", "--wait", "busy"}, "serve: --wait applies to modes handoff, carrier, nethttp-carrier, not nethttp"},
		{[]string{"serve", "--mode", "nethttp", "--topology", "cpu"}, "serve: --topology applies to modes"},
		{[]string{"serve", "--mode", "nethttp", "--poller", "io_uring"}, "serve: --poller applies to modes"},
		{[]string{"serve", "--mode", "nethttp", "--park-idle"}, "serve: --park-idle applies to modes"},
		{[]string{"serve", "--mode", "handoff", "--db-conns", "go"}, "serve: --db-conns applies to modes nethttp-carrier, carrier, not handoff"},
		{[]string{"serve", "--float", "--topology", "cpu", "--nplus1"}, "serve: --float --topology cpu --nplus1: floating carriers are not bound to threads: they exclude each other (restrict the whole process with taskset instead)"},
		{[]string{"serve", "--float", "--slice", "1ms"}, "serve: --float --slice 1ms: floating carriers have no threads of their own: they exclude each other (leave --slice out"},
	} {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		if !errors.Is(err, errBadInput) || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line of bad input starting %q", tc.args, err, tc.want)
		}
	}
}
