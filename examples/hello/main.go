// Command hello shows spindle's carrier runtime and HTTP/1.1 code used from
// another module: an HTTP server whose carriers run the handlers, answering
// "hello" on every path. With -check it serves one request to itself over
// loopback and exits (0 when the answer is right), which is what CI runs.
//
// The module's go.mod points at the checkout with
// "replace github.com/spindle-lab/spindle => ../..", as a module using spindle from a local
// clone would.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/http1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen `ADDRESS` (host:port; port 0: a free one)")
	carriers := flag.Int("carriers", 2, "carriers (event loops, each on its own OS thread)")
	check := flag.Bool("check", false, "serve one request to itself on a free loopback port and exit")
	flag.Parse()
	if *check {
		*addr = "127.0.0.1:0"
	}
	if err := run(*addr, *carriers, *check); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

var body = []byte("hello\n")

// handle answers every request from the carrier that read it.
func handle(req *http1.Request, rep *http1.Reply) {
	rep.ContentType = "text/plain; charset=utf-8"
	rep.Body = body
}

func run(addr string, carriers int, check bool) error {
	g, err := carrier.New(carrier.Options{Carriers: carriers})
	if err != nil {
		return err
	}
	defer g.Close()
	l, err := g.Listen(addr, func(t *carrier.Task, c *carrier.Conn) {
		defer c.Close()
		_ = http1.ServeConn(c, http1.Options{}.WithDefaults(), handle, nil)
	}, carrier.ListenOptions{})
	if err != nil {
		return err
	}
	defer l.Close()
	if check {
		return get(l.Addr().String())
	}
	fmt.Printf("hello: serving on http://%s/ (Ctrl-C stops)\n", l.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
	return nil
}

// get sends one request to addr with the standard library's client side and
// checks the answer.
func get(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10)) // the answer is 6 bytes; 1 KiB bounds a wrong one
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(b) != string(body) {
		return errors.New("unexpected answer: " + resp.Status + " " + string(b))
	}
	fmt.Printf("hello: %s answered %s %q\n", addr, resp.Status, b)
	return nil
}
