package unix

import xunix "golang.org/x/sys/unix"

// SchedGetaffinity returns the CPUs the thread tid (0: the caller) may run on.
func SchedGetaffinity(tid int) ([]int, error) {
	var set xunix.CPUSet
	if err := xunix.SchedGetaffinity(tid, &set); err != nil {
		return nil, wrap("sched_getaffinity", err)
	}
	var cpus []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// SchedSetaffinity restricts the thread tid (0: the caller) to cpus.
func SchedSetaffinity(tid int, cpus []int) error {
	var set xunix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return wrap("sched_setaffinity", xunix.SchedSetaffinity(tid, &set))
}
