package carrier

import "testing"

// TestListenCloseAtOnce closes listeners before and right after their
// accept tasks start, and in both listener modes: no fd may stay open.
func TestListenCloseAtOnce(t *testing.T) {
	checkLeaks(t)
	g := newGroup(t, Options{Carriers: 2})
	for i := 0; i < 50; i++ {
		l, err := g.Listen("127.0.0.1:0", echo, ListenOptions{ReusePort: i%2 == 0})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err == nil {
			t.Fatal("second Close: no error")
		}
	}
}
