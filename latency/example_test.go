package latency_test

import (
	"fmt"
	"strings"

	"github.com/spindle-lab/spindle/latency"
)

// Record latencies in an HDR histogram and print wrk2's latency block.
func ExampleWriteDistribution() {
	h := latency.New()
	for i := int64(1); i <= 1000; i++ {
		latency.Record(h, i*1000) // 1µs to 1ms, in ns
	}
	var b strings.Builder
	if err := latency.WriteDistribution(&b, h, "Recorded Latency"); err != nil {
		fmt.Println(err)
		return
	}
	lines := strings.Split(b.String(), "\n")
	fmt.Println(strings.Join(lines[:10], "\n"))
	// Output:
	//   Latency Distribution (HdrHistogram - Recorded Latency)
	//  50.000%  500.00us
	//  75.000%  750.00us
	//  90.000%    0.90ms
	//  99.000%    0.99ms
	//  99.900%    1.00ms
	//  99.990%    1.00ms
	//  99.999%    1.00ms
	// 100.000%    1.00ms
}
