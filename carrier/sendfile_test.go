package carrier

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sendfileBytes is the group's count of bytes ReadFrom sent with sendfile.
func sendfileBytes(g *Group) uint64 {
	var n uint64
	for _, tm := range g.Snapshot() {
		n += tm.SendfileBytes
	}
	return n
}

// testFile writes n random bytes to a file of the test's temporary
// directory and returns them and the file, open for reading (closed when
// the test ends).
func testFile(t testing.TB, n int) ([]byte, *os.File) {
	t.Helper()
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	name := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return b, f
}

// TestConnReadFrom: Conn.ReadFrom sends a file with sendfile(2), counted
// in Telemetry.SendfileBytes (so a copy through Write, which counts
// nothing, fails the sendfile cases), from a task and from a plain
// goroutine: a file larger than the socket buffers to a peer that starts
// reading late (the socket fills, and the sender waits for room, parked
// or the Go way), after bytes Write accepted (which go first), a range of
// a file under an io.LimitedReader (as http.ServeContent passes it, from
// the file's offset, N updated), io.Copy of a file (os's wrapper that
// hides its WriteTo); and readers that are no file (a strings.Reader, a
// pipe, which sendfile refuses) copied through Write instead.
func TestConnReadFrom(t *testing.T) {
	const big = 6 << 20 // beyond loopback's socket buffers
	type source struct {
		r    io.Reader
		want []byte // what the peer reads after the head
		lr   *io.LimitedReader
		copy bool // io.Copy(conn, r) instead of conn.ReadFrom(r)
	}
	tests := []struct {
		name     string
		head     string // written with Write first
		src      func(t *testing.T) source
		sendfile bool // sent with sendfile
	}{
		{"file", "", func(t *testing.T) source {
			b, f := testFile(t, big)
			return source{r: f, want: b}
		}, true},
		{"after a Write", "HTTP/1.1 200 OK\r\n\r\n", func(t *testing.T) source {
			b, f := testFile(t, big)
			return source{r: f, want: b}
		}, true},
		{"a range under a limit", "", func(t *testing.T) source {
			b, f := testFile(t, big)
			if _, err := f.Seek(1000, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			lr := &io.LimitedReader{R: f, N: 3 << 20}
			return source{r: lr, want: b[1000 : 1000+3<<20], lr: lr}
		}, true},
		{"io.Copy of a file", "", func(t *testing.T) source {
			b, f := testFile(t, 100_000)
			return source{r: f, want: b, copy: true}
		}, true},
		{"a reader that is no file", "", func(t *testing.T) source {
			s := strings.Repeat("not a file ", 100_000)
			return source{r: strings.NewReader(s), want: []byte(s)}
		}, false},
		{"a pipe (sendfile refuses it)", "", func(t *testing.T) source {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pr.Close() })
			b := bytes.Repeat([]byte("piped "), 50_000)
			go func() {
				pw.Write(b)
				pw.Close()
			}()
			return source{r: pr, want: b}
		}, false},
	}
	for _, foreign := range []bool{false, true} {
		for _, tc := range tests {
			name := map[bool]string{false: "task/", true: "goroutine/"}[foreign] + tc.name
			t.Run(name, func(t *testing.T) {
				checkLeaks(t)
				g := newGroup(t, Options{Carriers: 1})
				cn, peer := dialPeer(t, g)
				src := tc.src(t)
				read := make(chan []byte, 1)
				go func() {
					time.Sleep(100 * time.Millisecond) // the socket fills meanwhile
					peer.SetReadDeadline(time.Now().Add(10 * time.Second))
					b, _ := io.ReadAll(peer)
					read <- b
				}()
				before := sendfileBytes(g)
				var n int64
				var err error
				send := func() {
					if tc.head != "" {
						if _, err = cn.Write([]byte(tc.head)); err != nil {
							return
						}
					}
					if src.copy { // the file's WriteTo hands ReadFrom os's wrapper of it
						n, err = io.Copy(cn, src.r)
						return
					}
					n, err = cn.ReadFrom(src.r)
				}
				if foreign {
					send()
				} else {
					inTaskOf(t, g, 0, func(*Task) { send() })
				}
				if err != nil || n != int64(len(src.want)) {
					t.Fatalf("ReadFrom: %d, %v; want %d, nil", n, err, len(src.want))
				}
				if src.lr != nil && src.lr.N != 0 {
					t.Errorf("the limit's N is %d after, want 0", src.lr.N)
				}
				if err := cn.Close(); err != nil {
					t.Fatal(err)
				}
				got := <-read
				want := append([]byte(tc.head), src.want...)
				if !bytes.Equal(got, want) {
					t.Fatalf("the peer read %d bytes (%.20q...), want %d (%.20q...)", len(got), got, len(want), want)
				}
				sent := sendfileBytes(g) - before
				switch {
				case tc.sendfile && sent != uint64(n):
					t.Errorf("sendfile sent %d bytes of %d: the copy went through Write", sent, n)
				case !tc.sendfile && sent != 0:
					t.Errorf("sendfile sent %d bytes of a reader that is no file", sent)
				}
			})
		}
	}
}

// TestConnReadFromEnds: a ReadFrom waiting for room in the socket buffer
// (the peer reads nothing) ends with its write deadline
// (os.ErrDeadlineExceeded, having sent part of the file) or with a close
// from another task or a goroutine (net.ErrClosed), from a task and from a
// goroutine, and the peer sees the conn end.
func TestConnReadFromEnds(t *testing.T) {
	tests := []struct {
		name    string
		foreign bool
		end     func(g *Group, cn *Conn) // called once ReadFrom waits; nil: the deadline
		want    error
	}{
		{"task, deadline", false, nil, os.ErrDeadlineExceeded},
		{"goroutine, deadline", true, nil, os.ErrDeadlineExceeded},
		{"task, closed by another task", false, func(g *Group, cn *Conn) {
			g.Carrier(0).Submit(func(*Task) { cn.Close() })
		}, net.ErrClosed},
		{"task, closed by a goroutine", false, func(g *Group, cn *Conn) { cn.Close() }, net.ErrClosed},
		{"goroutine, closed by a goroutine", true, func(g *Group, cn *Conn) { cn.Close() }, net.ErrClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			g := newGroup(t, Options{Carriers: 1})
			cn, peer := dialPeer(t, g)
			_, f := testFile(t, 32<<20) // more than any socket buffer takes
			start := time.Now()         // before the deadline is set from it
			if tc.end == nil {
				cn.SetWriteDeadline(start.Add(200 * time.Millisecond))
			}
			type result struct {
				n   int64
				err error
			}
			done := make(chan result, 1)
			send := func() {
				n, err := cn.ReadFrom(f)
				done <- result{n, err}
			}
			if tc.foreign {
				go send()
			} else if err := g.Carrier(0).Submit(func(*Task) { send() }); err != nil {
				t.Fatal(err)
			}
			if tc.end != nil {
				time.Sleep(100 * time.Millisecond)
				tc.end(g, cn)
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("ReadFrom still waits 10s on")
			}
			if !errors.Is(r.err, tc.want) || r.n <= 0 || r.n >= 32<<20 {
				t.Fatalf("ReadFrom: %d, %v after %v; want part of the file and %v", r.n, r.err, time.Since(start), tc.want)
			}
			if tc.end == nil && time.Since(start) < 200*time.Millisecond {
				t.Errorf("ReadFrom ended after %v, before its deadline", time.Since(start))
			}
			if tc.end == nil {
				cn.Close()
			}
			peer.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.Copy(io.Discard, struct{ io.Reader }{peer}); err != nil {
				t.Errorf("the peer's read after the end: %v, want the end of the stream", err)
			}
		})
	}
}
