package carrierhttp

import (
	"net/http"
	"strings"
	"testing"
)

// appendFieldCases are header fields whose rendering appendField must
// share with net/http's Header.Write.
var appendFieldCases = []struct {
	k  string
	vv []string
}{
	{"Content-Type", []string{"text/plain; charset=utf-8"}},
	{"X-Multi", []string{"1", "2", ""}},
	{"X-Space", []string{"  padded \t"}},
	{"X-Break", []string{"a\r\nb", "c\nd", "e\r"}},
	{"X-Inner-Break", []string{" a\r\n b "}},
	{"Bad Name", []string{"v"}},
	{"", []string{"v"}},
	{"X-Empty", nil},
}

func TestAppendField(t *testing.T) {
	for _, tc := range appendFieldCases {
		checkAppendField(t, tc.k, tc.vv)
	}
}

// FuzzAppendField compares appendField with net/http's Header.Write for
// one field of two values.
func FuzzAppendField(f *testing.F) {
	for _, tc := range appendFieldCases {
		v0, v1 := "", ""
		if len(tc.vv) > 0 {
			v0 = tc.vv[0]
		}
		if len(tc.vv) > 1 {
			v1 = tc.vv[1]
		}
		f.Add(tc.k, v0, v1)
	}
	f.Fuzz(func(t *testing.T, k, v0, v1 string) {
		checkAppendField(t, k, []string{v0, v1})
	})
}

func checkAppendField(t *testing.T, k string, vv []string) {
	t.Helper()
	var want strings.Builder
	if err := (http.Header{k: vv}).Write(&want); err != nil {
		t.Fatal(err)
	}
	if got := string(appendField(nil, k, vv)); got != want.String() {
		t.Errorf("appendField(%q, %q) = %q, net/http writes %q", k, vv, got, want.String())
	}
}
