package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"

	"github.com/spindle-lab/spindle/bench"
	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/remote"
)

// hostFlags place bench's and compare's roles on other hosts over SSH
// (docs/bench.md, "Roles on other hosts").
type hostFlags struct {
	server, mock, loads  string
	serverAddr, mockAddr string
	sshConfig, cacheDir  string
	sshOptions           cliflag.Strings
}

func (h *hostFlags) register(fs *flagSet) {
	fs.StringVar(&h.server, "server-host", "", "run the server on this SSH `DEST`ination, [user@]host[:port] (default: this machine)")
	fs.StringVar(&h.mock, "mock-host", "", "run the mock on this SSH `DEST`ination (default: the server's host)")
	fs.StringVar(&h.loads, "load-hosts", "", "split the load over these SSH `DESTS` (comma-separated); histograms merged exactly (default: this machine)")
	fs.StringVar(&h.serverAddr, "server-addr", "", "IP address the load generators reach the server at (default: the server host's address from ssh -G)")
	fs.StringVar(&h.mockAddr, "mock-addr", "", "IP address the server reaches the mock at (default: the mock host's address)")
	fs.StringVar(&h.sshConfig, "ssh-config", "", "ssh configuration `FILE` instead of ~/.ssh/config (ssh -F)")
	fs.Var(&h.sshOptions, "ssh-option", "ssh option `K=V`, passed as -o K=V (repeatable)")
	fs.StringVar(&h.cacheDir, "remote-cache", remote.DefaultCacheDir, "`DIR` on the hosts the binary is copied into by content hash (relative to the remote home)")
}

// any says whether a role goes to another host.
func (h *hostFlags) any() bool { return h.server != "" || h.mock != "" || h.loads != "" }

// open checks the flags, reaches and prepares every host (OS and
// architecture, the binary copied, CPUs and tools probed, clock offset)
// and returns the placement, or nil when every role runs here. Every
// failure is bad input naming the host, with nothing left started; close
// ends the SSH connections.
func (h *hostFlags) open(ctx context.Context) (hosts *bench.Hosts, closeFn func(), err error) {
	closeFn = func() {}
	if !h.any() {
		if h.serverAddr != "" || h.mockAddr != "" {
			return nil, closeFn, badInput("--server-addr and --mock-addr need --server-host, --mock-host or --load-hosts")
		}
		return nil, closeFn, nil
	}
	for _, a := range []struct{ name, v string }{{"server-addr", h.serverAddr}, {"mock-addr", h.mockAddr}} {
		if a.v != "" {
			if _, err := netip.ParseAddr(a.v); err != nil {
				return nil, closeFn, badInput("--%s %q: want an IP address", a.name, a.v)
			}
		}
	}
	parse := func(flag, s string) (*remote.Dest, error) {
		if s == "" {
			return nil, nil
		}
		d, err := remote.ParseDest(s)
		if err != nil {
			return nil, badInput("--%s: %v", flag, err)
		}
		return &d, nil
	}
	sd, err := parse("server-host", h.server)
	if err != nil {
		return nil, closeFn, err
	}
	md, err := parse("mock-host", h.mock)
	if err != nil {
		return nil, closeFn, err
	}
	var lds []remote.Dest
	if h.loads != "" {
		if lds, err = remote.ParseDests(h.loads); err != nil {
			return nil, closeFn, badInput("--load-hosts: %v", err)
		}
	}
	s, err := remote.NewSession(remote.Options{ConfigFile: h.sshConfig, SSHOptions: h.sshOptions, CacheDir: h.cacheDir})
	if err != nil {
		return nil, closeFn, asBadInput(err)
	}
	closeFn = func() { _ = s.Close() }
	hosts = &bench.Hosts{ServerAddr: h.serverAddr, MockAddr: h.mockAddr}
	if sd != nil {
		hosts.Server = s.Host(*sd)
	}
	if md == nil && sd != nil {
		md = sd // the mock beside the server by default
	}
	if md != nil {
		hosts.Mock = s.Host(*md)
	}
	for _, d := range lds {
		hosts.Load = append(hosts.Load, s.Host(d))
	}
	if err := hosts.Check(); err != nil {
		closeFn()
		return nil, func() {}, badInput("%v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		closeFn()
		return nil, func() {}, fmt.Errorf("find the spindle binary: %w", err)
	}
	if err := hosts.Prepare(ctx, exe); err != nil {
		closeFn()
		if ctx.Err() != nil { // interrupted, not the user's hosts at fault
			return nil, func() {}, fmt.Errorf("prepare the hosts: %w", ctx.Err())
		}
		return nil, func() {}, badInput("%v", err)
	}
	return hosts, closeFn, nil
}
