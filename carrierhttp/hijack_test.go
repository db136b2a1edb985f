package carrierhttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hijackHandler hijacks through http.ResponseController, after setting a
// status with WriteHeader when the query says so, and writes on the raw
// connection what it saw: the buffered input Hijack handed over (the
// request's unread body and pipelined requests must be there), and the
// errors of the ResponseWriter's uses after the hijack. Then it closes.
func hijackHandler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if st := q.Get("status"); st != "" {
		code, _ := strconv.Atoi(st)
		w.Header().Set("X-Before", "1")
		w.WriteHeader(code)
	}
	if q.Has("body") {
		io.WriteString(w, "held body, dropped by the hijack")
	}
	rc := http.NewResponseController(w)
	conn, brw, err := rc.Hijack()
	if err != nil {
		http.Error(w, "hijack: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	buffered, _ := brw.Reader.Peek(brw.Reader.Buffered())
	_, werr := w.Write([]byte("x"))
	_, werr0 := w.Write(nil)
	_, _, herr := rc.Hijack()
	w.WriteHeader(http.StatusTeapot) // logged and ignored
	fmt.Fprintf(brw, "\r\nbuffered %q\nwrite %v\nempty write %v\nsecond hijack %v\n", buffered, werr, werr0, herr)
	brw.Flush()
}

// rawOutcome sends raw to addr in one write and reads everything the
// server sends until it closes, with the Date field's value blanked.
func rawOutcome(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading until the close: %v (read %q)", err, b)
	}
	return dateField.ReplaceAllString(string(b), "Date: D\r\n")
}

var dateField = regexp.MustCompile(`Date: [^\r]*\r\n`)

// TestHijackDifferential hijacks on carriers and under net/http's server
// with the same handler and raw requests, and compares every byte the
// client gets (but the Date): the head sent before the hijack, the input
// handed over in the buffered reader (a body, pipelined requests), and the
// errors of the ResponseWriter afterwards.
func TestHijackDifferential(t *testing.T) {
	h := http.HandlerFunc(hijackHandler)
	_, carrierAddr := startCarrier(t, h, nil)
	netAddr := startNetHTTP(t, h)
	cases := []struct{ name, raw string }{
		{"plain", "GET /h HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"pipelined", "GET /h HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\nwebsocket frames"},
		{"unread body", "POST /h HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello worldGET /x HTTP/1.1\r\n\r\n"},
		{"after WriteHeader", "GET /h?status=202 HTTP/1.1\r\nHost: x\r\n\r\nmore"},
		{"after WriteHeader(101)", "GET /h?status=101 HTTP/1.1\r\nHost: x\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nframes"},
		{"after WriteHeader and a held body", "GET /h?status=200&body HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"HTTP/1.0", "GET /h HTTP/1.0\r\n\r\nrest"},
		{"expects 100-continue", "PUT /h HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, want := rawOutcome(t, carrierAddr, tc.raw), rawOutcome(t, netAddr, tc.raw)
			if got != want {
				t.Errorf("carriers sent\n%s\nnet/http sent\n%s", got, want)
			}
			if !strings.Contains(got, "second hijack "+http.ErrHijacked.Error()) {
				t.Errorf("the handler did not run to its report: %q", got)
			}
		})
	}
}

// TestHijackHandsOver checks what follows a hijack on carriers: ConnState
// ends at StateHijacked, the connection stays open after the handler
// returns (a goroutine serves it), Shutdown neither waits for it nor closes
// it, Flush says http.ErrHijacked, and a request body read after the
// hijack fails instead of taking the hijacker's bytes.
func TestHijackHandsOver(t *testing.T) {
	var mu sync.Mutex
	var states []http.ConnState
	after := make(chan string, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_, berr := r.Body.Read(make([]byte, 1))
		after <- fmt.Sprintf("flush %v, body %v", http.NewResponseController(w).Flush(), berr)
		go func() { // echoes lines until the client closes: the handler has returned by then
			defer conn.Close()
			for {
				line, err := brw.ReadString('\n')
				if err != nil {
					return
				}
				brw.WriteString("echo " + line)
				if brw.Flush() != nil {
					return
				}
			}
		}()
	})
	s, addr := startCarrier(t, h, func(s *Server) {
		s.ConnState = func(_ net.Conn, st http.ConnState) {
			mu.Lock()
			states = append(states, st)
			mu.Unlock()
		}
	})
	c := dial(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\none\n\n")
	if got, want := <-after, "flush "+http.ErrHijacked.Error()+", body "+http.ErrHijacked.Error(); got != want {
		t.Errorf("after the hijack: %s, want %s", got, want)
	}
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for _, want := range []string{"echo one\n", "echo \n"} { // the body's bytes, handed over
		if line, err := br.ReadString('\n'); line != want {
			t.Fatalf("read %q, %v; want %q", line, err, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown waited for a hijacked connection: %v", err)
	}
	io.WriteString(c, "after shutdown\n")
	if line, err := br.ReadString('\n'); line != "echo after shutdown\n" {
		t.Fatalf("after Shutdown the hijacked connection read %q, %v", line, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []http.ConnState{http.StateNew, http.StateActive, http.StateHijacked}; !slices.Equal(states, want) {
		t.Errorf("states %v, want %v", states, want)
	}
}

// TestHijackPanics: a handler that panics after hijacking leaves the
// connection to the hijacker (net/http does the same), and the server
// serves on.
func TestHijackPanics(t *testing.T) {
	kept := make(chan net.Conn, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			io.WriteString(w, "ok")
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		kept <- conn
		panic("after the hijack")
	})
	_, addr := startCarrier(t, h, nil)
	c := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	conn := <-kept
	go func() {
		io.WriteString(conn, "still mine")
		conn.Close()
	}()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := io.ReadAll(c); string(b) != "still mine" || err != nil {
		t.Fatalf("the client read %q, %v", b, err)
	}
	resp, err := http.Get("http://" + addr + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("after the panic: %q", b)
	}
}

// TestFullDuplex: with EnableFullDuplex a handler reads the request body
// after it flushed the head and echoes it line by line while the client
// still sends (net/http's behaviour); the connection serves a next request.
func TestFullDuplex(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			t.Error(err)
		}
		if r.URL.Path == "/next" {
			io.WriteString(w, "next")
			return
		}
		rc.Flush()
		br := bufio.NewReader(r.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			io.WriteString(w, "echo "+line)
			rc.Flush()
		}
	})
	for _, srv := range []struct {
		name string
		addr func() string
	}{
		{"carriers", func() string { _, a := startCarrier(t, h, nil); return a }},
		{"net/http", func() string { return startNetHTTP(t, h) }},
	} {
		t.Run(srv.name, func(t *testing.T) {
			c := dial(t, srv.addr())
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body := bufio.NewReader(resp.Body)
			for _, line := range []string{"one\n", "two\n"} {
				fmt.Fprintf(c, "%x\r\n%s\r\n", len(line), line)
				if got, err := body.ReadString('\n'); got != "echo "+line {
					t.Fatalf("read %q, %v; want the echo of %q while the body is still open", got, err, line)
				}
			}
			io.WriteString(c, "0\r\n\r\n")
			if rest, err := io.ReadAll(body); len(rest) != 0 || err != nil {
				t.Fatalf("after the body: %q, %v", rest, err)
			}
			io.WriteString(c, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err = http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := io.ReadAll(resp.Body); string(b) != "next" {
				t.Fatalf("next request: %q", b)
			}
		})
	}
}

// TestOffloadHijack: an offloaded handler hijacks (the task does it for
// it) and uses the connection from its goroutine; the head it set first is
// sent, and the ResponseWriter refuses writes after.
func TestOffloadHijack(t *testing.T) {
	h := OffloadHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusSwitchingProtocols)
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, werr := w.Write([]byte("x"))
		_, _, herr := w.(http.Hijacker).Hijack()
		line, _ := brw.ReadString('\n')
		fmt.Fprintf(conn, "got %q; write %v; hijack %v", line, werr, herr)
	}))
	_, addr := startCarrier(t, h, nil)
	got := rawOutcome(t, addr, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\nhello\n")
	want := "HTTP/1.1 101 Switching Protocols\r\nDate: D\r\n\r\n" +
		fmt.Sprintf("got %q; write %v; hijack %v", "hello\n", http.ErrHijacked, http.ErrHijacked)
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
