package cpu

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

var update = flag.Bool("update", false, "rewrite the generated topology fixtures in testdata")

// The generated fixtures: sysfs trees of machines we are not on, stored as
// archives of "-- path --" sections (testdata/NAME.sysfs) and regenerated
// from their Layout with -update.
var fixtureLayouts = map[string]Layout{
	// Two Xeon sockets of 16 cores with two threads each, one L3 per
	// socket (e.g. 2x Xeon Gold 6142).
	"2s-16c-smt": {Packages: 2, DiesPerPackage: 1, CoresPerDie: 16, Threads: 2, L3PerPackage: true},
	// An EPYC 9654: one socket, 12 CCDs of 8 cores, one L3 per CCD, SMT
	// on. The fixture assumes a kernel that reports each CCD as a die
	// (die_id 0-11); on kernels that report die_id 0 throughout, the L3
	// clusters still separate the CCDs.
	"epyc-9654": {Packages: 1, DiesPerPackage: 12, CoresPerDie: 8, Threads: 2},
}

func writeArchive(name string, files map[string]string) error {
	var b bytes.Buffer
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "-- %s --\n%s", k, files[k])
	}
	return os.WriteFile(name, b.Bytes(), 0o644)
}

func readArchive(t testing.TB, name string) fstest.MapFS {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{}
	var cur *fstest.MapFile
	for line := range strings.SplitAfterSeq(string(data), "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --\n") {
			cur = &fstest.MapFile{}
			fsys[strings.TrimSuffix(strings.TrimPrefix(line, "-- "), " --\n")] = cur
			continue
		}
		if cur == nil {
			t.Fatalf("%s: content before the first header", name)
		}
		cur.Data = append(cur.Data, line...)
	}
	return fsys
}

// fixture returns a named topology: the generated archives, or "vm2", the
// sysfs files captured from the 2-CPU development VM.
func fixture(t testing.TB, name string) *Topology {
	t.Helper()
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if topo, ok := fixtures[name]; ok {
		return topo
	}
	var topo *Topology
	var err error
	if name == "vm2" {
		topo, err = ReadTopology("testdata/vm2")
	} else {
		topo, err = ReadTopologyFS(readArchive(t, "testdata/"+name+".sysfs"))
	}
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	fixtures[name] = topo
	return topo
}

// fixtures caches the parsed fixtures: topologies are read-only.
var (
	fixturesMu sync.Mutex
	fixtures   = map[string]*Topology{}
)

func TestGeneratedFixturesCurrent(t *testing.T) {
	for name, l := range fixtureLayouts {
		files, err := l.Files()
		if err != nil {
			t.Fatal(err)
		}
		path := "testdata/" + name + ".sysfs"
		if *update {
			if err := writeArchive(path, files); err != nil {
				t.Fatal(err)
			}
		}
		got := readArchive(t, path)
		if len(got) != len(files) {
			t.Fatalf("%s: %d files, layout makes %d (run go test -update)", path, len(got), len(files))
		}
		for k, v := range files {
			if f := got[k]; f == nil || string(f.Data) != v {
				t.Fatalf("%s: %s differs from the layout (run go test -update)", path, k)
			}
		}
	}
}

func TestTopologyFixtures(t *testing.T) {
	tests := []struct {
		name                                  string
		cpus, cores, dies, clusters, packages int
		smt                                   bool
		cpu                                   int
		siblings, cluster, die, pkg           string
		summary                               string
	}{
		{"vm2", 2, 2, 1, 1, 1, false, 1, "1", "0-1", "0-1", "0-1",
			"1 packages, 1 dies, 1 L3 clusters, 2 cores, 2 CPUs (no SMT)"},
		{"2s-16c-smt", 64, 32, 2, 2, 2, true, 17, "17,49", "16-31,48-63", "16-31,48-63", "16-31,48-63",
			"2 packages, 2 dies, 2 L3 clusters, 32 cores, 64 CPUs (SMT)"},
		{"epyc-9654", 192, 96, 12, 12, 1, true, 9, "9,105", "8-15,104-111", "8-15,104-111", "0-191",
			"1 packages, 12 dies, 12 L3 clusters, 96 cores, 192 CPUs (SMT)"},
	}
	for _, tt := range tests {
		topo := fixture(t, tt.name)
		counts := []int{len(topo.CPUs()), len(topo.Cores()), len(topo.Dies()), len(topo.Clusters()), len(topo.Packages())}
		want := []int{tt.cpus, tt.cores, tt.dies, tt.clusters, tt.packages}
		if !slices.Equal(counts, want) {
			t.Errorf("%s: cpus/cores/dies/clusters/packages = %v, want %v", tt.name, counts, want)
		}
		if topo.SMT() != tt.smt {
			t.Errorf("%s: SMT() = %v", tt.name, topo.SMT())
		}
		for _, q := range []struct {
			what string
			got  Set
			want string
		}{
			{"SiblingsOf", topo.SiblingsOf(tt.cpu), tt.siblings},
			{"ClusterOf", topo.ClusterOf(tt.cpu), tt.cluster},
			{"DieOf", topo.DieOf(tt.cpu), tt.die},
			{"PackageOf", topo.PackageOf(tt.cpu), tt.pkg},
		} {
			if q.got.String() != q.want {
				t.Errorf("%s: %s(%d) = %s, want %s", tt.name, q.what, tt.cpu, q.got, q.want)
			}
		}
		if s := topo.Summary(); s != tt.summary {
			t.Errorf("%s: Summary() = %q, want %q", tt.name, s, tt.summary)
		}
		t.Logf("%s: %s", tt.name, topo.Summary())
	}
}

func TestLayoutMatchesCapturedVM(t *testing.T) {
	gen, err := Layout{Packages: 1, DiesPerPackage: 1, CoresPerDie: 2, Threads: 1}.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(gen.cpus), fmt.Sprint(fixture(t, "vm2").cpus); got != want {
		t.Fatalf("layout of the VM = %s, captured = %s", got, want)
	}
}

func TestReadTopologyFallbacks(t *testing.T) {
	// An old kernel: no die_id, no core_cpus_list, no cache; CPU 2 offline
	// but named in a sibling list.
	fsys := fstest.MapFS{
		"devices/system/cpu/online":                             {Data: []byte("0-1,3\n")},
		"devices/system/cpu/cpu0/topology/core_id":              {Data: []byte("0\n")},
		"devices/system/cpu/cpu0/topology/thread_siblings_list": {Data: []byte("0,2\n")},
		"devices/system/cpu/cpu1/topology/physical_package_id":  {Data: []byte("1\n")},
		"devices/system/cpu/cpu3/topology/thread_siblings_list": {Data: []byte("1,3\n")},
		"devices/system/cpu/cpu3/topology/physical_package_id":  {Data: []byte("1\n")},
		"devices/system/cpu/cpu3/cache/index0/level":            {Data: []byte("3\n")},
		"devices/system/cpu/cpu3/cache/index0/type":             {Data: []byte("Instruction\n")},
		"devices/system/cpu/cpu3/cache/index0/shared_cpu_list":  {Data: []byte("3\n")},
	}
	topo, err := ReadTopologyFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if got := topo.CPUs().String(); got != "0-1,3" {
		t.Errorf("CPUs = %s", got)
	}
	if got := topo.SiblingsOf(0).String(); got != "0" {
		t.Errorf("offline sibling kept: SiblingsOf(0) = %s", got)
	}
	if got := topo.SiblingsOf(1).String(); got != "1" {
		t.Errorf("missing lists: SiblingsOf(1) = %s, want itself", got)
	}
	if got := topo.ClusterOf(3).String(); got != "1,3" {
		t.Errorf("no L3 (an instruction cache does not count): ClusterOf(3) = %s, want its die 1,3", got)
	}
	if topo.SiblingsOf(2) != nil {
		t.Error("SiblingsOf(offline CPU) not nil")
	}
}

func TestReadTopologyErrors(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"no online":  {},
		"bad online": {"devices/system/cpu/online": {Data: []byte("x")}},
		"empty":      {"devices/system/cpu/online": {Data: []byte("\n")}},
		"bad core_id": {
			"devices/system/cpu/online":                {Data: []byte("0")},
			"devices/system/cpu/cpu0/topology/core_id": {Data: []byte("zero")},
		},
		"bad list": {
			"devices/system/cpu/online":                       {Data: []byte("0")},
			"devices/system/cpu/cpu0/topology/core_cpus_list": {Data: []byte("0-")},
		},
	} {
		if _, err := ReadTopologyFS(fsys); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestReadTopologyHere(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/cpu/online"); err != nil {
		t.Skipf("no sysfs CPU tree here: %v", err)
	}
	topo, err := ReadTopology(DefaultSysRoot)
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if miss := allowed.Minus(topo.CPUs()); len(miss) > 0 {
		t.Errorf("allowed CPUs %s not online per sysfs", miss)
	}
	t.Logf("this machine: %s", topo.Summary())
}

func TestLayoutErrors(t *testing.T) {
	if _, err := (Layout{Packages: 1}).Files(); err == nil {
		t.Error("zero cores accepted")
	}
	if _, err := (Layout{1, 1, MaxCPU, 2, false}).Files(); err == nil {
		t.Error("too many CPUs accepted")
	}
}

func FuzzReadTopology(f *testing.F) {
	f.Add("0-3", "0,2", "0-3", "3", "Unified")
	f.Add("0", "", "", "x", "")
	f.Add("0-1,5", "5-6", "0-7:2", "3", "Data")
	f.Fuzz(func(t *testing.T, online, siblings, l3, level, typ string) {
		fsys := fstest.MapFS{"devices/system/cpu/online": {Data: []byte(online)}}
		for _, c := range []string{"0", "1", "5"} {
			d := "devices/system/cpu/cpu" + c
			fsys[d+"/topology/core_cpus_list"] = &fstest.MapFile{Data: []byte(siblings)}
			fsys[d+"/cache/index3/level"] = &fstest.MapFile{Data: []byte(level)}
			fsys[d+"/cache/index3/type"] = &fstest.MapFile{Data: []byte(typ)}
			fsys[d+"/cache/index3/shared_cpu_list"] = &fstest.MapFile{Data: []byte(l3)}
		}
		topo, err := ReadTopologyFS(fsys)
		if err != nil {
			return
		}
		n := 0
		for _, core := range topo.Cores() {
			n += len(core)
		}
		if n != len(topo.CPUs()) {
			t.Fatalf("cores cover %d CPUs of %d", n, len(topo.CPUs()))
		}
		for _, c := range topo.CPUs() {
			if !topo.SiblingsOf(c).Contains(c) || !topo.ClusterOf(c).Contains(c) {
				t.Fatalf("CPU %d not in its own core or cluster", c)
			}
		}
	})
}
