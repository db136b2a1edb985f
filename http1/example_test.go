package http1_test

import (
	"fmt"
	"strings"

	"github.com/spindle-lab/spindle/http1"
)

// Parse a request from the bytes read so far; a partial request asks for
// more.
func ExampleParseRequest() {
	var r http1.Request
	buf := []byte("GET /fruits?x=1 HTTP/1.1\r\nHost: example\r\n")
	n, err := http1.ParseRequest(buf, &r, http1.Options{})
	fmt.Println(n, err)
	buf = append(buf, "\r\n"...)
	n, err = http1.ParseRequest(buf, &r, http1.Options{})
	fmt.Println(n, err)
	fmt.Printf("%s %s %s host=%s\n", r.Method, r.Target, r.Path(), r.Get("Host"))
	// Output:
	// 0 http1: incomplete message
	// 43 <nil>
	// GET /fruits?x=1 /fruits host=example
}

// Write a response; the Writer caches the Date header, so one belongs to
// one goroutine or carrier.
func ExampleWriter_AppendResponse() {
	var w http1.Writer
	out := w.AppendResponse(nil, http1.ResponseHead{Status: 200, ContentType: "text/plain"}, []byte("OK"))
	for _, line := range strings.Split(string(out), "\r\n") {
		if !strings.HasPrefix(line, "Date: ") { // the clock's, not stable
			fmt.Printf("%q\n", line)
		}
	}
	// Output:
	// "HTTP/1.1 200 OK"
	// "Content-Type: text/plain"
	// "Content-Length: 2"
	// ""
	// "OK"
}
