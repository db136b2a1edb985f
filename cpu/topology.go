package cpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// DefaultSysRoot is where sysfs is mounted; ReadTopology takes another root
// so tests and captured machines can stand in for it.
const DefaultSysRoot = "/sys"

// cpuDir is the CPU subtree of sysfs, relative to its root.
const cpuDir = "devices/system/cpu"

// ErrNotSupported is the sentinel for what this machine cannot do: wrapped
// by placements the topology cannot provide (no SMT siblings, a single die;
// the message starts "skipped: topology"), and, as wait.ErrNotSupported, by
// wait strategies the CPU or kernel cannot run.
var ErrNotSupported = errors.New("not supported")

// Info describes one online logical CPU as sysfs reports it.
type Info struct {
	ID      int // logical CPU number
	Core    int // core_id: unique within a package only
	Die     int // die_id: unique within a package only (0 when unreported)
	Package int // physical_package_id
	// Siblings are the SMT threads of its core, itself included
	// (core_cpus_list, or thread_siblings_list on older kernels).
	Siblings Set
	// L3 are the CPUs sharing its last-level (level 3) cache; nil when
	// sysfs reports no L3, in which case its die stands in for it.
	L3 Set
}

// Topology is the set of online CPUs with their cores, dies, L3 clusters and
// packages. Its methods return fresh slices the caller may keep.
type Topology struct {
	cpus []Info // ascending by ID
}

// ReadTopology reads the topology under sysRoot (DefaultSysRoot in
// production: it reads sysRoot/devices/system/cpu).
func ReadTopology(sysRoot string) (*Topology, error) {
	return ReadTopologyFS(os.DirFS(sysRoot))
}

// ReadTopologyFS reads the topology from a file system rooted where sysfs
// is (holding devices/system/cpu). Only the online CPUs are described; files
// an older kernel lacks fall back as Info documents.
func ReadTopologyFS(fsys fs.FS) (*Topology, error) {
	online, err := readList(fsys, path.Join(cpuDir, "online"))
	if err != nil {
		return nil, fmt.Errorf("read topology: %w", err)
	}
	if len(online) == 0 {
		return nil, fmt.Errorf("read topology: no online CPUs")
	}
	t := &Topology{cpus: make([]Info, 0, len(online))}
	for _, c := range online {
		in, err := readInfo(fsys, c, online)
		if err != nil {
			return nil, fmt.Errorf("read topology: %w", err)
		}
		t.cpus = append(t.cpus, in)
	}
	return t, nil
}

func readInfo(fsys fs.FS, c int, online Set) (Info, error) {
	dir := path.Join(cpuDir, "cpu"+strconv.Itoa(c))
	in := Info{ID: c, Core: c}
	for _, f := range []struct {
		name string
		dst  *int
	}{
		{"core_id", &in.Core},
		{"die_id", &in.Die},
		{"physical_package_id", &in.Package},
	} {
		v, err := readInt(fsys, path.Join(dir, "topology", f.name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return in, err
		default:
			*f.dst = v
		}
	}
	for _, name := range []string{"core_cpus_list", "thread_siblings_list"} {
		s, err := readList(fsys, path.Join(dir, "topology", name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return in, err
		}
		in.Siblings = s.Intersect(online)
		break
	}
	if !in.Siblings.Contains(c) {
		in.Siblings = Set{c}
	}
	l3, err := readL3(fsys, dir)
	if err != nil {
		return in, err
	}
	if l3 != nil {
		in.L3 = l3.Intersect(online)
	}
	return in, nil
}

// readL3 finds the level-3 data or unified cache among cpuN/cache/index* and
// returns its shared_cpu_list; nil when there is none.
func readL3(fsys fs.FS, dir string) (Set, error) {
	ents, err := fs.ReadDir(fsys, path.Join(dir, "cache"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "index") {
			continue
		}
		idx := path.Join(dir, "cache", e.Name())
		level, err := readInt(fsys, path.Join(idx, "level"))
		if err != nil || level != 3 {
			continue
		}
		typ, err := fs.ReadFile(fsys, path.Join(idx, "type"))
		if err != nil || strings.TrimSpace(string(typ)) == "Instruction" {
			continue
		}
		return readList(fsys, path.Join(idx, "shared_cpu_list"))
	}
	return nil, nil
}

func readInt(fsys fs.FS, name string) (int, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

func readList(fsys fs.FS, name string) (Set, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	s, err := ParseList(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// CPUs returns the online CPUs.
func (t *Topology) CPUs() Set {
	out := make(Set, len(t.cpus))
	for i, in := range t.cpus {
		out[i] = in.ID
	}
	return out
}

// Info returns what the topology knows about cpu.
func (t *Topology) Info(cpu int) (Info, bool) {
	i, ok := slices.BinarySearchFunc(t.cpus, cpu, func(in Info, c int) int { return in.ID - c })
	if !ok {
		return Info{}, false
	}
	return t.cpus[i], true
}

// group partitions the CPUs by key, ordered by each group's first CPU.
func (t *Topology) group(key func(Info) string) []Set {
	var out []Set
	idx := map[string]int{}
	for _, in := range t.cpus {
		k := key(in)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Set{})
		}
		out[i] = append(out[i], in.ID)
	}
	return out
}

func dieKey(in Info) string { return strconv.Itoa(in.Package) + "/" + strconv.Itoa(in.Die) }

func clusterKey(in Info) string {
	if in.L3 == nil {
		return "die " + dieKey(in)
	}
	return in.L3.String()
}

// Cores returns the SMT sibling groups: one set per physical core.
func (t *Topology) Cores() []Set {
	return t.group(func(in Info) string { return in.Siblings.String() })
}

// Dies returns the CPUs of each die (package and die_id).
func (t *Topology) Dies() []Set { return t.group(dieKey) }

// Clusters returns the CPUs sharing each L3 cache; CPUs whose L3 sysfs does
// not report are grouped by die.
func (t *Topology) Clusters() []Set { return t.group(clusterKey) }

// Packages returns the CPUs of each physical package (socket).
func (t *Topology) Packages() []Set {
	return t.group(func(in Info) string { return strconv.Itoa(in.Package) })
}

// SMT reports whether any core has more than one online thread.
func (t *Topology) SMT() bool {
	for _, in := range t.cpus {
		if len(in.Siblings) > 1 {
			return true
		}
	}
	return false
}

// SiblingsOf returns the SMT threads of cpu's core, cpu included; nil for a
// CPU the topology does not know.
func (t *Topology) SiblingsOf(cpu int) Set {
	in, ok := t.Info(cpu)
	if !ok {
		return nil
	}
	return slices.Clone(in.Siblings)
}

// ClusterOf returns the CPUs sharing cpu's L3 cache (its die when sysfs
// reports no L3); nil for a CPU the topology does not know.
func (t *Topology) ClusterOf(cpu int) Set { return t.setOf(cpu, clusterKey) }

// DieOf returns the CPUs of cpu's die; nil for an unknown CPU.
func (t *Topology) DieOf(cpu int) Set { return t.setOf(cpu, dieKey) }

// PackageOf returns the CPUs of cpu's package; nil for an unknown CPU.
func (t *Topology) PackageOf(cpu int) Set {
	return t.setOf(cpu, func(in Info) string { return strconv.Itoa(in.Package) })
}

func (t *Topology) setOf(cpu int, key func(Info) string) Set {
	in, ok := t.Info(cpu)
	if !ok {
		return nil
	}
	k := key(in)
	var out Set
	for _, o := range t.cpus {
		if key(o) == k {
			out = append(out, o.ID)
		}
	}
	return out
}

// Summary is the topology in one line: "2 packages, 2 dies, 2 L3 clusters,
// 32 cores, 64 CPUs (SMT)".
func (t *Topology) Summary() string {
	smt := "no SMT"
	if t.SMT() {
		smt = "SMT"
	}
	return fmt.Sprintf("%d packages, %d dies, %d L3 clusters, %d cores, %d CPUs (%s)",
		len(t.Packages()), len(t.Dies()), len(t.Clusters()), len(t.Cores()), len(t.cpus), smt)
}
