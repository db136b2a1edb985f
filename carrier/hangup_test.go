package carrier

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestWatchHangup: a task's hang-up watch fires, on the carrier, when the
// client closes or half-closes while the task does not read, never while
// the client's data waits unread, after the watch was stopped or while a
// task reads (the read sees the end), and WatchHangup reports a client
// gone already; a watch stopped and armed again runs the new function
// only. With the io_uring poller, whose conns have no readiness poll, the
// watch is a poll of its own, which the second arming reuses (on floating
// carriers, which cancel it when the watch stops, it is polled again).
func TestWatchHangup(t *testing.T) {
	tests := []struct {
		name      string
		early     bool // the client ends before the task arms the watch
		disarm    bool // the task stops the watch before the client ends
		rearm     bool // the task arms a watch, stops it and arms another
		reads     bool // the task reads instead of sleeping while armed
		float     bool
		send      string
		halfClose bool
		wantFired bool
	}{
		{name: "close", wantFired: true},
		{name: "half-close", halfClose: true, wantFired: true},
		{name: "data then half-close", send: "next request", halfClose: true},
		{name: "stopped", disarm: true},
		{name: "gone already", early: true},
		{name: "armed again", rearm: true, wantFired: true},
		{name: "armed again, floating", rearm: true, float: true, wantFired: true},
		{name: "a task reads", reads: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			fired := make(chan struct{}, 1)
			stale := make(chan struct{}, 1) // the watch stopped before the one that may fire
			armed := make(chan bool, 1)     // WatchHangup's report
			read := make(chan string, 1)
			c := serveOneWith(t, Options{Carriers: 1, Float: tc.float}, func(tk *Task, c *Conn) {
				if tc.early {
					tk.Sleep(100 * time.Millisecond) // the client's end arrives meanwhile
				}
				if tc.rearm {
					c.WatchHangup(func() { stale <- struct{}{} })
					c.WatchHangup(nil)
				}
				armed <- c.WatchHangup(func() { fired <- struct{}{} })
				if tc.disarm {
					c.WatchHangup(nil)
				}
				if tc.reads {
					c.SetReadDeadline(time.Now().Add(400 * time.Millisecond))
					c.Read(make([]byte, 1)) // the client's end, seen by the read
				} else {
					tk.Sleep(400 * time.Millisecond) // not reading: only the watch can see the end
				}
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
			case <-stale:
				t.Errorf("the watch stopped before the last arming fired")
			case <-time.After(5 * time.Second):
				t.Fatal("neither the watch nor the task ended")
			}
			<-read
			select {
			case <-stale:
				t.Errorf("the watch stopped before the last arming fired too")
			default:
			}
		})
	}
}
