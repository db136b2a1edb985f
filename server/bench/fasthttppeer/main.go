// Command fasthttppeer is the study's server written the fasthttp way, a
// peer to measure spindle's server modes against (server/bench/peers.sh).
// It lives in a module of its own so that fasthttp is no dependency of
// spindle: it imports nothing of spindle and answers as `spindle serve`
// does:
//
//   - /health: "OK";
//   - /fruits: a GET to the backend (spindle's mock) with a keep-alive
//     fasthttp.HostClient, the JSON decoded into structs and encoded
//     compactly (502 when the backend fails, 504 when it is slow);
//   - /json and /plaintext: TechEmpower's two trivial types;
//   - anything else: 404.
//
// It runs fasthttp's worker pool on GOMAXPROCS threads; pin it with
// taskset and set the threads with --threads, as `spindle serve`'s nethttp
// mode does.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// fruit is one entry of the mock's list (spindle's mock.Fruit).
type fruit struct {
	Name   string  `json:"name"`
	Colour string  `json:"colour"`
	Price  float64 `json:"price"`
}

// peer is the server's state: its backend client and the backend URL.
type peer struct {
	backend *fasthttp.HostClient
	url     string
	timeout time.Duration
}

func (p *peer) handle(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.Set("Server", "fasthttppeer")
	switch string(ctx.Path()) {
	case "/health":
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("OK")
	case "/plaintext":
		ctx.SetContentType("text/plain")
		ctx.SetBodyString("Hello, World!")
	case "/json":
		b, _ := json.Marshal(struct {
			Message string `json:"message"`
		}{"Hello, World!"})
		ctx.SetContentType("application/json")
		ctx.SetBody(b)
	case "/fruits":
		p.fruits(ctx)
	default:
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("404 Not Found")
	}
}

// fruits makes the backend exchange and the transform of spindle's /fruits.
func (p *peer) fruits(ctx *fasthttp.RequestCtx) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(p.url)
	err := p.backend.DoTimeout(req, resp, p.timeout)
	if err == nil && resp.StatusCode() != fasthttp.StatusOK {
		err = fmt.Errorf("backend status %d", resp.StatusCode())
	}
	var out []byte
	if err == nil {
		var fs []fruit
		if err = json.Unmarshal(resp.Body(), &fs); err == nil {
			out, err = json.Marshal(fs)
		}
	}
	if err != nil {
		status := fasthttp.StatusBadGateway
		if errors.Is(err, fasthttp.ErrTimeout) {
			status = fasthttp.StatusGatewayTimeout
		}
		ctx.SetStatusCode(status)
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString(fasthttp.StatusMessage(status))
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(out)
}

// usage is a bad command line: one line on stderr and exit status 2.
func usage(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "fasthttppeer: "+format+"\n", a...)
	os.Exit(2)
}

func main() {
	port := flag.Int("port", 8081, "TCP port to listen on (127.0.0.1)")
	backend := flag.String("backend", "http://127.0.0.1:8080/fruits", "the mock's /fruits URL")
	threads := flag.Int("threads", 0, "GOMAXPROCS (0: the Go runtime's default)")
	timeout := flag.Duration("backend-timeout", 5*time.Second, "bound of one backend exchange")
	flag.Parse()
	if flag.NArg() > 0 {
		usage("unexpected argument %q", flag.Arg(0))
	}
	if *port < 1 || *port > 65535 {
		usage("--port %d: want 1 to 65535", *port)
	}
	if *threads < 0 {
		usage("--threads %d: want 0 or more", *threads)
	}
	if *timeout <= 0 {
		usage("--backend-timeout %v: want a positive duration", *timeout)
	}
	u, err := url.Parse(*backend)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		usage("--backend %q: want an http:// URL with a host", *backend)
	}
	if *threads > 0 {
		runtime.GOMAXPROCS(*threads)
	}
	p := &peer{
		backend: &fasthttp.HostClient{Addr: u.Host, MaxConns: 1 << 16, ReadTimeout: *timeout, WriteTimeout: *timeout},
		url:     u.String(),
		timeout: *timeout,
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		usage("--port %d: %v", *port, err)
	}
	srv := &fasthttp.Server{Handler: p.handle, Name: "fasthttppeer"}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		_ = srv.Shutdown()
	}()
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "fasthttppeer:", err)
		os.Exit(1)
	}
}
