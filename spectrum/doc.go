// Package spectrum is the waiting-spectrum suite: the microbenchmarks of the
// polling-efficiency paper (shared/seeds/002_*), run on the machine at hand.
//
// A foreground of pinned threads multiplies 16x16 matrices (a scalar Go
// kernel and, where CPUID and the OS allow, an AVX-512 kernel in Go
// assembly; both give identical results). A background of pinned threads
// either computes (matmul, pseudo packets) or polls a shared word (Line)
// with a carrier/wait strategy, optionally flipped busy and idle by a seeded
// burst Driver. A Cell is one such configuration; Plan lists the cells of a
// preset (knee, background, placement, bursty) for a machine's topology,
// marking what the machine cannot run as skipped with the reason; Env.Run
// runs cells interleaved over repeats and summarises each metric as a median
// with min and max, or n/a with the reason. WriteTable, WritePlots and
// Verdicts turn results into the command's tables, PNG figures and the
// adaptive-against-fixed comparison. Probe describes the machine.
//
// Run is the whole experiment behind "spindle spectrum": it probes the
// machine, plans the cells of the RunOptions' presets, measures B between
// the CPUs the waiting happens on, runs the cells and returns a Report,
// which WriteText prints as the command's tables and WriteFiles saves as
// spectrum.json and the plots.
//
// The files follow the parts: compute kernels (matmul*.go, checksum.go,
// packet.go), the runner (cell.go, burst.go, threads.go, line.go,
// blockwake.go), the planner (preset.go, placement.go), the output
// (result.go, table.go, plot.go, verdict.go) and the experiment
// (experiment.go, probe.go).
package spectrum
