package carrierhttp_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/net/http2"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrierhttp"
)

// An unchanged net/http service on carriers: the handlers run in their
// connections' tasks, and the http.Client inside /greet calls /name over a
// carrierhttp.Transport, so that exchange is polled by the same carrier.
// A handler that blocks the Go way delays only its own request (the
// carrier hands itself off); /slow, which blocks on every request, is
// wrapped in OffloadHandler to run on a goroutine from the start.
func Example() {
	g, err := carrier.New(carrier.Options{Carriers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()

	client := &http.Client{Transport: &carrierhttp.Transport{}} // deadlines through contexts (docs/carrierhttp.md)
	mux := http.NewServeMux()
	mux.HandleFunc("/name", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "carrier")
	})
	mux.HandleFunc("/greet", func(w http.ResponseWriter, r *http.Request) {
		// r.Context() carries the task: the backend call parks it, not the carrier.
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+r.Host+"/name", nil)
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		name, _ := io.ReadAll(resp.Body)
		fmt.Fprintf(w, "hello, %s", name)
	})
	mux.Handle("/slow", carrierhttp.OffloadHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(10 * time.Millisecond) // blocks the Go way: on a goroutine, not the carrier
		io.WriteString(w, "done")
	})))

	srv := &carrierhttp.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	l, err := srv.Listen(g, "127.0.0.1:0", carrier.ListenOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	base := "http://" + l.Addr().String()

	for _, path := range []string{"/greet", "/slow"} {
		resp, err := http.Get(base + path) // an ordinary client, from a goroutine
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println(srv.Shutdown(ctx))
	// Output:
	// 200 hello, carrier
	// 200 done
	// <nil>
}

// A gorilla/websocket echo server on carriers: Upgrade hijacks the
// connection, and the echo loop in the handler parks its task on the
// carrier at each read, as a request does. (A handler may as well hand
// the *websocket.Conn to goroutines and return: the conn serves any
// goroutine.)
func Example_websocket() {
	g, err := carrier.New(carrier.Options{Carriers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	var up websocket.Upgrader
	srv := &carrierhttp.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return // Upgrade answered the client
		}
		defer ws.Close()
		for {
			mt, msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			ws.WriteMessage(mt, append([]byte("echo: "), msg...))
		}
	})}
	l, err := srv.Listen(g, "127.0.0.1:0", carrier.ListenOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	ws, _, err := websocket.DefaultDialer.Dial("ws://"+l.Addr().String()+"/", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.Close()
	ws.WriteMessage(websocket.TextMessage, []byte("hello"))
	_, msg, err := ws.ReadMessage()
	fmt.Println(string(msg), err)
	// Output:
	// echo: hello <nil>
}

// HTTP/2 without TLS (h2c) beside HTTP/1.1: Protocols as in net/http. The
// HTTP/2 handler runs on a goroutine of x/net's server, the HTTP/1.1 one
// in its connection's task.
func Example_h2c() {
	g, err := carrier.New(carrier.Options{Carriers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	srv := &carrierhttp.Server{
		Protocols: &protos,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s, in a task: %v", r.Proto, carrier.TaskFromContext(r.Context()) != nil)
		}),
	}
	l, err := srv.Listen(g, "127.0.0.1:0", carrier.ListenOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	h2c := &http2.Transport{ // prior knowledge: the client starts with the HTTP/2 preface
		AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	defer h2c.CloseIdleConnections()
	h1 := &http.Transport{}
	defer h1.CloseIdleConnections()
	for _, rt := range []http.RoundTripper{h2c, h1} {
		resp, err := (&http.Client{Transport: rt}).Get("http://" + l.Addr().String() + "/")
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(string(body))
	}
	// Output:
	// HTTP/2.0, in a task: false
	// HTTP/1.1, in a task: true
}
