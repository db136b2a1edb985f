package carrierhttp

import (
	"net/http"
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
