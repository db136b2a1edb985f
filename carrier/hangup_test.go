package carrier

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestWatchHangup: a task's hang-up watch fires, on the carrier, when the
// client closes or half-closes while the task does not read, never while
// the client's data waits unread or after the watch was stopped, and
// WatchHangup reports a client gone already. The io_uring poller's conns
// have no readiness poll: the watch never fires there (skipped).
func TestWatchHangup(t *testing.T) {
	if defaultPoller == PollerURing {
		t.Skip("the io_uring poller's conns have no readiness poll: WatchHangup never fires")
	}
	tests := []struct {
		name      string
		early     bool // the client ends before the task arms the watch
		disarm    bool // the task stops the watch before the client ends
		send      string
		halfClose bool
		wantFired bool
	}{
		{name: "close", wantFired: true},
		{name: "half-close", halfClose: true, wantFired: true},
		{name: "data then half-close", send: "next request", halfClose: true},
		{name: "stopped", disarm: true},
		{name: "gone already", early: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			fired := make(chan struct{}, 1)
			armed := make(chan bool, 1) // WatchHangup's report
			read := make(chan string, 1)
			c := serveOne(t, func(tk *Task, c *Conn) {
				if tc.early {
					tk.Sleep(100 * time.Millisecond) // the client's end arrives meanwhile
				}
				armed <- c.WatchHangup(func() { fired <- struct{}{} })
				if tc.disarm {
					c.WatchHangup(nil)
				}
				tk.Sleep(400 * time.Millisecond) // not reading: only the watch can see the end
				c.WatchHangup(nil)
				c.SetReadDeadline(time.Now().Add(3 * time.Second))
				b, _ := io.ReadAll(c)
				read <- string(b)
			})
			defer c.Close()
			end := func() {
				c.Write([]byte(tc.send))
				if tc.halfClose {
					c.(*net.TCPConn).CloseWrite()
					return
				}
				c.Close()
			}
			if tc.early {
				end()
			}
			gone := <-armed
			if !tc.early {
				time.Sleep(20 * time.Millisecond)
				end()
			}
			if gone != tc.early {
				t.Errorf("WatchHangup reported gone %v, want %v", gone, tc.early)
			}
			select {
			case <-fired:
				if !tc.wantFired {
					t.Errorf("the watch fired")
				}
			case got := <-read: // the task's wait ended without the watch firing
				if tc.wantFired {
					t.Errorf("the watch did not fire within the task's 400ms wait")
				}
				if got != tc.send {
					t.Errorf("the task then read %q, want %q", got, tc.send)
				}
				return
			case <-time.After(5 * time.Second):
				t.Fatal("neither the watch nor the task ended")
			}
			<-read
		})
	}
}
