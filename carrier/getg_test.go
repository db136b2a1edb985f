package carrier

import (
	"sync"
	"testing"
)

// TestGetg: getg is stable within a goroutine, differs between goroutines
// alive together and is never 0 where it is implemented.
func TestGetg(t *testing.T) {
	if !haveGetg {
		t.Skip("getg is not implemented on this architecture (TaskFromContext compares thread ids)")
	}
	const n = 16
	ids := make(chan uintptr, n)
	release := make(chan struct{}) // all alive at once: no descriptor is reused
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			g := getg()
			if getg() != g {
				t.Error("getg changed within one goroutine")
			}
			ids <- g
			<-release
		})
	}
	seen := map[uintptr]bool{getg(): true}
	for range n {
		g := <-ids
		if g == 0 || seen[g] {
			t.Errorf("getg %#x: zero or shared by two live goroutines", g)
		}
		seen[g] = true
	}
	close(release)
	wg.Wait()
}
