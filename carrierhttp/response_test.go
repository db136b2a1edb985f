package carrierhttp

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier/wait"
)

// TestDateCache: the Date rendered is the current second's, it is kept
// until the next second and rendered again from then on.
func TestDateCache(t *testing.T) {
	var d dateCache
	parse := func() time.Time {
		t.Helper()
		got, err := http.ParseTime(string(d.append(nil)))
		if err != nil {
			t.Fatalf("Date %q: %v", d.buf, err)
		}
		return got
	}
	before := time.Now().Truncate(time.Second)
	got := parse()
	if after := time.Now(); got.Before(before) || got.After(after) {
		t.Fatalf("Date %v, want between %v and %v", got, before, after)
	}
	if left := time.Duration(d.until - wait.Now()); left <= 0 || left > time.Second {
		t.Fatalf("kept for %v more, want (0, 1s]", left)
	}
	copy(d.buf[:], "Mon, 02 Jan 2006 15:04:05 GMT")
	d.until = wait.Now() + int64(time.Hour)
	if got := parse(); !got.Equal(time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)) {
		t.Fatalf("Date %v before its second ended, want the rendering kept", got)
	}
	d.until = wait.Now() - 1
	if got := parse(); got.Year() == 2006 {
		t.Fatalf("Date %v after its second ended, want it rendered again", got)
	}
}

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
