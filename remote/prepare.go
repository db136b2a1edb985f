package remote

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"strings"

	"github.com/spindle-lab/spindle/cpu"
)

// ErrBadProbe is wrapped when a host's probe output cannot be read.
var ErrBadProbe = errors.New("bad host probe")

// Info is what Prepare found on a host, recorded in config.json.
type Info struct {
	// Dest is the destination as given; Addr the address its roles are
	// reached at (ssh's HostName for it, from ssh -G).
	Dest string `json:"dest"`
	Addr string `json:"addr"`
	// OS and Arch are uname -s and uname -m; Kernel is uname -r.
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Kernel string `json:"kernel"`
	// CPUModel is /proc/cpuinfo's first "model name" ("" where it has
	// none, as on most arm64 hosts); CPUs the online CPUs.
	CPUModel string  `json:"cpu_model"`
	CPUs     cpu.Set `json:"cpus"`
	// Perf is perf's path on the host, "" when absent.
	Perf string `json:"perf,omitempty"`
	// BinarySHA256 is the copied binary's content hash; Copied says
	// whether it was copied now (false: it was already there).
	BinarySHA256 string `json:"binary_sha256"`
	Copied       bool   `json:"copied"`
	// Clock is the host's clock offset from this one.
	Clock Offset `json:"clock"`
}

// probeScript prints the host's facts as key=value lines; present=1 when
// the binary at $1 is already installed and runs.
const probeScript = `printf 'os=%s\narch=%s\nkernel=%s\n' "$(uname -s)" "$(uname -m)" "$(uname -r)"
printf 'cpus=%s\n' "$(cat /sys/devices/system/cpu/online 2>/dev/null)"
printf 'model=%s\n' "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
printf 'perf=%s\n' "$(command -v perf 2>/dev/null)"
printf 'home=%s\n' "$HOME"
`

// parseProbe reads probeScript's output.
func parseProbe(b []byte) (Info, string, error) {
	var in Info
	home := ""
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue // a login banner or motd line
		}
		v = strings.TrimSpace(v)
		seen[k] = true
		switch k {
		case "os":
			in.OS = v
		case "arch":
			in.Arch = v
		case "kernel":
			in.Kernel = v
		case "model":
			in.CPUModel = v
		case "perf":
			in.Perf = v
		case "home":
			home = v
		case "cpus":
			s, err := cpu.ParseList(v)
			if err != nil {
				return Info{}, "", fmt.Errorf("%w: online CPUs: %w", ErrBadProbe, err)
			}
			in.CPUs = s
		}
	}
	for _, k := range []string{"os", "arch", "kernel", "cpus", "home"} {
		if !seen[k] {
			return Info{}, "", fmt.Errorf("%w: no %s in the output", ErrBadProbe, k)
		}
	}
	if in.OS == "" || in.Arch == "" {
		return Info{}, "", fmt.Errorf("%w: uname gave no OS or architecture", ErrBadProbe)
	}
	if len(in.CPUs) == 0 {
		return Info{}, "", fmt.Errorf("%w: no online CPUs listed (/sys/devices/system/cpu/online)", ErrBadProbe)
	}
	return in, home, nil
}

// goArch maps uname -m to Go's GOARCH.
var goArch = map[string]string{
	"x86_64": "amd64", "amd64": "amd64", "i386": "386", "i686": "386",
	"aarch64": "arm64", "arm64": "arm64", "armv7l": "arm", "armv6l": "arm",
	"riscv64": "riscv64", "ppc64le": "ppc64le", "s390x": "s390x",
	"loongarch64": "loong64", "mips64": "mips64",
}

// checkPlatform says whether a host with uname -s osName and uname -m arch
// runs a binary built for goos/goarch.
func checkPlatform(osName, arch, goos, goarch string) error {
	if !strings.EqualFold(osName, goos) {
		return fmt.Errorf("host runs %s %s, this spindle binary is built for %s/%s", osName, arch, goos, goarch)
	}
	if goArch[arch] != goarch {
		return fmt.Errorf("host runs %s %s, this spindle binary is built for %s/%s", osName, arch, goos, goarch)
	}
	return nil
}

// FileSHA256 is the hex SHA-256 of a file's content.
func FileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Prepare makes h ready for a run of the binary exe (its hash sum):
// connects, probes, checks the platform, copies the binary unless present,
// and estimates the clock offset with samples exchanges. Every error names
// the host and the reason in one line.
func (h *Host) Prepare(ctx context.Context, exe, sum string, samples int) error {
	addr, err := h.resolve(ctx)
	if err != nil {
		return err
	}
	if err := h.connect(ctx); err != nil {
		return err
	}
	out, err := h.Output(ctx, probeScript, nil)
	if err != nil {
		return err
	}
	in, home, err := parseProbe(out)
	if err != nil {
		return fmt.Errorf("%s: %w", h.Dest, err)
	}
	if err := checkPlatform(in.OS, in.Arch, runtime.GOOS, runtime.GOARCH); err != nil {
		return fmt.Errorf("%s: %w", h.Dest, err)
	}
	dir := h.s.opt.CacheDir
	if !path.IsAbs(dir) {
		if home == "" {
			return fmt.Errorf("%s: no $HOME for the binary cache (give an absolute cache directory)", h.Dest)
		}
		dir = path.Join(home, dir)
	}
	dir = path.Join(dir, sum)
	remoteExe := path.Join(dir, "spindle")
	in.Dest, in.Addr, in.BinarySHA256 = h.Dest.String(), addr, sum
	// The binary is present when it runs; else it is copied to a
	// temporary name and renamed, so that a concurrent copy (two hosts
	// sharing a home over NFS) never sees half a file.
	check := QuoteArgs([]string{remoteExe, "version"}) + " >/dev/null 2>&1"
	if _, err := h.Output(ctx, check, nil); err != nil {
		if ctx.Err() != nil {
			return err
		}
		f, err := os.Open(exe)
		if err != nil {
			return fmt.Errorf("copy to %s: %w", h.Dest, err)
		}
		tmp := Quote(remoteExe) + ".tmp.$$" // $$: the remote shell's pid
		script := "mkdir -p " + Quote(dir) + " && cat > " + tmp + " && chmod 755 " + tmp + " && mv -f " + tmp + " " + Quote(remoteExe)
		_, err = h.Output(ctx, script, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("copy the binary to %s: %w", remoteExe, err)
		}
		if _, err := h.Output(ctx, QuoteArgs([]string{remoteExe, "version"}), nil); err != nil {
			return fmt.Errorf("the copied binary does not run: %w", err)
		}
		in.Copied = true
	}
	h.Exe = remoteExe
	off, err := h.measureClock(ctx, samples)
	if err != nil {
		return fmt.Errorf("%s: clock offset: %w", h.Dest, err)
	}
	in.Clock = off
	h.Info = in
	return nil
}

// resolve asks ssh for the host's effective HostName (ssh -G applies the
// configuration without connecting).
func (h *Host) resolve(ctx context.Context) (string, error) {
	args := append(h.sshArgs(), "-G")
	args = append(args, h.Dest.args()...)
	cmd := exec.CommandContext(ctx, h.s.opt.SSH, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: ssh -G: %s", h.Dest, failure(err, errb.Bytes()))
	}
	return parseHostName(out, h.Dest.Host), nil
}

// parseHostName finds the hostname line of ssh -G's output; def when none.
func parseHostName(out []byte, def string) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == "hostname" && v != "" {
			return v
		}
	}
	return def
}
