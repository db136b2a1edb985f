package load_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/spindle-lab/spindle/load"
)

// A fixed-rate run against a test server: 200 requests/s over 2
// connections for 300ms. Every intended request is accounted for: completed,
// failed, still in flight at the end, or never sent.
func ExampleRun() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("OK"))
	}))
	defer srv.Close()
	r, err := load.Run(context.Background(), load.Options{
		URL: srv.URL, Threads: 1, Connections: 2, Rate: 200,
		Duration: 300 * time.Millisecond, Timeout: time.Second,
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("intended > 0:", r.Intended > 0)
	fmt.Println("accounted for:", r.Check() == nil) // completed + failed + in flight + not sent
	fmt.Println("failed:", r.Failed)
	// Output:
	// intended > 0: true
	// accounted for: true
	// failed: 0
}
