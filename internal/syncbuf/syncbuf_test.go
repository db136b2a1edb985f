package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Concurrent writers lose nothing, and reads while they write are safe
// (go test -race).
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("ab"))
				_ = b.Len()
			}
		})
	}
	wg.Wait()
	if b.Len() != 1600 || b.String() != strings.Repeat("ab", 800) {
		t.Fatalf("Len %d, String %q...", b.Len(), b.String()[:min(10, b.Len())])
	}
}
