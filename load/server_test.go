package load

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testServer is a raw TCP HTTP/1.1 server for the tests: one goroutine per
// connection, requests read up to the blank line (no bodies), and a hook
// that decides, per request, how to answer.
type testServer struct {
	ln       net.Listener
	accepted atomic.Int64
	requests atomic.Int64
	// answer is called for request n (from 1, over all connections) and
	// writes the response to w; returning false closes the connection.
	answer func(n int64, w io.Writer) bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
}

const okResponse = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"

func startServer(t testing.TB, answer func(n int64, w io.Writer) bool) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, answer)
}

// serveOn serves on ln (a TLS listener for the https tests).
func serveOn(t testing.TB, ln net.Listener, answer func(n int64, w io.Writer) bool) *testServer {
	s := &testServer{ln: ln, answer: answer, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.close)
	return s
}

func (s *testServer) url() string { return "http://" + s.ln.Addr().String() + "/" }

func (s *testServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.handle(c)
	}
}

func (s *testServer) handle(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReader(c)
	for {
		if err := readRequest(r); err != nil {
			return
		}
		if !s.answer(s.requests.Add(1), c) {
			return
		}
	}
}

// close stops the listener and drops every connection.
func (s *testServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// readRequest consumes one request head (the tests send no bodies).
func readRequest(r *bufio.Reader) error {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return nil
		}
	}
}

// sleepPrecise waits d, sleeping for most of it and spinning the rest, so
// that a "1 ms" server answers in 1 ms and not in 1 ms plus timer slack.
func sleepPrecise(d time.Duration) {
	end := time.Now().Add(d)
	if d > 300*time.Microsecond {
		time.Sleep(d - 300*time.Microsecond)
	}
	for time.Now().Before(end) {
	}
}

func answerOK(_ int64, w io.Writer) bool {
	_, err := io.WriteString(w, okResponse)
	return err == nil
}

// helperServerEnv makes the test binary a server process (see
// TestHelperServer): its value names how the server answers. A separate
// process keeps the server's goroutines off the load generator's Go
// scheduler, as in real use, and lets a test kill a real server mid-run.
const helperServerEnv = "SPINDLE_LOAD_HELPER_SERVER"

// Helper server modes.
const (
	modeOK    = "ok"    // answer at once
	mode1ms   = "1ms"   // answer each request 1 ms after it arrived
	modeStall = "stall" // answer at once, except one 500 ms stall 1 s after the first request
	modeTLS   = "tls"   // answer at once, over TLS 1.3 with a self-signed certificate
)

func helperServerMain(mode string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error", err)
		return
	}
	fmt.Println(ln.Addr().String())
	if mode == modeTLS {
		cert, err := testCert()
		if err != nil {
			fmt.Println("error", err)
			return
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	var first time.Time
	var once sync.Once
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for readRequest(r) == nil {
				switch mode {
				case mode1ms:
					sleepPrecise(time.Millisecond)
				case modeStall:
					once.Do(func() { first = time.Now() })
					// Everything arriving between 1.0 s and 1.5 s after the
					// first request waits until 1.5 s.
					since := time.Since(first)
					if since >= time.Second && since < 1500*time.Millisecond {
						time.Sleep(1500*time.Millisecond - since)
					}
				}
				if _, err := io.WriteString(c, okResponse); err != nil {
					return
				}
			}
		}()
	}
}

// startChild starts the helper server process in mode and returns its
// address and process (killed at the end of the test).
func startChild(t *testing.T, mode string) (string, *exec.Cmd) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestHelperServer$")
	cmd.Env = append(os.Environ(), helperServerEnv+"="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(kill)
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(addr, "error") {
		t.Fatalf("helper server: %q %v", addr, err)
	}
	return strings.TrimSpace(addr), cmd
}
