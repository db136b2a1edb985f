package carrierhttp

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestAppendRequestDifferential checks that appendRequest writes the bytes
// Request.Write writes, and leaves to it the requests it does not handle.
func TestAppendRequestDifferential(t *testing.T) {
	many := http.Header{}
	for i := range maxFastHeaderKeys + 1 {
		many.Set(fmt.Sprintf("X-H%d", i), "v")
	}
	cases := []struct {
		name, method, url string
		header            http.Header
		edit              func(*http.Request)
		slow              bool // appendRequest leaves it to Request.Write
	}{
		{name: "plain GET", method: "GET", url: "http://127.0.0.1:8080/fruits"},
		{name: "empty method", method: "", url: "http://h/", edit: func(r *http.Request) { r.Method = "" }},
		{name: "query", method: "GET", url: "http://h/a/b?x=1&y=%20"},
		{name: "force query", method: "GET", url: "http://h/a?"},
		{name: "no path", method: "GET", url: "http://h"},
		{name: "escaped path", method: "GET", url: "http://h/a%2Fb/c%20d"},
		{name: "path to escape", method: "GET", url: "http://h/a b", edit: func(r *http.Request) { r.URL.RawPath = "" }},
		{name: "ipv6 host", method: "GET", url: "http://[::1]:81/x"},
		{name: "headers", method: "GET", url: "http://h/", header: http.Header{
			"X-B": {"2", " spaced\t"}, "Accept": {"*/*"}, "x-lower": {"l"}, "X-Empty": {""}, "X-None": {},
		}},
		{name: "user agent", method: "GET", url: "http://h/", header: http.Header{"User-Agent": {" mine/1 ", "second"}}},
		{name: "empty user agent", method: "GET", url: "http://h/", header: http.Header{"User-Agent": {""}}},
		{name: "user agent no values", method: "GET", url: "http://h/", header: http.Header{"User-Agent": {}}},
		{name: "excluded fields", method: "GET", url: "http://h/", header: http.Header{
			"Host": {"other"}, "Content-Length": {"5"}, "Transfer-Encoding": {"chunked"}, "Trailer": {"X"},
		}},
		{name: "Host field", method: "GET", url: "http://h/", edit: func(r *http.Request) { r.Host = "virtual.example:99" }},
		{name: "POST without body", method: "POST", url: "http://h/p"},
		{name: "DELETE", method: "DELETE", url: "http://h/p"},
		{name: "OPTIONS", method: "OPTIONS", url: "http://h/p"},
		{name: "HEAD", method: "HEAD", url: "http://h/p"},
		{name: "NoBody", method: "PUT", url: "http://h/p", edit: func(r *http.Request) { r.Body = http.NoBody }},
		{name: "body", method: "POST", url: "http://h/p", edit: func(r *http.Request) {
			r2, _ := http.NewRequest("POST", "http://h/p", strings.NewReader("data"))
			r.Body, r.ContentLength, r.GetBody = r2.Body, r2.ContentLength, r2.GetBody
		}, slow: true},
		{name: "close", method: "GET", url: "http://h/", edit: func(r *http.Request) { r.Close = true }, slow: true},
		{name: "opaque", method: "GET", url: "http://h/", edit: func(r *http.Request) { r.URL.Opaque = "//h/o" }, slow: true},
		{name: "CONNECT", method: "CONNECT", url: "http://h:443", slow: true},
		{name: "zone", method: "GET", url: "http://[fe80::1%25eth0]:80/", slow: true},
		{name: "non-ASCII host", method: "GET", url: "http://h/", edit: func(r *http.Request) { r.Host = "bücher.example" }, slow: true},
		{name: "host with space", method: "GET", url: "http://h/", edit: func(r *http.Request) { r.Host = "a b" }, slow: true},
		{name: "control in query", method: "GET", url: "http://h/", edit: func(r *http.Request) { r.URL.RawQuery = "a\x01" }, slow: true},
		{name: "many keys", method: "GET", url: "http://h/", header: many, slow: true},
		{name: "trailer", method: "GET", url: "http://h/", edit: func(r *http.Request) { r.Trailer = http.Header{"X": nil} }, slow: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.header != nil {
				req.Header = tc.header
			}
			if tc.edit != nil {
				tc.edit(req)
			}
			if err := checkRequest(req); err != nil {
				t.Fatalf("checkRequest: %v", err)
			}
			got, err := appendRequest([]byte("keep"), req)
			if tc.slow {
				if err != errSlowPath {
					t.Fatalf("got %q, %v; want errSlowPath", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := req.Write(&want); err != nil {
				t.Fatalf("Request.Write: %v", err)
			}
			if string(got) != "keep"+want.String() {
				t.Fatalf("wrote\n%q\nRequest.Write\n%q", got[4:], want.String())
			}
		})
	}
}

func TestCheckRequest(t *testing.T) {
	cases := []struct {
		name   string
		method string
		header http.Header
		bad    bool
	}{
		{"fine", "GET", http.Header{"X-A": {"v\tw", ""}, "Obs-Text": {"\xe9"}}, false},
		{"custom method", "PURGE", nil, false},
		{"method with space", "GE T", nil, true},
		{"empty key", "GET", http.Header{"": {"v"}}, true},
		{"key with colon", "GET", http.Header{"X:A": {"v"}}, true},
		{"key with space", "GET", http.Header{"X A": {"v"}}, true},
		{"CRLF in value", "GET", http.Header{"X-A": {"v\r\nInjected: 1"}}, true},
		{"LF in value", "GET", http.Header{"X-A": {"v\nw"}}, true},
		{"NUL in value", "GET", http.Header{"X-A": {"v\x00"}}, true},
		{"DEL in value", "GET", http.Header{"X-A": {"v\x7f"}}, true},
	}
	for _, tc := range cases {
		req := &http.Request{Method: tc.method, Header: tc.header}
		if err := checkRequest(req); (err != nil) != tc.bad {
			t.Errorf("%s: %v, want an error: %v", tc.name, err, tc.bad)
		}
	}
}

// TestAppendRequestAllocs checks that writing a request head allocates
// nothing once the buffer has grown.
func TestAppendRequestAllocs(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://127.0.0.1:8080/fruits?q=1", nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Request-Id", "abc")
	buf := make([]byte, 0, 512)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := appendRequest(buf[:0], req); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per head, want 0", allocs)
	}
}

// FuzzAppendRequest checks appendRequest against Request.Write for
// requests built from arbitrary parts: the same bytes, or errSlowPath.
func FuzzAppendRequest(f *testing.F) {
	f.Add("GET", "/fruits", "q=1", "h:80", "X-A", " v ", "User-Agent", "u")
	f.Add("POST", "/a%2Fb", "", "[::1]:1", "accept", "*/*", "X-B", "")
	f.Fuzz(func(t *testing.T, method, path, query, host, k1, v1, k2, v2 string) {
		req := &http.Request{
			Method: method,
			URL:    &url.URL{Scheme: "http", Host: host, Path: path, RawQuery: query},
			Header: http.Header{k1: {v1}, k2: {v2, v1}},
		}
		if checkRequest(req) != nil {
			return
		}
		got, err := appendRequest(nil, req)
		if err == errSlowPath {
			return
		}
		var want bytes.Buffer
		werr := req.Write(&want)
		switch {
		case err != nil || werr != nil:
			t.Fatalf("appendRequest: %v; Request.Write: %v", err, werr)
		case string(got) != want.String():
			t.Fatalf("wrote\n%q\nRequest.Write\n%q", got, want.String())
		}
	})
}
