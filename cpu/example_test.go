package cpu_test

import (
	"fmt"

	"github.com/spindle-lab/spindle/cpu"
)

// Parse a CPU list in the kernel's syntax (taskset, cpuset, sysfs).
func ExampleParseList() {
	s, err := cpu.ParseList("0-3,8,10-11")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(s), s)
	_, err = cpu.ParseList("3-1")
	fmt.Println(err != nil)
	// Output:
	// 7 0-3,8,10-11
	// true
}

// Read a topology from a sysfs fixture (a two-vCPU virtual machine).
func ExampleReadTopology() {
	topo, err := cpu.ReadTopology("testdata/vm2")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(topo.CPUs())
	fmt.Println(topo.Summary())
	// Output:
	// 0-1
	// 1 packages, 1 dies, 1 L3 clusters, 2 cores, 2 CPUs (no SMT)
}
