package carrier_test

import (
	"fmt"
	"io"
	"net"
	"time"

	"spindle/carrier"
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
	l, err := g.Listen("127.0.0.1:0", carrier.Echo, carrier.ListenOptions{})
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
