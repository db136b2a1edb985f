package carrier

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
)

// strategies lists every strategy wait.New knows, including those this CPU cannot run.
var strategies = wait.Names()

// newGroupOrSkip starts a group, skipping the test when its wait strategy
// is not available on this machine.
func newGroupOrSkip(t testing.TB, o Options) *Group {
	t.Helper()
	g, err := New(o)
	if errors.Is(err, wait.ErrNotSupported) {
		t.Skipf("wait strategy %s: %v", o.Wait, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, g)
	return g
}

// runEchoClients opens conns connections to addr, each sending msgs
// messages and checking every echo, and fails on any mismatch.
func runEchoClients(t *testing.T, addr string, conns, msgs int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(20 * time.Second))
			got := make([]byte, 64)
			for m := 0; m < msgs; m++ {
				want := []byte(fmt.Sprintf("conn %d message %d", i, m))
				if _, err := nc.Write(want); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(nc, got[:len(want)]); err != nil {
					errs <- fmt.Errorf("conn %d message %d: %w", i, m, err)
					return
				}
				if !bytes.Equal(got[:len(want)], want) {
					errs <- fmt.Errorf("conn %d: echo %q, want %q", i, got[:len(want)], want)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestEchoMatrix(t *testing.T) {
	for _, carriers := range []int{1, 2} {
		for _, w := range strategies {
			for _, mode := range []struct{ steal, float bool }{{false, false}, {true, false}, {true, true}} {
				steal := mode.steal
				for _, reuse := range []bool{false, true} {
					name := fmt.Sprintf("carriers=%d/wait=%s/steal=%v/float=%v/reuseport=%v", carriers, w, steal, mode.float, reuse)
					t.Run(name, func(t *testing.T) {
						checkLeaks(t)
						g := newGroupOrSkip(t, Options{Carriers: carriers, Wait: w, Steal: steal, Float: mode.float})
						l, err := g.Listen("127.0.0.1:0", echo, ListenOptions{ReusePort: reuse})
						if err != nil {
							t.Fatal(err)
						}
						runEchoClients(t, l.Addr().String(), 20, 20)
						if err := l.Close(); err != nil {
							t.Fatal(err)
						}
						// Every client closed its conn: the handlers see the
						// end of stream and close theirs, so the open conns
						// come down to none (the check used to be a sum < 0,
						// which no count can make true).
						var conns int64
						for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
							conns = 0
							for _, s := range g.Snapshot() {
								conns += s.OpenConns
							}
							if conns == 0 || time.Now().After(end) {
								break
							}
						}
						if conns != 0 {
							t.Errorf("OpenConns sums to %d after every client closed, want 0", conns)
						}
					})
				}
			}
		}
	}
}
