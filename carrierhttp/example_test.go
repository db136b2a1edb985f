package carrierhttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrierhttp"
)

// An unchanged net/http service on carriers: the handlers run in their
// connections' tasks, and the http.Client inside /greet calls /name over a
// carrierhttp.Transport, so that exchange is polled by the same carrier.
// The handler that blocks the Go way is wrapped in OffloadHandler.
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
