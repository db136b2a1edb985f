package cpu

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"testing/fstest"
)

// Layout describes a regular machine: identical packages of identical dies
// of identical cores. It generates the sysfs files such a machine shows, for
// tests and for planning placements for a machine one is not on. CPUs are
// numbered as Linux numbers them on x86: all first threads of every core
// (package by package, die by die), then all second threads, and so on.
type Layout struct {
	Packages       int // sockets
	DiesPerPackage int // dies (chiplets, CCDs) per package
	CoresPerDie    int // physical cores per die
	Threads        int // SMT threads per core (1: no SMT)
	// L3PerPackage gives each package one L3 (a monolithic Xeon); by
	// default each die has its own (an EPYC CCD).
	L3PerPackage bool
}

// Files returns the sysfs files the layout shows (paths relative to the
// sysfs root, contents as the kernel formats them): online, and per CPU its
// topology ids and lists and four cache indexes (L1d, L1i, L2, L3).
func (l Layout) Files() (map[string]string, error) {
	if l.Packages < 1 || l.DiesPerPackage < 1 || l.CoresPerDie < 1 || l.Threads < 1 {
		return nil, fmt.Errorf("layout %+v: every count must be at least 1", l)
	}
	cores := l.Packages * l.DiesPerPackage * l.CoresPerDie
	n := cores * l.Threads
	if n > MaxCPU {
		return nil, fmt.Errorf("layout %+v: %d CPUs, more than %d", l, n, MaxCPU)
	}
	// cpusOf lists every thread of the global cores [lo, hi).
	cpusOf := func(lo, hi int) string {
		var s Set
		for th := range l.Threads {
			for c := lo; c < hi; c++ {
				s = append(s, th*cores+c)
			}
		}
		slices.Sort(s)
		return s.String() + "\n"
	}
	files := map[string]string{path.Join(cpuDir, "online"): rangeList(n)}
	perPkg := l.DiesPerPackage * l.CoresPerDie
	for id := range n {
		g := id % cores // global core
		pkg, inPkg := g/perPkg, g%perPkg
		die := inPkg / l.CoresPerDie
		dir := path.Join(cpuDir, "cpu"+strconv.Itoa(id))
		sib := cpusOf(g, g+1)
		l3lo, l3hi := pkg*perPkg+die*l.CoresPerDie, pkg*perPkg+(die+1)*l.CoresPerDie
		if l.L3PerPackage {
			l3lo, l3hi = pkg*perPkg, (pkg+1)*perPkg
		}
		for name, v := range map[string]string{
			"topology/core_id":              strconv.Itoa(inPkg) + "\n",
			"topology/die_id":               strconv.Itoa(die) + "\n",
			"topology/physical_package_id":  strconv.Itoa(pkg) + "\n",
			"topology/core_cpus_list":       sib,
			"topology/thread_siblings_list": sib,
			"cache/index0/level":            "1\n",
			"cache/index0/type":             "Data\n",
			"cache/index0/shared_cpu_list":  sib,
			"cache/index1/level":            "1\n",
			"cache/index1/type":             "Instruction\n",
			"cache/index1/shared_cpu_list":  sib,
			"cache/index2/level":            "2\n",
			"cache/index2/type":             "Unified\n",
			"cache/index2/shared_cpu_list":  sib,
			"cache/index3/level":            "3\n",
			"cache/index3/type":             "Unified\n",
			"cache/index3/shared_cpu_list":  cpusOf(l3lo, l3hi),
		} {
			files[path.Join(dir, name)] = v
		}
	}
	return files, nil
}

// Topology returns the topology of the layout, read through ReadTopologyFS
// from the files Files generates.
func (l Layout) Topology() (*Topology, error) {
	files, err := l.Files()
	if err != nil {
		return nil, err
	}
	fsys := fstest.MapFS{}
	for name, v := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(v)}
	}
	return ReadTopologyFS(fsys)
}

// rangeList formats CPUs 0..n-1 as the kernel's online file does.
func rangeList(n int) string {
	if n == 1 {
		return "0\n"
	}
	return "0-" + strconv.Itoa(n-1) + "\n"
}
