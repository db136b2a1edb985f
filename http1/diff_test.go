package http1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// maxFuzzInput keeps fuzz inputs under the 8 KiB header limit, which
// net/http's ReadRequest does not enforce (its server does).
const maxFuzzInput = 6 << 10

// addCorpus adds every file of testdata/dir as a seed.
func addCorpus(f *testing.F, dir string) {
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.http"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no corpus in testdata/%s: %v", dir, err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// goRequest parses data with net/http and reads the whole body; consumed
// is the number of bytes net/http took.
func goRequest(data []byte) (req *http.Request, body []byte, consumed int, err error) {
	rd := bytes.NewReader(data)
	br := bufio.NewReader(rd)
	req, err = http.ReadRequest(br)
	if err != nil {
		return nil, nil, 0, err
	}
	body, err = io.ReadAll(req.Body)
	if err != nil {
		return nil, nil, 0, err
	}
	return req, body, len(data) - rd.Len() - br.Buffered(), nil
}

// goView returns the header map net/http builds from m's fields.
func goView(m *Message, response bool, status int) http.Header {
	h := http.Header{}
	for _, f := range m.Headers {
		k := textproto.CanonicalMIMEHeaderKey(string(f.Name))
		h[k] = append(h[k], string(f.Value))
	}
	delete(h, "Transfer-Encoding")
	if cl := h["Content-Length"]; len(cl) > 1 {
		h["Content-Length"] = cl[:1]
	}
	bodyless := response && (status/100 == 1 || status == 204 || status == 304)
	if m.Chunked && !bodyless {
		delete(h, "Content-Length")
		delete(h, "Trailer")
	}
	if response && (m.Major > 1 || m.Major == 1 && m.Minor > 0) {
		for _, v := range h["Connection"] {
			if hasToken([]byte(v), "close") {
				delete(h, "Connection")
				break
			}
		}
	} else {
		delete(h, "Host") // net/http moves it to Request.Host
	}
	if p := h["Pragma"]; len(p) > 0 && p[0] == "no-cache" && len(h["Cache-Control"]) == 0 {
		h["Cache-Control"] = []string{"no-cache"}
	}
	return h
}

// squeeze replaces each run of spaces and tabs in the values of h with one
// space and drops one at the end, for comparing folded response values
// (obs-fold): the parser turns each line break into as many spaces, where
// net/http trims the lines and joins them with one space (and keeps the one
// it adds before an empty folded line).
func squeeze(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		for _, v := range vs {
			var b strings.Builder
			space := false
			for i := 0; i < len(v); i++ {
				if c := v[i]; c == ' ' || c == '\t' {
					space = true
					continue
				}
				if space && b.Len() > 0 {
					b.WriteByte(' ')
				}
				space = false
				b.WriteByte(v[i])
			}
			out[k] = append(out[k], b.String())
		}
	}
	return out
}

// hasSpacedName reports whether a header line of data has a space in its
// field name, which net/http accepts and RFC 9112 §5.1 forbids.
func hasSpacedName(data []byte) bool {
	head, _, _ := bytes.Cut(data, []byte("\n\r\n"))
	for _, l := range bytes.Split(head, []byte("\n"))[1:] {
		if name, _, ok := bytes.Cut(l, []byte(":")); ok && bytes.ContainsAny(name, " ") {
			return true
		}
	}
	return false
}

func FuzzRequestDifferential(f *testing.F) {
	addCorpus(f, "requests")
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		var req Request
		n, err := ParseRequest(data, &req, Options{})
		greq, gbody, gn, gerr := goRequest(data)
		if err != nil {
			var e *Error
			switch {
			case err == ErrIncomplete:
				if gerr == nil {
					t.Fatalf("incomplete, net/http accepted %q", data)
				}
			case err == errFolded, errors.As(err, &e) && e.Status == 413, err == errTrailer:
				// Deliberate: obs-fold refused; body limit net/http lacks;
				// a trailer section must end in CRLF CRLF (net/http looks
				// for one ahead, in whatever follows).
			case err == errVersion:
				if gerr == nil && greq.ProtoMajor == 1 {
					t.Fatalf("505 for HTTP/1.x %q", data)
				}
			case err == errNoHost:
				if gerr == nil && (len(greq.Header["Host"]) > 0 || !greq.ProtoAtLeast(1, 1) || greq.Method == "CONNECT") {
					t.Fatalf("missing Host, but net/http saw one in %q", data)
				}
			case err == errBadHost:
				// net/http's server refuses it after ReadRequest.
				if gerr == nil && validHost([]byte(greq.Host)) && greq.URL.Host == "" {
					t.Fatalf("Host refused, net/http's %q valid in %q", greq.Host, data)
				}
			case err == errCoding10:
				// Deliberate (RFC 9112 §6.1): net/http ignores it.
				if gerr == nil && greq.ProtoAtLeast(1, 1) {
					t.Fatalf("HTTP/1.0 Transfer-Encoding refused in HTTP/1.1 %q", data)
				}
			case err == errBadHeader && hasSpacedName(data):
				// Deliberate: whitespace in a field name refused.
			default:
				if gerr == nil {
					t.Fatalf("rejected (%v), net/http accepted %q", err, data)
				}
			}
			return
		}
		if gerr != nil {
			t.Fatalf("accepted, net/http rejected (%v): %q", gerr, data)
		}
		if string(req.Method) != greq.Method || string(req.Target) != greq.RequestURI ||
			req.Major != greq.ProtoMajor || req.Minor != greq.ProtoMinor {
			t.Fatalf("request line %q %q %d.%d, net/http %q %q %d.%d", req.Method, req.Target, req.Major, req.Minor,
				greq.Method, greq.RequestURI, greq.ProtoMajor, greq.ProtoMinor)
		}
		if h := goView(&req.Message, false, 0); !reflect.DeepEqual(h, greq.Header) {
			t.Fatalf("headers %q, net/http %q", h, greq.Header)
		}
		if host := string(req.Get("Host")); greq.URL.Host == "" && host != greq.Host {
			t.Fatalf("host %q, net/http %q", host, greq.Host)
		}
		if !bytes.Equal(req.Body, gbody) {
			t.Fatalf("body %q, net/http %q", req.Body, gbody)
		}
		// Deliberate (RFC 9112 §6.3): Content-Length beside chunked closes.
		smuggle := req.Chunked && req.Get("Content-Length") != nil
		if req.KeepAlive == greq.Close && !(smuggle && !req.KeepAlive) {
			t.Fatalf("keep-alive %v, net/http close %v", req.KeepAlive, greq.Close)
		}
		if n != gn {
			t.Fatalf("consumed %d bytes, net/http %d of %q", n, gn, data)
		}
		// Incremental: a proper prefix of an accepted request is incomplete.
		for _, k := range []int{n / 2, n - 1} {
			if _, err := ParseRequest(data[:k], &req, Options{}); err != ErrIncomplete {
				t.Fatalf("prefix of %d bytes of %q: %v, want ErrIncomplete", k, data[:n], err)
			}
		}
	})
}

func FuzzResponseDifferential(f *testing.F) {
	addCorpus(f, "responses")
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		var resp Response
		// A copy: the parser rewrites each obs-fold with spaces.
		_, err := ParseResponse(bytes.Clone(data), &resp, true, Options{})
		br := bufio.NewReader(bytes.NewReader(data))
		gresp, gerr := http.ReadResponse(br, &http.Request{Method: "GET"})
		var gbody []byte
		if gerr == nil {
			gbody, gerr = io.ReadAll(gresp.Body)
		}
		if err != nil {
			switch {
			case err == errBadHeader && hasSpacedName(data), err == errTrailer:
			default:
				if gerr == nil {
					t.Fatalf("rejected (%v), net/http accepted %q", err, data)
				}
			}
			return
		}
		if gerr != nil {
			t.Fatalf("accepted, net/http rejected (%v): %q", gerr, data)
		}
		if resp.Status != gresp.StatusCode || resp.Major != gresp.ProtoMajor || resp.Minor != gresp.ProtoMinor {
			t.Fatalf("status %d %d.%d, net/http %d %d.%d", resp.Status, resp.Major, resp.Minor,
				gresp.StatusCode, gresp.ProtoMajor, gresp.ProtoMinor)
		}
		if h := squeeze(goView(&resp.Message, true, resp.Status)); !reflect.DeepEqual(h, squeeze(gresp.Header)) {
			t.Fatalf("headers %q, net/http %q", h, gresp.Header)
		}
		if !bytes.Equal(resp.Body, gbody) {
			t.Fatalf("body %q, net/http %q", resp.Body, gbody)
		}
		if resp.KeepAlive == gresp.Close {
			t.Fatalf("keep-alive %v, net/http close %v", resp.KeepAlive, gresp.Close)
		}
		if wantReason := strings.TrimPrefix(gresp.Status, gresp.Status[:min(4, len(gresp.Status))]); len(gresp.Status) > 4 && string(resp.Reason) != wantReason {
			t.Fatalf("reason %q, net/http status %q", resp.Reason, gresp.Status)
		}
	})
}
