// Package cpu describes the processors spindle runs on: CPU lists in the
// kernel's "0-3,8" syntax, the sysfs topology (SMT siblings, dies, L3
// clusters, packages), the process's affinity, the CPUID capabilities that
// matter for waiting, and the placement of threads onto CPUs.
//
// # Topology
//
// ReadTopology(DefaultSysRoot) reads /sys/devices/system/cpu; tests pass
// another root, or a file system to ReadTopologyFS. A Topology answers
// CPUs, Cores (SMT sibling groups), Dies, Clusters (CPUs sharing an L3),
// Packages, and per CPU SiblingsOf, ClusterOf, DieOf and PackageOf. Layout
// generates the sysfs files of a regular machine (packages x dies x cores x
// threads, Linux's numbering) so that placements can be planned and tested
// for machines one is not on; testdata holds a two-socket SMT Xeon, a
// 12-CCD EPYC 9654 and the files captured from the 2-CPU development VM.
//
// # Placement
//
// PlanCarriers maps carriers to CPUs: one CPU each (PinCPU) or one core
// each, leaving SMT siblings idle (PinCore), optionally reserving the first
// CPU or core for everything that is not a carrier ("N+1"). It fails with
// ErrTooFewCPUs when the allowed CPUs cannot hold the request.
// Topology.Place picks CPUs for the waiting-spectrum suite's foreground and
// background threads: on SMT siblings (SameCore), other cores of one die
// (SameDie), another die or package (OtherDie), or the foreground Alone; a
// placement the machine lacks fails with an error wrapping ErrNotSupported
// that begins "skipped: topology".
//
// # Capabilities
//
// Capabilities runs CPUID (Go assembly on amd64; elsewhere it reports
// nothing, with a note): vendor, brand string, PAUSE, WAITPKG
// (TPAUSE/UMWAIT), MONITORX/MWAITX, AVX-512F with OS support (XCR0), and
// the invariant TSC.
package cpu
