package tempserver

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStop starts a server of each kind, stops it, and wants the process gone, its port closed and its
// directory removed.
func TestStop(t *testing.T) {
	for name, start := range map[string]func(Options) (*Server, error){"postgres": Postgres, "redis": Redis} {
		t.Run(name, func(t *testing.T) {
			s, err := start(Options{})
			var missing *MissingError
			if errors.As(err, &missing) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			hostPort := s.HostPort()
			if err := tcpAnswers(hostPort); err != nil {
				t.Fatalf("before stop: %v", err)
			}
			if err := s.Stop(); err != nil {
				t.Error(err)
			}
			select {
			case <-s.exited:
			default:
				t.Error("the process runs on after stop")
			}
			if err := tcpAnswers(hostPort); err == nil {
				t.Errorf("%s still accepts connections after stop", hostPort)
			}
			if _, err := os.Stat(s.dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("directory %s after stop: %v", s.dir, err)
			}
		})
	}
}

// TestStartExits starts a program that exits at once, and wants
// startOnFreePort to try startAttempts ports and fail saying so, with the
// end of the program's log.
func TestStartExits(t *testing.T) {
	dir := t.TempDir()
	var ports []int
	_, _, err := startOnFreePort(dir, program{
		name: "sh", stopSig: syscall.SIGTERM, deathSig: syscall.SIGKILL, path: "/bin/sh",
		args: func(port int) []string {
			ports = append(ports, port)
			return []string{"-c", "echo cannot bind port $0; exit 3", strconv.Itoa(port)}
		},
		ready: func(int) error { return errors.New("no answer") },
	})
	if !errors.Is(err, errExited) || !strings.Contains(err.Error(), "cannot bind port") {
		t.Errorf("error %v; want %v with the log's end", err, errExited)
	}
	if len(ports) != startAttempts {
		t.Errorf("tried ports %v; want %d attempts", ports, startAttempts)
	}
}

// tcpAnswers reports whether a TCP connection to addr is accepted.
func tcpAnswers(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}
