package carrier

import (
	"runtime"
	"sync"
)

// Floating carriers have no thread of their own, so "is the caller a
// task?" cannot be answered by comparing thread ids. Instead each
// coroutine of a floating group marks itself when it starts: it records
// its goroutine's id in taskGoroutines, and removes it when it ends.
// calledFromTask looks the caller's id up. Pinned and locked carriers never
// need it (their thread answers), so their coroutines do not mark.

// taskGoroutines holds the goroutine ids of the live coroutines of
// floating groups (uint64 -> struct{}).
var taskGoroutines sync.Map

// markTask records the calling goroutine, a coroutine's, as a task's, and
// returns the function that removes the mark when the coroutine ends.
func markTask() (unmark func()) {
	id, ok := goroutineID()
	if !ok {
		return func() {}
	}
	taskGoroutines.Store(id, struct{}{})
	return func() { taskGoroutines.Delete(id) }
}

// calledFromTask reports whether the calling goroutine is the coroutine of
// a floating group's task.
func calledFromTask() bool {
	id, ok := goroutineID()
	if !ok {
		return false
	}
	_, marked := taskGoroutines.Load(id)
	return marked
}

// goroutineID returns the calling goroutine's id, from the first line of
// its stack trace ("goroutine 18 [running]:"), the one place the runtime
// states it. 64 bytes hold that line whatever the id.
func goroutineID() (uint64, bool) {
	var buf [64]byte
	return parseGoroutineID(buf[:runtime.Stack(buf[:], false)])
}

// parseGoroutineID parses the id from the first line of a goroutine's
// stack trace: "goroutine ID [state]:". It reports false for anything else.
func parseGoroutineID(b []byte) (uint64, bool) {
	const prefix = "goroutine "
	if len(b) <= len(prefix) || string(b[:len(prefix)]) != prefix {
		return 0, false
	}
	b = b[len(prefix):]
	var id uint64
	n := 0
	for ; n < len(b) && b[n] >= '0' && b[n] <= '9'; n++ {
		d := uint64(b[n] - '0')
		if id > (1<<64-1-d)/10 {
			return 0, false // overflow: not a runtime id
		}
		id = id*10 + d
	}
	if n == 0 || n == len(b) || b[n] != ' ' || (n > 1 && b[0] == '0') { // the runtime prints no leading zero
		return 0, false
	}
	return id, true
}
