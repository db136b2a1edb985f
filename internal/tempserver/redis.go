package tempserver

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Redis starts redis-server on a free loopback port, saving nothing, and
// returns it; its Addr is 127.0.0.1:PORT. It fails with a *MissingError
// where redis-server is not installed.
func Redis(o Options) (*Server, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, &MissingError{"redis-server not found (install the Debian package redis-server)"}
	}
	dir, err := os.MkdirTemp("", "spindle-redis-")
	if err != nil {
		return nil, err
	}
	s, port, err := startOnFreePort(dir, program{
		name:     "redis-server",
		cpus:     o.CPUs,
		stopSig:  syscall.SIGTERM, // saves nothing (--save ''), exits at once
		deathSig: syscall.SIGKILL, // nothing to clean up
		path:     path,
		args: func(port int) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
				"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no"}
		},
		ready: func(port int) error { return redisPing(redisAddr(port)) },
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.addr = redisAddr(port)
	return s, nil
}

// redisAddr is the address of a Redis server on port of 127.0.0.1.
func redisAddr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

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
