package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/latency"
	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/report"
)

// netLab is three network namespaces on a bridge, each running Debian's
// openssh-server on its own address from 198.18.0.0/15 (the range reserved
// for benchmarking), with host and user keys made for the test, and an ssh
// configuration naming them ns1, ns2, ns3.
type netLab struct {
	t      *testing.T
	id     string   // prefix of every name the lab makes
	ns     []string // namespace names
	addrs  []string // their addresses
	dir    string
	config string // ssh client configuration
	sshd   []*exec.Cmd
}

// ipCmd runs ip with args, failing the test on error.
func (l *netLab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newNetLab makes the lab, or skips the test with the reason when the
// machine cannot (not root, no ip, sshd or ssh, no namespaces).
func newNetLab(t *testing.T) *netLab {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-host lab: not in -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("multi-host lab needs root (ip netns, sshd)")
	}
	for _, p := range []string{"ip", "ssh", "ssh-keygen", "/usr/sbin/sshd"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("multi-host lab needs %s (iproute2, openssh-client, openssh-server): %v", p, err)
		}
	}
	pid := os.Getpid()
	l := &netLab{t: t, id: fmt.Sprintf("spt%d", pid%100000), dir: t.TempDir()}
	// A /24 of 198.18.0.0/15 per test process, so parallel runs differ.
	net := fmt.Sprintf("198.%d.%d", 18+pid/250%2, pid%250)
	probe := l.id + "p"
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		t.Skipf("multi-host lab: cannot make network namespaces: %v: %s", err, out)
	}
	exec.Command("ip", "netns", "del", probe).Run()
	t.Cleanup(l.close)
	br := l.id + "b"
	l.ip("link", "add", br, "type", "bridge")
	l.ip("addr", "add", net+".1/24", "dev", br)
	l.ip("link", "set", br, "up")
	for i := 1; i <= 3; i++ {
		ns := fmt.Sprintf("%sn%d", l.id, i)
		host, peer := fmt.Sprintf("%sh%d", l.id, i), fmt.Sprintf("%sv%d", l.id, i)
		a := fmt.Sprintf("%s.%d", net, i+1)
		l.ip("netns", "add", ns)
		l.ns, l.addrs = append(l.ns, ns), append(l.addrs, a)
		l.ip("link", "add", host, "type", "veth", "peer", "name", peer)
		l.ip("link", "set", peer, "netns", ns)
		l.ip("link", "set", host, "master", br, "up")
		l.ip("-n", ns, "addr", "add", a+"/24", "dev", peer)
		l.ip("-n", ns, "link", "set", peer, "up")
		l.ip("-n", ns, "link", "set", "lo", "up")
	}
	l.keys()
	for i := range l.ns {
		l.startSSHD(i)
	}
	return l
}

// keys makes the host and user keys, the authorized keys, known hosts and
// the client configuration.
func (l *netLab) keys() {
	t := l.t
	for _, k := range []string{"host", "user"} {
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(l.dir, k)).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(l.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	hostPub, userPub := read("host.pub"), read("user.pub")
	var known, cfg strings.Builder
	for i, a := range l.addrs {
		fmt.Fprintf(&known, "%s %s\n", a, hostPub)
		fmt.Fprintf(&cfg, "Host ns%d\n  HostName %s\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n"+
			"  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n\n",
			i+1, a, filepath.Join(l.dir, "user"), filepath.Join(l.dir, "known_hosts"))
	}
	l.config = filepath.Join(l.dir, "ssh_config")
	for name, body := range map[string]string{"authorized_keys": userPub + "\n", "known_hosts": known.String(), "ssh_config": cfg.String()} {
		if err := os.WriteFile(filepath.Join(l.dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation directory
		t.Fatal(err)
	}
}

// startSSHD starts sshd in namespace i and waits until it accepts.
func (l *netLab) startSSHD(i int) {
	t := l.t
	cfg := filepath.Join(l.dir, fmt.Sprintf("sshd%d.conf", i+1))
	body := fmt.Sprintf("ListenAddress %s\nPort 22\nHostKey %s\nPidFile %s\nAuthorizedKeysFile %s\n"+
		"PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"+
		"StrictModes no\nClientAliveInterval 1\nClientAliveCountMax 2\nLogLevel ERROR\n",
		l.addrs[i], filepath.Join(l.dir, "host"), filepath.Join(l.dir, fmt.Sprintf("sshd%d.pid", i+1)),
		filepath.Join(l.dir, "authorized_keys"))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", l.ns[i], "/usr/sbin/sshd", "-D", "-e", "-f", cfg)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("sshd: %v", err)
	}
	for len(l.sshd) <= i {
		l.sshd = append(l.sshd, nil)
	}
	l.sshd[i] = cmd
	go cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command("ssh", "-F", l.config, "-o", "BatchMode=yes", "-o", "ConnectTimeout=2", fmt.Sprintf("ns%d", i+1), "true").CombinedOutput()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd in %s never answered: %v: %s; sshd: %s", l.ns[i], err, out, errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// procs lists the processes in namespace i other than its sshd listener,
// as "pid comm args".
func (l *netLab) procs(i int) []string {
	out, err := exec.Command("ip", "netns", "pids", l.ns[i]).Output()
	if err != nil {
		l.t.Fatalf("ip netns pids %s: %v", l.ns[i], err)
	}
	listener := l.listenerPID(i)
	var left []string
	for _, f := range strings.Fields(string(out)) {
		pid, _ := strconv.Atoi(f)
		if pid == listener {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // exited since the listing
		}
		left = append(left, f+" "+strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "))
	}
	return left
}

// listenerPID is the pid of the sshd listener of namespace i (ip netns
// exec execs sshd, so it is the command's pid), or -1 when it is gone.
func (l *netLab) listenerPID(i int) int {
	c := l.sshd[i]
	if c == nil || syscall.Kill(c.Process.Pid, 0) != nil {
		return -1
	}
	return c.Process.Pid
}

// noneLeft waits a few seconds for every namespace to hold nothing but its
// sshd listener.
func (l *netLab) noneLeft(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(8 * time.Second)
	for {
		var left []string
		for i := range l.ns {
			for _, p := range l.procs(i) {
				left = append(left, l.ns[i]+": "+p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left in the namespaces:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killIn kills the processes of namespace i whose command line contains
// match (the sshd listener included when it matches).
func (l *netLab) killIn(i int, match func(cmdline string) bool) int {
	out, _ := exec.Command("ip", "netns", "pids", l.ns[i]).Output()
	n := 0
	for _, f := range strings.Fields(string(out)) {
		pid, _ := strconv.Atoi(f)
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && match(strings.ReplaceAll(string(cmdline), "\x00", " ")) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}

// close kills everything in the namespaces and removes them and the bridge.
func (l *netLab) close() {
	for i := range l.ns {
		l.killIn(i, func(string) bool { return true })
		exec.Command("ip", "netns", "del", l.ns[i]).Run()
	}
	// A veth pair goes with its namespace, unless the namespace outlives
	// its name for a moment: delete this side too (gone already is fine).
	for i := 1; i <= 3; i++ {
		exec.Command("ip", "link", "del", fmt.Sprintf("%sh%d", l.id, i)).Run()
	}
	exec.Command("ip", "link", "del", l.id+"b").Run()
	// The hosts share this machine's /tmp: the run files of a host that
	// was unreachable at the end (its cleanup pass could not run) are here.
	for i := 1; i <= 3; i++ {
		files, _ := filepath.Glob(fmt.Sprintf("/tmp/spindle-*-ns%d-*", i))
		for _, f := range files {
			os.RemoveAll(f)
		}
	}
}

// benchArgs are a short multi-host bench into dir: server and mock in ns1,
// the load split over ns2 and ns3.
func (l *netLab) benchArgs(dir string, duration time.Duration) []string {
	return []string{"bench", "--output-dir", dir, "--ssh-config", l.config, "--remote-cache", filepath.Join(l.dir, "cache"),
		"--server-host", "ns1", "--load-hosts", "ns2,ns3", "--mode", "carrier", "--rate", "200", "--connections", "4",
		"--mock-think-time", "0", "--warmup", "500ms", "--duration", duration.String(), "--perf-stat"}
}

// waitFile waits for path to exist.
func waitFile(t *testing.T, path string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMultiHost runs bench with real hosts: network namespaces with sshd.
// The merged histogram counts what the load hosts counted together; a
// remote role killed, the coordinator interrupted and a host dropped
// mid-run each leave the run incomplete and no process in any namespace.
func TestMultiHost(t *testing.T) {
	l := newNetLab(t)
	exe := spindleBinary(t)

	t.Run("merged", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "res")
		// A 2 s window: each load host's observer starts over SSH and must
		// sample inside it, which a 1 s window left too little time for
		// under -race on a loaded 2-CPU machine (threads.txt missing once).
		out, err := exec.Command(exe, l.benchArgs(dir, 2*time.Second)...).CombinedOutput()
		if err != nil {
			t.Fatalf("bench: %v\n%s", err, out)
		}
		var merged load.Result
		if err := latency.ReadJSONFile(filepath.Join(dir, "load.json"), &merged); err != nil {
			t.Fatal(err)
		}
		var count, completed, intended int64
		var starts []time.Time
		for _, h := range []string{"ns2", "ns3"} {
			p, err := load.ReadResult(filepath.Join(dir, "load", h, "load.json"))
			if err != nil {
				t.Fatalf("%s: %v", h, err)
			}
			if p.Config.Connections != 2 || p.Config.Rate != 100 {
				t.Errorf("%s ran %d connections at %v req/s, want 2 at 100", h, p.Config.Connections, p.Config.Rate)
			}
			for _, f := range []string{"load.txt", "load.corrected.hgrm", "load.log", "load.hlog", "threads.txt", "threads.json"} {
				if _, err := os.Stat(filepath.Join(dir, "load", h, f)); err != nil {
					res, _ := report.Load(dir)
					t.Errorf("%s: %v (n/a: %q)", h, err, res.Summary.NA["threads load@"+h])
				}
			}
			count += p.Corrected.Count
			starts = append(starts, p.Start)
			completed += p.Completed
			intended += p.Intended
		}
		// The hosts started on the common instant (the same clock here).
		if d := starts[0].Sub(starts[1]).Abs(); d > 50*time.Millisecond {
			t.Errorf("load hosts started %v apart: %v, %v", d, starts[0], starts[1])
		}
		if merged.Corrected.Count == 0 || merged.Corrected.Count != count || merged.Completed != completed || merged.Intended != intended {
			t.Errorf("merged count %d, completed %d, intended %d; the hosts' sums %d, %d, %d",
				merged.Corrected.Count, merged.Completed, merged.Intended, count, completed, intended)
		}
		if err := merged.Check(); err != nil {
			t.Error(err)
		}
		var sum report.Summary
		if err := latency.ReadJSONFile(filepath.Join(dir, report.SummaryFile), &sum); err != nil {
			t.Fatal(err)
		}
		// The server was observed on its host: its threads, and perf stat
		// (figures, or the reason there are none).
		if sum.Server == nil || sum.Server.Threads == 0 {
			t.Errorf("no server thread figures from ns1: %+v, n/a %v", sum.Server, sum.NA)
		}
		var threads struct {
			Processes []struct{ Name string } `json:"processes"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "threads.json")); err != nil {
			t.Error(err)
		} else if err := json.Unmarshal(b, &threads); err != nil || len(threads.Processes) != 2 ||
			threads.Processes[0].Name != "server" || threads.Processes[1].Name != "mock" {
			t.Errorf("threads.json processes %+v (%v), want the server and the mock of ns1", threads.Processes, err)
		}
		if sum.Load == nil || sum.Load.Threads == 0 { // the busiest load host's threads
			t.Errorf("no load thread figures from ns2, ns3: %+v, n/a %v", sum.Load, sum.NA)
		}
		// The hosts' interval logs merged into one, in this clock.
		if f, err := os.Open(filepath.Join(dir, "load.hlog")); err != nil {
			t.Errorf("no merged interval log: %v (n/a %q)", err, sum.NA["hlog"])
		} else {
			ivs, err := latency.ReadIntervalLog(f)
			f.Close()
			if err != nil || len(ivs) == 0 {
				t.Errorf("merged interval log: %d intervals, %v", len(ivs), err)
			}
		}
		if sum.Carrier == nil { // /debug/carrier read over the network from ns1
			t.Errorf("no carrier figures: %s", sum.NA["carrier"])
		}
		if sum.Perf == nil && sum.NA["perf-stat"] == "" {
			t.Errorf("perf stat: neither figures nor a reason")
		}
		for _, f := range []string{"threads.txt", "threads.json", "perf-stat.txt"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Error(err)
			}
		}
		if !sum.Complete || sum.Hosts != "server ns1, mock ns1, load ns2,ns3" || sum.Requests != completed {
			t.Errorf("summary: complete %v (%s), hosts %q, requests %d (want %d)", sum.Complete, sum.Reason, sum.Hosts, sum.Requests, completed)
		}
		var cfg struct {
			Hosts []struct {
				Dest   string   `json:"dest"`
				Roles  []string `json:"roles"`
				Kernel string   `json:"kernel"`
				SHA    string   `json:"binary_sha256"`
				Clock  struct {
					Samples int `json:"samples"`
				} `json:"clock"`
			} `json:"hosts"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "config.json")); err != nil {
			t.Fatal(err)
		} else if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		if len(cfg.Hosts) != 3 {
			t.Fatalf("config.json hosts %+v, want 3", cfg.Hosts)
		}
		for _, h := range cfg.Hosts {
			if h.Kernel == "" || len(h.SHA) != 64 || h.Clock.Samples == 0 || len(h.Roles) == 0 {
				t.Errorf("config.json host %+v incomplete", h)
			}
		}
		t.Logf("bench output:\n%s", out)
		l.noneLeft(t)
	})

	t.Run("compare", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "cmp")
		out, err := exec.Command(exe, "compare", "--output-dir", dir, "--ssh-config", l.config,
			"--remote-cache", filepath.Join(l.dir, "cache"), "--server-host", "ns1", "--load-hosts", "ns2,ns3",
			"--only", "carrier", "--rounds", "1", "--warmup", "300ms", "--duration", "700ms").CombinedOutput()
		if err != nil {
			t.Fatalf("compare: %v\n%s", err, out)
		}
		md, err := os.ReadFile(filepath.Join(dir, report.File))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(md), "Roles on other hosts: server ns1, mock ns1, load ns2,ns3") {
			t.Errorf("report.md does not show the hosts:\n%s", md)
		}
		// The binary is in the hosts' cache since the first run: not copied again.
		cfgs, _ := filepath.Glob(filepath.Join(dir, "*", "*", "config.json"))
		if len(cfgs) == 0 {
			t.Fatalf("no config.json under %s", dir)
		}
		var cfg struct {
			Hosts []struct {
				Dest   string `json:"dest"`
				Copied bool   `json:"copied"`
			} `json:"hosts"`
		}
		if b, err := os.ReadFile(cfgs[0]); err != nil || json.Unmarshal(b, &cfg) != nil || len(cfg.Hosts) != 3 {
			t.Fatalf("%s: %v %+v", cfgs[0], err, cfg)
		}
		for _, h := range cfg.Hosts {
			if h.Copied {
				t.Errorf("%s: the binary was copied again", h.Dest)
			}
		}
		l.noneLeft(t)
	})

	// fault runs a bench that fault interrupts once the load has started,
	// and checks the run is marked incomplete with nothing left behind.
	fault := func(t *testing.T, fault func(cmd *exec.Cmd), reason string, extra ...string) {
		dir := filepath.Join(t.TempDir(), "res")
		cmd := exec.Command(exe, append(l.benchArgs(dir, 20*time.Second), extra...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { cmd.Process.Kill() })
		waitFile(t, filepath.Join(dir, "load", "ns3", "load.log"), 20*time.Second)
		time.Sleep(time.Second) // every role is running on its host (the load waiting for its start)
		fault(cmd)
		faulted := time.Now()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("bench succeeded despite the fault:\n%s", out.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("bench still running 30s after the fault:\n%s", out.String())
		}
		var sum report.Summary
		if err := latency.ReadJSONFile(filepath.Join(dir, report.SummaryFile), &sum); err != nil {
			t.Fatal(err)
		}
		t.Logf("ended %v after the fault; reason: %s; n/a: %v", time.Since(faulted).Round(time.Millisecond), sum.Reason, sum.NA)
		if sum.Complete || !strings.Contains(sum.Reason, reason) {
			t.Errorf("summary complete %v, reason %q; want incomplete with %q", sum.Complete, sum.Reason, reason)
		}
		l.noneLeft(t)
	}
	t.Run("role-killed", func(t *testing.T) {
		fault(t, func(*exec.Cmd) {
			if l.killIn(0, func(c string) bool { return strings.Contains(c, " serve ") && !strings.Contains(c, "remote exec") }) == 0 {
				t.Error("no server process found in ns1")
			}
		}, "server@ns1")
	})
	t.Run("coordinator-cancelled", func(t *testing.T) {
		fault(t, func(cmd *exec.Cmd) { cmd.Process.Signal(os.Interrupt) }, "interrupted")
	})
	t.Run("host-dropped", func(t *testing.T) {
		fault(t, func(*exec.Cmd) {
			if l.killIn(2, func(c string) bool { return strings.Contains(c, "sshd") }) == 0 {
				t.Error("no sshd found in ns3")
			}
		}, "load@ns3 lost its ssh session")
	})
	// ns3's sshd is gone now: a host that cannot be reached is bad input,
	// named, with nothing started anywhere.
	t.Run("unreachable", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "res")
		cmd := exec.Command(exe, l.benchArgs(dir, time.Second)...)
		out, err := cmd.CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if cmd.ProcessState.ExitCode() != 2 || len(lines) != 1 || !strings.Contains(lines[0], "ns3") {
			t.Errorf("bench with ns3 down: %v, output %q; want exit 2 and one line naming ns3", err, out)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("a result directory was made: %s", dir)
		}
		l.noneLeft(t)
	})
	// A host unplugged: its link deleted mid-run. ssh notices the silence
	// (ServerAlive), its sshd the lost client (ClientAlive), which ends
	// the session and so the role; the cleanup pass cannot reach it and
	// says so; --ssh-option shortens both waits (ServerAliveCountMax=2,
	// ConnectTimeout=1: the user's options win over spindle's).
	t.Run("host-unplugged", func(t *testing.T) {
		if l.listenerPID(2) < 0 { // host-dropped killed it
			l.startSSHD(2)
		}
		fault(t, func(*exec.Cmd) { l.ip("link", "del", l.id+"h2") }, "load@ns2 lost its ssh session",
			"--ssh-option", "ConnectTimeout=1", "--ssh-option", "ServerAliveCountMax=2")
	})
}
