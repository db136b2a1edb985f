// Package cpu describes the processors spindle runs on: CPU lists in the
// kernel's "0-3,8" syntax, the sysfs topology (SMT siblings, dies, L3
// clusters, packages), the process's affinity, the CPUID capabilities that
// matter for waiting, and the grouping of CPUs into cores.
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
// # Cores
//
// CoresOf groups allowed CPUs core by core (SMT siblings together, in CPU
// order), the unit its consumers place threads on: carrier plans its
// carriers (Options.Pin, NPlusOne) and spectrum its foreground and
// background threads (spectrum.Place) from it; each consumer owns its own
// placement types.
//
// # Capabilities
//
// Capabilities runs CPUID (Go assembly on amd64; elsewhere it reports
// nothing, with a note): vendor, brand string, PAUSE, WAITPKG
// (TPAUSE/UMWAIT), MONITORX/MWAITX, AVX-512F with OS support (XCR0), and
// the invariant TSC.
package cpu
