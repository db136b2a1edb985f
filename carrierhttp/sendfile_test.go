package carrierhttp

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/internal/cputest"
)

// fileTree writes the files the file-serving tests serve into a
// temporary directory and returns it: small.txt (100 bytes of text),
// page (2,048 bytes of HTML without an extension, whose type is sniffed) and
// big.bin (size random bytes, beyond the socket buffers).
func fileTree(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	big := make([]byte, size)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	page := "<!DOCTYPE html><html><body>" + strings.Repeat("<p>carriers</p>", 130) + "</body></html>\n"
	page += strings.Repeat(" ", 2048-len(page))
	for name, b := range map[string][]byte{
		"small.txt": []byte(strings.Repeat("0123456789", 10)),
		"page":      []byte(page),
		"big.bin":   big,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fileHandler serves dir the ways handlers send files: http.FileServer
// (/files/), http.ServeFile (/serve/), and io.Copy of an open file into
// the ResponseWriter, without a Content-Length (/copy/: chunked, its type
// sniffed) or with one (/copylen/).
func fileHandler(dir string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/files/", http.StripPrefix("/files/", http.FileServer(http.Dir(dir))))
	mux.HandleFunc("/serve/{name}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(dir, r.PathValue("name")))
	})
	copyFile := func(w http.ResponseWriter, r *http.Request, setLength bool) {
		f, err := os.Open(filepath.Join(dir, r.PathValue("name")))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		if setLength {
			st, _ := f.Stat()
			w.Header().Set("Content-Length", fmt.Sprint(st.Size()))
		}
		io.Copy(w, f)
	}
	mux.HandleFunc("/copy/{name}", func(w http.ResponseWriter, r *http.Request) { copyFile(w, r, false) })
	mux.HandleFunc("/copylen/{name}", func(w http.ResponseWriter, r *http.Request) { copyFile(w, r, true) })
	return mux
}

// rawExchange is rawOutcome with a multipart answer's boundary, random
// per answer, replaced by fixed text.
func rawExchange(t *testing.T, addr, raw string) string {
	t.Helper()
	s := rawOutcome(t, addr, raw)
	if m := boundary.FindStringSubmatch(s); m != nil {
		s = strings.ReplaceAll(s, m[1], "(boundary)")
	}
	return s
}

var boundary = regexp.MustCompile(`boundary=([0-9a-f]+)`)

// TestServeFileDifferential: the file-serving handlers (http.FileServer,
// http.ServeFile, io.Copy of a file) give the same bytes from net/http's
// server and from the carrier host, for every poller: small and large
// files, byte ranges (one, several: multipart), HEAD, If-Modified-Since
// (304), a directory listing, HTTP/1.0, and copies whose type is sniffed
// from the first 512 bytes, chunked or with a length. Where the body is
// sent as it is past its first 512 bytes, the carrier host must have sent
// it with sendfile (the group's Telemetry.SendfileBytes), not through
// Write.
func TestServeFileDifferential(t *testing.T) {
	const big = 6 << 20
	dir := fileTree(t, big)
	st, err := os.Stat(filepath.Join(dir, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	since := st.ModTime().UTC().Add(time.Second).Format(http.TimeFormat)
	get := func(path, extra string) string {
		return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + extra + "Connection: close\r\n\r\n"
	}
	tests := []struct {
		name     string
		raw      string
		sendfile int64 // at least these bytes sent with sendfile
	}{
		{"FileServer, small", get("/files/small.txt", ""), 0},
		{"FileServer, large", get("/files/big.bin", ""), big - sniffLen},
		{"ServeFile, large", get("/serve/big.bin", ""), big - sniffLen},
		{"a range", get("/files/big.bin", "Range: bytes=1000-2999999\r\n"), 3_000_000 - 1000 - sniffLen},
		{"a range at the end", get("/files/big.bin", "Range: bytes=-700000\r\n"), 700_000 - sniffLen},
		{"ranges: multipart", get("/files/big.bin", "Range: bytes=0-99,5000000-5000099,6000000-\r\n"), 0},
		{"HEAD", "HEAD /files/big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 0},
		{"If-Modified-Since: 304", get("/files/big.bin", "If-Modified-Since: "+since+"\r\n"), 0},
		{"a directory", get("/files/", ""), 0},
		{"HTTP/1.0", "GET /serve/big.bin HTTP/1.0\r\n\r\n", big - sniffLen},
		{"copy, sniffed, chunked", get("/copy/page", ""), 0},
		{"copy of a small file: held, a length", get("/copy/small.txt", ""), 0},
		{"copy, a length set, sniffed", get("/copylen/page", ""), 2048 - sniffLen},
		{"copy, a length set, large", get("/copylen/big.bin", ""), big - sniffLen},
		{"copy, HTTP/1.0: to the close", "GET /copy/big.bin HTTP/1.0\r\n\r\n", big - sniffLen},
		{"copy, HEAD", "HEAD /copylen/big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 0},
	}
	h := fileHandler(dir)
	ref := startNetHTTP(t, h)
	want := make([]string, len(tests))
	for i, tc := range tests {
		want[i] = rawExchange(t, ref, tc.raw)
	}
	for _, poller := range carrier.Pollers {
		t.Run(poller, func(t *testing.T) {
			_, g, addr := startOneWith(t, carrier.Options{Carriers: 1, Poller: poller}, h, io.Discard)
			for i, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					before := groupSendfile(g)
					got := rawExchange(t, addr, tc.raw)
					if got != want[i] {
						t.Errorf("the carrier host's answer differs from net/http's:\n%s\nwant\n%s", clip(got), clip(want[i]))
					}
					if sent := groupSendfile(g) - before; sent < uint64(tc.sendfile) {
						t.Errorf("%d bytes went with sendfile, want at least %d", sent, tc.sendfile)
					}
				})
			}
		})
	}
}

// groupSendfile is g's count of bytes sent with sendfile.
func groupSendfile(g *carrier.Group) uint64 {
	var n uint64
	for _, tm := range g.Snapshot() {
		n += tm.SendfileBytes
	}
	return n
}

// clip shortens an answer for a failure message: its head and the first
// bytes of its body.
func clip(s string) string {
	if len(s) > 600 {
		return fmt.Sprintf("%q... (%d bytes)", s[:600], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// TestServeFileEnds: a large file's sending, waiting for room in the
// socket buffer, ends without hanging or leaking when the client goes
// away in the middle (its handler returns within a second or so) and when
// the Server's WriteTimeout passes while the client reads nothing (the
// handler returns at the timeout; the client then gets part of the file
// and the end of the connection), for every poller.
func TestServeFileEnds(t *testing.T) {
	const big = 32 << 20 // more than the socket buffers hold
	dir := fileTree(t, big)
	tests := []struct {
		name    string
		timeout time.Duration // WriteTimeout
		client  func(t *testing.T, c net.Conn)
	}{
		{"the client goes", 0, func(t *testing.T, c net.Conn) {
			io.ReadFull(c, make([]byte, 64<<10))
			c.Close()
		}},
		{"WriteTimeout passes", 300 * time.Millisecond, func(t *testing.T, c net.Conn) {
			time.Sleep(time.Second) // reads nothing meanwhile
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := io.Copy(io.Discard, c)
			if err != nil || n >= big {
				t.Errorf("the client read %d bytes, %v; want part of the file and the end", n, err)
			}
		}},
	}
	for _, poller := range carrier.Pollers {
		for _, tc := range tests {
			t.Run(poller+"/"+tc.name, func(t *testing.T) {
				done := make(chan time.Time, 1)
				files := fileHandler(dir)
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					files.ServeHTTP(w, r)
					done <- time.Now()
				})
				s, g, _ := startOneWith(t, carrier.Options{Carriers: 1, Poller: poller}, h, io.Discard)
				s.WriteTimeout = tc.timeout
				addr := listenOn(t, g, s)
				c := dial(t, addr)
				sent := time.Now() // before the request: the WriteTimeout runs from after its head
				io.WriteString(c, "GET /files/big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
				tc.client(t, c)
				select {
				case end := <-done:
					if took := end.Sub(sent); tc.timeout > 0 && took < tc.timeout {
						t.Errorf("the handler returned %v after the request was sent, before the WriteTimeout", took)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the handler still sends 10s on")
				}
			})
		}
	}
}

// TestReadFromHijacked: after Hijack, ReadFrom refuses as Write does
// (http.ErrHijacked), and a source with nothing to read gives 0 and no
// error, as net/http's copy does.
func TestReadFromHijacked(t *testing.T) {
	h := func(results chan<- string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				results <- "hijack: " + err.Error()
				return
			}
			defer c.Close()
			rf := w.(io.ReaderFrom)
			n1, err1 := rf.ReadFrom(strings.NewReader("body"))
			n2, err2 := rf.ReadFrom(strings.NewReader(""))
			results <- fmt.Sprintf("%d %v, %d %v", n1, err1, n2, err2)
		})
	}
	var got [2]string
	for i, start := range []func(http.Handler) string{
		func(h http.Handler) string { return startNetHTTP(t, h) },
		func(h http.Handler) string { _, addr := startCarrier(t, h, nil); return addr },
	} {
		results := make(chan string, 1)
		c := dial(t, start(h(results)))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		got[i] = <-results
	}
	if want := fmt.Sprintf("0 %v, 0 <nil>", http.ErrHijacked); got[1] != want || got[0] != want {
		t.Errorf("ReadFrom after Hijack: carrier host %q, net/http %q; want %q", got[1], got[0], want)
	}
}

// TestReadFromOverTLS: over TLS, whose connection has no ReadFrom, a
// file is copied through Write (as net/http does) and arrives whole.
func TestReadFromOverTLS(t *testing.T) {
	dir := fileTree(t, 3<<20)
	cert, pool := selfSigned(t)
	_, addr := startCarrier(t, fileHandler(dir), func(s *Server) { s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}} })
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := client.Get("https://" + addr + "/files/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	want, _ := os.ReadFile(filepath.Join(dir, "big.bin"))
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("read %d bytes, %v; want the file's %d", len(b), err, len(want))
	}
}

// BenchmarkServeFile measures one keep-alive client's GETs of a file that
// http.FileServer serves on one carrier, with the ResponseWriter's ReadFrom
// (sendfile) and without it (the writer wrapped so that io.Copy finds no
// ReadFrom and copies through Write, as before the twenty-second session),
// for a 64 KiB and a 1 MiB file. Beside ns/op and the allocations (the
// server's; the raw client allocates nothing per request) it reports the
// CPU time per request of the whole process (client included:
// cpu-ns/op) and of the carrier's thread alone (carrier-ns/op, from
// /proc/self/task/*/schedstat). The carrier does not hand off (a hand-off
// moves the carrier to another thread, whose time the count would miss):
// on a loaded machine a run that sends a MiB may last past the threshold.
func BenchmarkServeFile(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		dir := b.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "f"), bytes.Repeat([]byte("spindle "), size/8), 0o600); err != nil {
			b.Fatal(err)
		}
		files := http.FileServer(http.Dir(dir))
		for _, sendfile := range []bool{true, false} {
			name := fmt.Sprintf("%dKiB/readfrom", size>>10)
			h := files
			if !sendfile {
				name = fmt.Sprintf("%dKiB/write", size>>10)
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					files.ServeHTTP(struct{ http.ResponseWriter }{w}, r)
				})
			}
			b.Run(name, func(b *testing.B) {
				_, addr := serveOn(b, carrier.Options{Carriers: 1, HandoffThreshold: -1}, h, nil)
				const raw = "GET /f HTTP/1.1\r\nHost: bench\r\n\r\n"
				c, size := dialBench(b, addr, raw)
				cpu0, car0 := cputest.ProcessNs(b), carrierCPU(b)
				benchExchanges(b, c, raw, size)
				b.StopTimer()
				b.ReportMetric(float64(cputest.ProcessNs(b)-cpu0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(carrierCPU(b)-car0)/float64(b.N), "carrier-ns/op")
			})
		}
	}
}

// carrierCPU is the CPU time so far of the process's threads named
// carrier-N, in ns (the first field of each one's schedstat).
func carrierCPU(b *testing.B) int64 {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		b.Fatal(err)
	}
	var ns int64
	for _, e := range tasks {
		dir := "/proc/self/task/" + e.Name()
		comm, _ := os.ReadFile(dir + "/comm")
		if !strings.HasPrefix(string(comm), "carrier-") {
			continue
		}
		st, _ := os.ReadFile(dir + "/schedstat")
		if f := strings.Fields(string(st)); len(f) > 0 {
			v, _ := strconv.ParseInt(f[0], 10, 64)
			ns += v
		}
	}
	return ns
}
