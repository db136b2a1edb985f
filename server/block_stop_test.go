package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/internal/leakcheck"
)

// TestBlockCloseInFlight closes the server while a singleflight leader
// waits for its backend (parked on its carrier in the carrier modes) and
// its followers wait for it (blocked the Go way: handed off), and while
// another request sleeps the Go way: nothing may crash, nothing stay
// behind. singleflight wraps the carrier's unwinding of a stopped task in
// its own panic, and raises it in the followers too. (In the carrier modes
// this crashed the test binary before block.go handed the panic on
// unwrapped, and then left each handed-off task's goroutines behind until
// the carrier let a task that rejoins a stopped carrier unwind quietly.)
func TestBlockCloseInFlight(t *testing.T) {
	got := make(chan struct{}, 16)
	// The backend never answers: it waits until its client goes away (the
	// exchange times out or the server closes it).
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- struct{}{}
		<-r.Context().Done()
	}))
	defer backend.Close()
	forModes(t, func(t *testing.T, mode Mode) {
		leakcheck.Register(t, 3*time.Second)
		so := blockOptions
		so.BackendTimeout = time.Second // what nethttp's Close leaves running ends within the leak check's wait
		e := startOn(t, mode, so, backend.URL+"/fruits")
		for range 3 {
			c := e.dialFor(t)
			e.send(c, fmt.Sprintf(get, "/block?kind=singleflight"))
		}
		sleeper := e.dialFor(t)
		e.send(sleeper, fmt.Sprintf(get, "/block?kind=sleep&d=300ms"))
		<-got
		time.Sleep(50 * time.Millisecond) // the followers wait, the sleeper sleeps
		e.close()
	})
}
