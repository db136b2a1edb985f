package carrierhttp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
)

// TestGroupCloseWhileHandlerReads: a handler parked reading its request's
// body when the carriers stop gets net.ErrClosed from the Read, as a
// net/http handler does when its Server closes, rather than a panic that
// a recover middleware (chi's Recoverer, gin's Recovery) would log as the
// handler's and answer 500; the answer it writes then reaches the client.
func TestGroupCloseWhileHandlerReads(t *testing.T) {
	for _, o := range []carrier.Options{
		{Carriers: 1, Poller: carrier.PollerEpoll},
		{Carriers: 1, Poller: carrier.PollerEpoll, ParkIdle: true},
	} {
		t.Run(fmt.Sprintf("park=%v", o.ParkIdle), func(t *testing.T) {
			readErr := make(chan error, 1)
			recovered := make(chan any, 1)
			reading := make(chan struct{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(reading)
				_, err := io.ReadAll(r.Body)
				readErr <- err
				http.Error(w, "stopping", http.StatusServiceUnavailable)
			})
			recoverer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer func() {
					if p := recover(); p != nil {
						recovered <- p
						w.WriteHeader(http.StatusInternalServerError)
					}
				}()
				h.ServeHTTP(w, r)
			})
			g := newCarriers(t, o)
			s := &Server{Handler: recoverer}
			l, err := s.Listen(g, "127.0.0.1:0", carrier.ListenOptions{})
			if err != nil {
				g.Close()
				t.Fatal(err)
			}
			c := dial(t, l.Addr().String())
			c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
			<-reading
			time.Sleep(20 * time.Millisecond) // the handler parks in its Read
			closed := make(chan struct{})
			go func() { g.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(5 * time.Second):
				t.Fatal("Group.Close did not return")
			}
			s.Close()
			select {
			case err := <-readErr:
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("the handler's Read: %v, want net.ErrClosed", err)
				}
			default:
				t.Error("the handler's Read did not return")
			}
			select {
			case p := <-recovered:
				t.Errorf("the recover middleware caught %v", p)
			default:
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("the client got no answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "stopping") {
				t.Errorf("the client got %d %q, want the handler's 503", resp.StatusCode, body)
			}
		})
	}
}
