package carrier_test

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/cpu"
)

// A group of carriers serving an echo handler; a task that dials, sleeps on
// the carrier's timer heap and offloads a blocking call.
func Example() {
	g, err := carrier.New(carrier.Options{Carriers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	echo := func(t *carrier.Task, c *carrier.Conn) { io.Copy(c, c) } // writes back what it reads
	l, err := g.Listen("127.0.0.1:0", echo, carrier.ListenOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	done := make(chan string, 1) // buffered: a task must not block on a channel
	g.Go(func(t *carrier.Task) {
		c, err := t.Dial(l.Addr().String(), time.Second)
		if err != nil {
			done <- err.Error()
			return
		}
		defer c.Close()
		t.Sleep(time.Millisecond)
		c.Write([]byte("hello"))
		buf := make([]byte, 5)
		io.ReadFull(c, buf)
		var host string
		t.Offload(func() { host, _, _ = net.SplitHostPort(l.Addr().String()) }) // may block: runs on a goroutine
		done <- string(buf) + " from " + host
	})
	fmt.Println(<-done)
	// Output: hello from 127.0.0.1
}

// A custom line protocol on carriers: the handler is written in blocking
// style; each read or write that would block parks the task on its
// carrier's poller.
func ExampleGroup_Listen() {
	g, err := carrier.New(carrier.Options{Carriers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	// PING answers PONG; anything else closes the connection.
	l, err := g.Listen("127.0.0.1:0", func(t *carrier.Task, c *carrier.Conn) {
		line := make([]byte, 5)
		for {
			if _, err := io.ReadFull(c, line); err != nil || string(line) != "PING\n" {
				return
			}
			c.Write([]byte("PONG\n"))
		}
	}, carrier.ListenOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	c, err := net.Dial("tcp", l.Addr().String()) // an ordinary client
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	buf := make([]byte, 5)
	for range 2 {
		c.Write([]byte("PING\n"))
		io.ReadFull(c, buf)
		fmt.Print(string(buf))
	}
	// Output:
	// PONG
	// PONG
}

// A pinned group: carrier i runs on the i-th CPU of the set (here the first
// CPU this process may use) and never leaves it.
func ExampleOptions_pinned() {
	allowed, err := cpu.Allowed()
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := carrier.New(carrier.Options{Carriers: 1, CPUs: allowed[:1], Pin: carrier.PinCPU})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	fmt.Println(g.Len(), g.Carrier(0).CPU() == allowed[0])
	// Output: 1 true
}
