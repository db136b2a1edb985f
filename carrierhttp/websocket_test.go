package carrierhttp

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/leakcheck"
)

// wsEcho is a gorilla/websocket echo server in one of the ways services
// write one: the read-and-echo loop in the handler (on carriers: in the
// connection's task, parked on its carrier), on a goroutine the handler
// starts before it returns, or read in the handler with the writes on a
// write-pump goroutine (a read in the task and writes from a goroutine on
// one conn at once). Each connection's end (the error its read loop ended
// with) goes to ends.
func wsEcho(mode string, ends chan<- error) http.Handler {
	up := websocket.Upgrader{}
	echo := func(ws *websocket.Conn) error {
		for {
			mt, msg, err := ws.ReadMessage()
			if err != nil {
				return err
			}
			if err := ws.WriteMessage(mt, msg); err != nil {
				return err
			}
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			ends <- fmt.Errorf("upgrade: %w", err)
			return
		}
		switch mode {
		case "handler":
			defer ws.Close()
			ends <- echo(ws)
		case "goroutine":
			go func() {
				defer ws.Close()
				ends <- echo(ws)
			}()
		case "pump":
			type message struct {
				mt  int
				msg []byte
			}
			out := make(chan message, 4)
			pumped := make(chan struct{})
			go func() {
				defer close(pumped)
				for m := range out {
					if ws.WriteMessage(m.mt, m.msg) != nil {
						for range out { // drain: the reader ends soon
						}
						return
					}
				}
			}()
			var err error
			for {
				var m message
				if m.mt, m.msg, err = ws.ReadMessage(); err != nil {
					break
				}
				out <- m
			}
			close(out)
			<-pumped
			ws.Close()
			ends <- err
		default:
			panic("wsEcho: unknown mode " + mode)
		}
	})
}

// wsSession is one gorilla client's conversation: messages of both types
// and sizes up to 200 KiB (many frames, both TCP buffers full) echoed, a
// ping answered by a pong before the next echo, then the close handshake
// with code 1000, whose echo the server's close handler sends.
func wsSession(url string, cfg *tls.Config, id int) error {
	d := websocket.Dialer{TLSClientConfig: cfg, HandshakeTimeout: 10 * time.Second}
	ws, resp, err := d.Dial(url, nil)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	resp.Body.Close()
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	pongs := make(chan string, 1)
	ws.SetPongHandler(func(s string) error {
		pongs <- s
		return nil
	})
	for i := range 12 {
		mt := websocket.TextMessage
		if i%2 == 1 {
			mt = websocket.BinaryMessage
		}
		size := 1 + i*37
		if i == 5 {
			size = 200 << 10
		}
		msg := bytes.Repeat([]byte{byte('a' + (id+i)%26)}, size)
		ping := fmt.Sprintf("ping %d", id)
		if i == 3 {
			if err := ws.WriteControl(websocket.PingMessage, []byte(ping), time.Now().Add(10*time.Second)); err != nil {
				return fmt.Errorf("ping: %w", err)
			}
		}
		if err := ws.WriteMessage(mt, msg); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		gotType, got, err := ws.ReadMessage()
		if err != nil {
			return fmt.Errorf("echo %d: %w", i, err)
		}
		if gotType != mt || !bytes.Equal(got, msg) {
			return fmt.Errorf("echo %d: type %d, %d bytes; sent type %d, %d bytes", i, gotType, len(got), mt, len(msg))
		}
		if i == 3 {
			select {
			case p := <-pongs:
				if p != ping {
					return fmt.Errorf("pong %q, want %q", p, ping)
				}
			default:
				return errors.New("no pong before the echo that followed the ping")
			}
		}
	}
	if err := ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	_, _, err = ws.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		return fmt.Errorf("after the close: %v, want the server's close frame 1000", err)
	}
	return nil
}

// TestWebsocket runs gorilla/websocket echo servers on carriers (1 and 2,
// floating, io_uring, TLS; the loop in the handler, on a goroutine, with a
// write pump, and offloaded), and under net/http's server as the
// reference, with 8 concurrent clients each: echoes, ping/pong, and the
// close handshake, seen by both ends; no goroutine or fd left after.
func TestWebsocket(t *testing.T) {
	cert, pool := selfSigned(t)
	setups := []struct {
		name string
		opts carrier.Options
		tls  bool
	}{
		{"1 carrier", carrier.Options{Carriers: 1}, false},
		{"2 carriers", carrier.Options{Carriers: 2}, false},
		{"2 carriers floating", carrier.Options{Carriers: 2, Float: true}, false},
		{"1 carrier io_uring", carrier.Options{Carriers: 1, Poller: carrier.PollerURing}, false},
		{"1 carrier TLS", carrier.Options{Carriers: 1}, true},
		{"net/http", carrier.Options{}, false},
	}
	modes := []string{"handler", "goroutine", "pump", "offloaded"}
	const clients = 8
	for _, su := range setups {
		for _, mode := range modes {
			t.Run(su.name+"/"+mode, func(t *testing.T) {
				leakcheck.Register(t, 5*time.Second)
				ends := make(chan error, clients)
				var h http.Handler
				if mode == "offloaded" {
					h = OffloadHandler(wsEcho("handler", ends))
				} else {
					h = wsEcho(mode, ends)
				}
				var url string
				var cfg *tls.Config
				switch {
				case su.name == "net/http":
					url = "ws://" + startNetHTTP(t, h)
				case su.tls:
					_, addr := serveOn(t, su.opts, h, func(s *Server) {
						s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
					})
					url, cfg = "wss://"+addr, &tls.Config{RootCAs: pool}
				default:
					_, addr := serveOn(t, su.opts, h, nil)
					url = "ws://" + addr
				}
				var wg sync.WaitGroup
				errs := make(chan error, clients)
				for i := range clients {
					wg.Go(func() {
						if err := wsSession(url+"/echo", cfg, i); err != nil {
							errs <- fmt.Errorf("client %d: %w", i, err)
						}
					})
				}
				if !waitFor(&wg, 60*time.Second) {
					t.Fatal("websocket clients still running after 60 s")
				}
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				for i := range clients {
					select {
					case err := <-ends:
						if !websocket.IsCloseError(err, websocket.CloseNormalClosure) || !strings.Contains(err.Error(), "bye") {
							t.Errorf("a server connection ended with %v, want the client's close 1000 bye", err)
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("%d of %d server connections never ended", clients-i, clients)
					}
				}
			})
		}
	}
}

// waitFor waits for wg up to d and reports whether it finished.
func waitFor(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
