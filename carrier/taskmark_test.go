package carrier

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseGoroutineID(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"goroutine 1 [running]:\nmain.main()", 1, true},
		{"goroutine 18446744073709551615 [running]:", 1<<64 - 1, true},
		{"goroutine 18446744073709551616 [running]:", 0, false}, // overflows uint64
		{"goroutine 42 [chan receive]:", 42, true},
		{"goroutine  1 [running]:", 0, false},
		{"goroutine 01 [running]:", 0, false}, // the runtime prints no leading zero
		{"goroutine x [running]:", 0, false},
		{"goroutine 12", 0, false}, // cut before the state
		{"goroutine ", 0, false},
		{"thread 1 [running]:", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseGoroutineID([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseGoroutineID(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseGoroutineID(f *testing.F) {
	f.Add([]byte("goroutine 7 [running]:"))
	f.Add([]byte("goroutine 99999999999999999999 [x]"))
	f.Add([]byte("goroutine"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, ok := parseGoroutineID(b)
		if !ok {
			return
		}
		// An accepted line starts with its id, printed back the same way.
		if want := fmt.Sprintf("goroutine %d ", id); !strings.HasPrefix(string(b), want) {
			t.Fatalf("parseGoroutineID(%q) = %d: the input does not start with %q", b, id, want)
		}
	})
}

func TestGoroutineIDDiffers(t *testing.T) {
	mine, ok := goroutineID()
	if !ok {
		t.Fatal("goroutineID: no id in this goroutine's stack header")
	}
	other := make(chan uint64)
	go func() { id, _ := goroutineID(); other <- id }()
	if o := <-other; o == mine || o == 0 {
		t.Errorf("goroutine ids: this one %d, another %d", mine, o)
	}
}

func TestMarkTask(t *testing.T) {
	if calledFromTask() {
		t.Fatal("the test goroutine is marked as a task before markTask")
	}
	inside := make(chan bool)
	go func() {
		unmark := markTask()
		a := calledFromTask()
		unmark()
		inside <- a && !calledFromTask()
	}()
	if !<-inside {
		t.Error("a marked goroutine: calledFromTask false while marked, or true after unmark")
	}
	if calledFromTask() {
		t.Error("another goroutine's mark seen from the test goroutine")
	}
}
