package testsvc

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// startRedis starts redis-server on a free loopback port, saving nothing,
// and returns it with its address.
func startRedis() (*server, string, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", &missingError{"redis-server not found (install the Debian package redis-server)"}
	}
	dir, err := os.MkdirTemp("", "testsvc-redis-")
	if err != nil {
		return nil, "", err
	}
	s, port, err := startOnFreePort(func(port int) (*server, error) {
		s, err := spawn("redis-server", dir, filepath.Join(dir, "redis.log"), nil,
			syscall.SIGTERM, // saves nothing (--save ''), exits at once
			syscall.SIGKILL, // nothing to clean up
			path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no")
		if err != nil {
			return nil, err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err := s.waitReady(func() error { return redisPing(addr) }); err != nil {
			s.stop()
			return nil, err
		}
		return s, nil
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return s, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// redisPing sends PING to the Redis server at addr and wants its PONG.
func redisPing(addr string) error {
	// probeTimeout bounds one probe; waitReady repeats them.
	const probeTimeout = 2 * time.Second
	c, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(probeTimeout))
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return err
	}
	const pong = "+PONG\r\n"
	buf := make([]byte, len(pong))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != pong {
		return fmt.Errorf("PING answered %q", buf)
	}
	return nil
}
