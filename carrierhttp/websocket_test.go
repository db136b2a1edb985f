package carrierhttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	cws "github.com/coder/websocket"
	"github.com/gorilla/websocket"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/leakcheck"
)

// wsLib is one websocket library's two ends, as the websocket tests use
// them: the server's (an upgrade in a handler) and a client's.
type wsLib struct {
	name string
	// accept upgrades the request; the server's end reads and writes
	// under ctx (gorilla's reads under its deadline).
	accept func(w http.ResponseWriter, r *http.Request, ctx context.Context) (wsConn, error)
	// dial opens a client's end, over TLS with cfg when it is not nil.
	dial func(url string, cfg *tls.Config) (wsClient, error)
	// closedBye reports whether err, what the server's read ended with, is
	// the client's close frame: code 1000, reason "bye".
	closedBye func(err error) bool
}

// wsConn is one end of a websocket: messages with their type (text 1,
// binary 2 in both libraries).
type wsConn interface {
	ReadMessage() (mt int, msg []byte, err error)
	WriteMessage(mt int, msg []byte) error
	Close() error
}

// wsClient is a client's end.
type wsClient interface {
	wsConn
	// Ping sends a ping; pongFirst, called after the next message's echo
	// was read, reports whether the pong came before that echo.
	Ping(payload string) (pongFirst func() error, err error)
	// Bye sends the close frame 1000 "bye" and reports whether the server
	// answered it with its own close frame 1000.
	Bye() error
}

// wsMaxMessage is the largest message the sessions send (200 KiB: many
// frames, both TCP buffers full); coder/websocket's read limit is raised
// to it (its default is 32 KiB).
const wsMaxMessage = 200 << 10

// wsLibs are the libraries the websocket tests run, each with its own
// client.
var wsLibs = []wsLib{
	{
		name: "gorilla",
		accept: func(w http.ResponseWriter, r *http.Request, ctx context.Context) (wsConn, error) {
			up := websocket.Upgrader{}
			ws, err := up.Upgrade(w, r, nil)
			if err != nil {
				return nil, err
			}
			if dl, ok := ctx.Deadline(); ok {
				ws.SetReadDeadline(dl) // gorilla's form of a context's deadline
			}
			return ws, nil
		},
		dial: func(url string, cfg *tls.Config) (wsClient, error) {
			d := websocket.Dialer{TLSClientConfig: cfg, HandshakeTimeout: 10 * time.Second}
			ws, resp, err := d.Dial(url, nil)
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			ws.SetReadDeadline(time.Now().Add(30 * time.Second))
			c := &gorillaClient{Conn: ws, pongs: make(chan string, 1)}
			ws.SetPongHandler(func(s string) error {
				c.pongs <- s
				return nil
			})
			return c, nil
		},
		closedBye: func(err error) bool {
			var ce *websocket.CloseError
			return errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure && ce.Text == "bye"
		},
	},
	{
		name: "coder",
		accept: func(w http.ResponseWriter, r *http.Request, ctx context.Context) (wsConn, error) {
			ws, err := cws.Accept(w, r, nil)
			if err != nil {
				return nil, err
			}
			ws.SetReadLimit(wsMaxMessage)
			return &coderConn{ws: ws, ctx: ctx}, nil
		},
		dial: func(url string, cfg *tls.Config) (wsClient, error) {
			// The client's context bounds the whole session, as the
			// gorilla client's read deadline does.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			opts := &cws.DialOptions{}
			if cfg != nil {
				opts.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
			}
			ws, resp, err := cws.Dial(ctx, url, opts)
			if err != nil {
				cancel()
				return nil, err
			}
			if resp.Body != nil {
				resp.Body.Close()
			}
			ws.SetReadLimit(wsMaxMessage)
			return &coderClient{coderConn: coderConn{ws: ws, ctx: ctx}, cancel: cancel}, nil
		},
		closedBye: func(err error) bool {
			var ce cws.CloseError
			return errors.As(err, &ce) && ce.Code == cws.StatusNormalClosure && ce.Reason == "bye"
		},
	},
}

// gorillaClient is gorilla/websocket's client end.
type gorillaClient struct {
	*websocket.Conn
	pongs chan string // from the pong handler, which the reads run
}

func (c *gorillaClient) Ping(payload string) (func() error, error) {
	if err := c.WriteControl(websocket.PingMessage, []byte(payload), time.Now().Add(10*time.Second)); err != nil {
		return nil, err
	}
	return func() error {
		select {
		case p := <-c.pongs:
			if p != payload {
				return fmt.Errorf("pong %q, want %q", p, payload)
			}
			return nil
		default:
			return errors.New("no pong before the echo that followed the ping")
		}
	}, nil
}

func (c *gorillaClient) Bye() error {
	if err := c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")); err != nil {
		return err
	}
	_, _, err := c.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		return fmt.Errorf("after the close: %v, want the server's close frame 1000", err)
	}
	return nil
}

// coderConn is coder/websocket's end: reads and writes under ctx.
type coderConn struct {
	ws  *cws.Conn
	ctx context.Context
}

func (c *coderConn) ReadMessage() (int, []byte, error) {
	mt, msg, err := c.ws.Read(c.ctx)
	return int(mt), msg, err
}

func (c *coderConn) WriteMessage(mt int, msg []byte) error {
	return c.ws.Write(c.ctx, cws.MessageType(mt), msg)
}

// Close closes the conn without a handshake (the server's end has
// answered the client's close frame in its read by then, as gorilla's
// close handler does).
func (c *coderConn) Close() error { return c.ws.CloseNow() }

// coderClient is coder/websocket's client end. Its Ping waits for the
// pong, which only a read running at the same time receives: Ping starts
// the read of the next echo first, and the next ReadMessage takes that
// read's result.
type coderClient struct {
	coderConn
	cancel  context.CancelFunc
	pending chan wsRead // the read Ping started, or nil
}

type wsRead struct {
	mt  int
	msg []byte
	err error
}

func (c *coderClient) Ping(string) (func() error, error) {
	pending := make(chan wsRead, 1)
	c.pending = pending
	go func() {
		mt, msg, err := c.coderConn.ReadMessage()
		pending <- wsRead{mt, msg, err}
	}()
	if err := c.ws.Ping(c.ctx); err != nil {
		return nil, err
	}
	// The pong came while no message was sent yet: before the echo.
	return func() error { return nil }, nil
}

func (c *coderClient) ReadMessage() (int, []byte, error) {
	if p := c.pending; p != nil {
		c.pending = nil
		r := <-p
		return r.mt, r.msg, r.err
	}
	return c.coderConn.ReadMessage()
}

// Bye is coder's close handshake: Close sends the frame and returns nil
// only when the server's close frame with the same code answers it.
func (c *coderClient) Bye() error {
	return c.ws.Close(cws.StatusNormalClosure, "bye")
}

func (c *coderClient) Close() error {
	defer c.cancel()
	return c.coderConn.Close()
}

// wsEcho is an echo server of library lib in one of the ways services
// write one: the read-and-echo loop in the handler (on carriers: in the
// connection's task, parked on its carrier), on a goroutine the handler
// starts before it returns, or read in the handler with the writes on a
// write-pump goroutine (a read in the task and writes from a goroutine on
// one conn at once). The handler's own loops read under the request's
// context, the goroutine under a context of its own (the request's ends
// with the handler). Each connection's end (the error its read loop ended
// with) goes to ends.
func wsEcho(lib wsLib, mode string, ends chan<- error) http.Handler {
	echo := func(ws wsConn) error {
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
		ctx := r.Context()
		if mode == "goroutine" {
			ctx = context.Background()
		}
		ws, err := lib.accept(w, r, ctx)
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

// wsSession is one client's conversation: messages of both types and
// sizes up to wsMaxMessage echoed, a ping answered by a pong before the
// next echo, then the close handshake with code 1000, whose echo the
// server's close handling sends.
func wsSession(lib wsLib, url string, cfg *tls.Config, id int) error {
	ws, err := lib.dial(url, cfg)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer ws.Close()
	for i := range 12 {
		mt := websocket.TextMessage
		if i%2 == 1 {
			mt = websocket.BinaryMessage
		}
		size := 1 + i*37
		if i == 5 {
			size = wsMaxMessage
		}
		msg := bytes.Repeat([]byte{byte('a' + (id+i)%26)}, size)
		var pongFirst func() error
		if i == 3 {
			if pongFirst, err = ws.Ping(fmt.Sprintf("ping %d", id)); err != nil {
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
		if pongFirst != nil {
			if err := pongFirst(); err != nil {
				return err
			}
		}
	}
	if err := ws.Bye(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

// wsSetup is a server the websocket tests run their handlers on.
type wsSetup struct {
	name string
	opts carrier.Options
	tls  bool
}

// wsSetups are carrierhttp's servers (1 and 2 carriers, floating,
// io_uring, TLS) and net/http's, the reference.
var wsSetups = []wsSetup{
	{"1 carrier", carrier.Options{Carriers: 1}, false},
	{"2 carriers", carrier.Options{Carriers: 2}, false},
	{"2 carriers floating", carrier.Options{Carriers: 2, Float: true}, false},
	{"1 carrier io_uring", carrier.Options{Carriers: 1, Poller: carrier.PollerURing}, false},
	{"1 carrier TLS", carrier.Options{Carriers: 1}, true},
	{"net/http", carrier.Options{}, false},
}

// serve starts h on the setup's server and returns its websocket URL, and
// the clients' TLS configuration where it serves TLS.
func (su wsSetup) serve(t *testing.T, h http.Handler) (string, *tls.Config) {
	switch {
	case su.name == "net/http":
		return "ws://" + startNetHTTP(t, h), nil
	case su.tls:
		cert, pool := selfSigned(t)
		_, addr := serveOn(t, su.opts, h, func(s *Server) {
			s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		})
		return "wss://" + addr, &tls.Config{RootCAs: pool}
	default:
		_, addr := serveOn(t, su.opts, h, nil)
		return "ws://" + addr, nil
	}
}

// TestWebsocket runs gorilla/websocket and coder/websocket echo servers on
// carriers (1 and 2, floating, io_uring, TLS; the loop in the handler, on
// a goroutine, with a write pump, and offloaded), and under net/http's
// server as the reference, with 8 concurrent clients of the same library
// each: echoes, ping/pong, and the close handshake, seen by both ends; no
// goroutine or fd left after.
func TestWebsocket(t *testing.T) {
	modes := []string{"handler", "goroutine", "pump", "offloaded"}
	const clients = 8
	for _, lib := range wsLibs {
		for _, su := range wsSetups {
			for _, mode := range modes {
				t.Run(lib.name+"/"+su.name+"/"+mode, func(t *testing.T) {
					leakcheck.Register(t, 5*time.Second)
					ends := make(chan error, clients)
					var h http.Handler
					if mode == "offloaded" {
						h = OffloadHandler(wsEcho(lib, "handler", ends))
					} else {
						h = wsEcho(lib, mode, ends)
					}
					url, cfg := su.serve(t, h)
					var wg sync.WaitGroup
					errs := make(chan error, clients)
					for i := range clients {
						wg.Go(func() {
							if err := wsSession(lib, url+"/echo", cfg, i); err != nil {
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
							if !lib.closedBye(err) {
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
}

// TestWebsocketIdle has each library's server read under a context with
// a deadline (gorilla: a read deadline) from a client that sends nothing,
// on every setup: the read parked in the connection's task ends with the
// deadline (coder/websocket closes the conn from the context's AfterFunc,
// a goroutine, while the task waits in Read), the client sees the
// connection end, and nothing is left behind.
func TestWebsocketIdle(t *testing.T) {
	const idle = 300 * time.Millisecond
	for _, lib := range wsLibs {
		for _, su := range wsSetups {
			t.Run(lib.name+"/"+su.name, func(t *testing.T) {
				leakcheck.Register(t, 5*time.Second)
				ends := make(chan error, 1)
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					ctx, cancel := context.WithTimeout(r.Context(), idle)
					defer cancel()
					ws, err := lib.accept(w, r, ctx)
					if err != nil {
						ends <- fmt.Errorf("upgrade: %w", err)
						return
					}
					defer ws.Close()
					_, _, err = ws.ReadMessage()
					ends <- err
				})
				url, cfg := su.serve(t, h)
				ws, err := lib.dial(url+"/idle", cfg)
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				defer ws.Close()
				read := make(chan error, 1)
				go func() {
					_, _, err := ws.ReadMessage()
					read <- err
				}()
				select {
				case err := <-ends:
					var ne net.Error
					if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout()) {
						t.Errorf("the server's read ended with %v, want its deadline", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("the server's read under a %v deadline still waits after 10 s", idle)
				}
				select {
				case err := <-read:
					if err == nil {
						t.Error("the client read a message; the server sent none")
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the client's read still waits 10 s after the server's end closed")
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
