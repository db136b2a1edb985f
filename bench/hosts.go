package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/remote"
	"github.com/spindle-lab/spindle/report"
)

// LoadDir is the directory of the per-host load files of a run with
// several load hosts: load/<host>/load.json, load.txt, load.log and the
// .hgrm pair, beside the merged set.
const LoadDir = "load"

// DefaultStartLead is how far ahead the load hosts' common start instant
// is set: time for every host's ssh session to start spindle and for the
// load generator to connect its threads (tens of milliseconds on a LAN),
// with room to spare.
const DefaultStartLead = 2 * time.Second

// remoteStopMargin is how long after its grace a remote role's ssh may take
// to report the end of its session before it is killed here.
const remoteStopMargin = 3 * time.Second

// Hosts places a run's roles on other hosts. A nil Server or Mock, or an
// empty Load, runs that role on this machine.
type Hosts struct {
	Server, Mock *remote.Host
	Load         []*remote.Host
	// ServerAddr and MockAddr are the addresses the roles are reached at;
	// "" means the host's address (remote.Info.Addr), or 127.0.0.1 for a
	// role on this machine that only this machine reaches.
	ServerAddr, MockAddr string
}

// Remote says whether any role runs on another host.
func (h *Hosts) Remote() bool {
	return h != nil && (h.Server != nil || h.Mock != nil || len(h.Load) > 0)
}

// all lists the distinct remote hosts.
func (h *Hosts) all() []*remote.Host {
	if h == nil {
		return nil
	}
	var out []*remote.Host
	seen := map[*remote.Host]bool{}
	for _, x := range append([]*remote.Host{h.Server, h.Mock}, h.Load...) {
		if x != nil && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// Check says whether the placement works: a role other hosts reach needs
// an address they can use.
func (h *Hosts) Check() error {
	if h == nil {
		return nil
	}
	if h.Server == nil && len(h.Load) > 0 && h.ServerAddr == "" {
		return fmt.Errorf("the load hosts cannot reach a server on this machine at 127.0.0.1: give --server-addr (this machine's address as they see it) or --server-host")
	}
	if h.Mock == nil && h.Server != nil && h.MockAddr == "" {
		return fmt.Errorf("a server on %s cannot reach a mock on this machine: give --mock-host", h.Server.Dest)
	}
	return nil
}

// checkPrepared says whether every host went through Prepare.
func (h *Hosts) checkPrepared() error {
	for _, x := range h.all() {
		if x.Exe == "" {
			return fmt.Errorf("host %s was not prepared (Hosts.Prepare)", x.Dest)
		}
	}
	return nil
}

// Prepare prepares every remote host at once (remote.Host.Prepare): the
// first failure is returned, naming its host.
func (h *Hosts) Prepare(ctx context.Context, exe string) error {
	hosts := h.all()
	if len(hosts) == 0 {
		return nil
	}
	sum, err := remote.FileSHA256(exe)
	if err != nil {
		return fmt.Errorf("hash the spindle binary: %w", err)
	}
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, x := range hosts {
		wg.Go(func() { errs[i] = x.Prepare(ctx, exe, sum, remote.DefaultClockSamples) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// CheckCPUs says whether each remote role's CPU set exists on its host.
func (h *Hosts) CheckCPUs(c Config) error {
	if h == nil {
		return nil
	}
	check := func(role string, x *remote.Host, set cpu.Set) error {
		if x == nil || len(set) == 0 {
			return nil
		}
		if missing := set.Minus(x.Info.CPUs); len(missing) > 0 {
			return fmt.Errorf("%s: %s CPU set %s: CPUs %s are not online there (online: %s)", x.Dest, role, set, missing, x.Info.CPUs)
		}
		return nil
	}
	if err := check("server", h.Server, c.ServerCPUs); err != nil {
		return err
	}
	if err := check("mock", h.Mock, c.MockCPUs); err != nil {
		return err
	}
	for _, x := range h.Load {
		if err := check("load", x, c.LoadCPUs); err != nil {
			return err
		}
	}
	return nil
}

// Layout describes where each role runs, for the report.
func (h *Hosts) Layout() string {
	name := func(x *remote.Host) string {
		if x == nil {
			return "local"
		}
		return x.Dest.String()
	}
	loads := "local"
	if h != nil && len(h.Load) > 0 {
		ls := make([]string, len(h.Load))
		for i, x := range h.Load {
			ls[i] = x.Dest.String()
		}
		loads = strings.Join(ls, ",")
	}
	if h == nil {
		return "server local, mock local, load local"
	}
	return fmt.Sprintf("server %s, mock %s, load %s", name(h.Server), name(h.Mock), loads)
}

// addr is the address other hosts reach a role at: given, the host's, or
// loopback.
func addr(given string, x *remote.Host) string {
	switch {
	case given != "":
		return given
	case x != nil:
		return x.Info.Addr
	}
	return "127.0.0.1"
}

// mockReached says whether other hosts reach the mock: it runs on one,
// or is reached at an address given.
func (h *Hosts) mockReached() bool { return h != nil && (h.Mock != nil || h.MockAddr != "") }

// serverReached says whether other hosts reach the server: it runs on
// one, or load hosts send to it.
func (h *Hosts) serverReached() bool { return h != nil && (h.Server != nil || len(h.Load) > 0) }

// backendAddr is the address the server reaches the mock at: loopback
// where both run on the same machine, else the mock's (mockAddr).
func (h *Hosts) backendAddr() string {
	if h != nil && h.Mock != nil && h.Mock == h.Server {
		return "127.0.0.1"
	}
	return h.mockAddr()
}

// mockAddr and serverAddr are the addresses other hosts, and this
// machine, reach the mock and the server at (addr).
func (h *Hosts) mockAddr() string {
	if h == nil {
		return addr("", nil)
	}
	return addr(h.MockAddr, h.Mock)
}

func (h *Hosts) serverAddr() string {
	if h == nil {
		return addr("", nil)
	}
	return addr(h.ServerAddr, h.Server)
}

// LoadShare is one load host's part of the load.
type LoadShare struct {
	Connections int `json:"connections"`
	Threads     int `json:"threads"`
	// Rate is the host's fixed rate, req/s; 0: closed loop.
	Rate int `json:"rate"`
}

// SplitLoad divides connections and rate over n load hosts: the
// remainders go one each to the first hosts, so the parts add up exactly;
// each host runs threads load threads, or fewer where it has fewer
// connections.
func SplitLoad(connections, rate, threads, n int) ([]LoadShare, error) {
	switch {
	case n < 1:
		return nil, fmt.Errorf("split load: %d hosts", n)
	case connections < n:
		return nil, fmt.Errorf("connections %d: want at least one per load host (%d)", connections, n)
	case rate != 0 && rate < n:
		return nil, fmt.Errorf("rate %d: want at least 1 req/s per load host (%d)", rate, n)
	case threads < 1:
		return nil, fmt.Errorf("load threads %d: want at least 1", threads)
	}
	out := make([]LoadShare, n)
	for i := range out {
		c := connections / n
		if i < connections%n {
			c++
		}
		r := rate / n
		if i < rate%n {
			r++
		}
		out[i] = LoadShare{Connections: c, Threads: min(threads, c), Rate: r}
	}
	return out, nil
}

// hostTag is the run's tag on host x: the run's and the host's, so that a
// cleanup pass on one host never touches what another host runs, even
// when two destinations are the same machine.
func (r *runner) hostTag(x *remote.Host) string { return r.tag + "-" + x.Dest.Label() }

// newTag is a run's tag on its hosts (remote.EnvRun): 8 random bytes.
func newTag() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand does not fail on Linux
	return hex.EncodeToString(b)
}

// startRemote starts spindle args on host x under "spindle remote exec"
// with f, tagged with the run. The child's stdin is the session's:
// closing it (stop) stops the remote process group.
func startRemote(name string, x *remote.Host, tag string, f remote.ExecFlags, args []string, logPath, outPath string) (*child, error) {
	cmd := x.Command(remote.ExecArgs(x.Exe, tag, f, args))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c, err := launch(name, cmd, logPath, outPath, cmd.Start)
	if err != nil {
		stdin.Close()
		return nil, err
	}
	c.stdin = stdin
	return c, nil
}

// execFlags are the "remote exec" flags of a process of the run in role
// on cpus: the run's grace, and its life bounded by remoteLimit.
func (r *runner) execFlags(role string, cpus cpu.Set) remote.ExecFlags {
	return remote.ExecFlags{ExecOptions: remote.ExecOptions{Grace: r.opt.StopGrace, Limit: r.remoteLimit()}, Role: role, CPUs: cpus}
}

// hostURL is http://ADDR:PORT/path.
func hostURL(host string, port int, path string) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + path
}

// cleanup is the pass after a run with remote roles: it kills what is
// left tagged with the run on each host and records what it found.
func (r *runner) cleanup() {
	for _, x := range r.opt.Hosts.all() {
		n, err := x.Cleanup(r.hostTag(x), r.opt.StopGrace)
		switch {
		case err != nil:
			r.na["cleanup "+x.Dest.String()] = fmt.Sprintf("not confirmed: %v (its roles stop when their ssh sessions end, "+
				"or when their time limit passes, at the latest %v after they started)", err, r.remoteLimit().Round(time.Second))
		case n > 0:
			r.na["cleanup "+x.Dest.String()] = fmt.Sprintf("killed %d processes the run had left", n)
		}
	}
}

// hostRecord is a host's entry in config.json.
type hostRecord struct {
	Roles []string `json:"roles"`
	remote.Info
}

// hostRecords lists every remote host with its roles.
func (h *Hosts) records() []hostRecord {
	var out []hostRecord
	for _, x := range h.all() {
		var roles []string
		if x == h.Server {
			roles = append(roles, "server")
		}
		if x == h.Mock {
			roles = append(roles, "mock")
		}
		for _, l := range h.Load {
			if l == x {
				roles = append(roles, "load")
			}
		}
		out = append(out, hostRecord{Roles: roles, Info: x.Info})
	}
	return out
}

// loadHostDir is a load host's directory in the result directory.
func (r *runner) loadHostDir(x *remote.Host) string {
	return filepath.Join(r.opt.Dir, LoadDir, x.Dest.Label())
}

// readRemoteLoad reads every load host's load.json, writes its load.txt
// and .hgrm pair beside it, and merges them into the run's load.json,
// load.txt and .hgrm pair.
func (r *runner) readRemoteLoad() error {
	parts := make([]*load.Result, len(r.opt.Hosts.Load))
	for i, x := range r.opt.Hosts.Load {
		dir := r.loadHostDir(x)
		lr, err := load.ReadResult(filepath.Join(dir, LoadJSON))
		if err != nil {
			return fmt.Errorf("read load results of %s: %w", x.Dest, err)
		}
		if err := writeLoadFiles(lr, dir); err != nil {
			return err
		}
		parts[i] = lr
	}
	m, err := load.Merge(parts...)
	if err != nil {
		return err
	}
	if err := r.mergeHlogs(); err != nil {
		r.na["hlog"] = err.Error() // the timeline is missing, the figures stand
	}
	if err := report.WriteJSON(r.path(LoadJSON), m); err != nil {
		return err
	}
	return writeLoadFiles(m, r.opt.Dir)
}

// hlogFetchTime bounds fetching one host's interval log (a few kB a second
// of window).
const hlogFetchTime = 30 * time.Second

// mergeHlogs fetches every load host's interval log into load/<host>/ and
// merges them, in this machine's clock, into the run's load.hlog.
func (r *runner) mergeHlogs() error {
	hosts := r.opt.Hosts.Load
	logs := make([][]latency.Interval, len(hosts))
	shift := make([]time.Duration, len(hosts))
	for i, x := range hosts {
		ctx, cancel := context.WithTimeout(context.Background(), hlogFetchTime)
		f := remote.Quote(remote.RunFile(r.hostTag(x), HlogFile))
		data, err := x.Output(ctx, "cat "+f+" && rm -f "+f, nil)
		cancel()
		if err != nil {
			return fmt.Errorf("fetch the interval log: %w", err)
		}
		if err := os.WriteFile(filepath.Join(r.loadHostDir(x), HlogFile), data, 0o644); err != nil {
			return err
		}
		if logs[i], err = latency.ReadIntervalLog(bytes.NewReader(data)); err != nil {
			return fmt.Errorf("%s's interval log: %w", x.Dest, err)
		}
		shift[i] = -x.Info.Clock.Offset
	}
	merged, err := latency.MergeIntervals(logs, shift)
	if err != nil {
		return err
	}
	return writeFile(r.path(HlogFile), func(w io.Writer) error {
		log := latency.NewIntervalLog(w)
		for _, iv := range merged {
			if err := log.Write(iv.Start, iv.End, iv.Histogram); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeLoadFiles writes load.txt (wrk2's layout with the latency spectrum)
// and the .hgrm pair of lr into dir.
func writeLoadFiles(lr *load.Result, dir string) error {
	if err := writeFile(filepath.Join(dir, LoadText), func(w io.Writer) error { return lr.WriteText(w, true, false) }); err != nil {
		return err
	}
	return lr.WriteHgrm(filepath.Join(dir, HgrmPrefix))
}

// makeLoadDirs makes a directory per load host.
func (r *runner) makeLoadDirs() error {
	for _, x := range r.opt.Hosts.Load {
		if err := os.MkdirAll(r.loadHostDir(x), 0o755); err != nil {
			return fmt.Errorf("result directory: %w", err)
		}
	}
	return nil
}
