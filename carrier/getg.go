//go:build amd64 || arm64

package carrier

// haveGetg says getg is implemented (in assembly) on this architecture.
const haveGetg = true

// getg returns the address of the calling goroutine's runtime descriptor:
// unique among the goroutines alive, and the same for the whole life of
// one. It identifies the caller in one instruction, where a thread id
// costs a system call (gettid) and a goroutine id a stack trace.
func getg() uintptr

// getm returns the address of the runtime's descriptor of the thread (M)
// the caller runs on: the same for as long as the goroutine stays on one
// thread, different on another. It tells the carrier, after a task's run,
// whether the run ended on the thread it began on (a task that blocked the
// Go way may be resumed by the scheduler on another) without a gettid
// system call. mOK says whether it passed its start-up check.
func getm() uintptr

// gstatus returns the runtime status of goroutine gp (a getg value), its
// scan bit included: what the hand-off monitor reads to tell a run that
// blocks the Go way (waiting, or in a system call) from one that computes
// or was preempted. Descriptors are never freed, so a stale gp is safe to
// read. statusOK says whether it passed its start-up check.
func gstatus(gp uintptr) uint32

// glockedm returns the M goroutine gp (a getg value) is locked to, 0 when
// it is not: how a carrier notices a task that called
// runtime.LockOSThread, which would make the runtime throw at the task's
// next coroutine switch. lockedOK says whether it passed its start-up
// check.
func glockedm(gp uintptr) uintptr

// gbyte returns the byte at offset off of goroutine gp's runtime
// descriptor (runtime.g, Go 1.26): one load, for the one-byte fields below.
func gbyte(gp, off uintptr) uint8

// Offsets in runtime.g of the one-byte fields gbyte reads: waitreason
// after atomicstatus (144), stackLock, goid, schedlink and waitsince;
// trackingSeq after waitreason, eleven flags, raceignore, nocgocallback
// and tracking.
const (
	gOffWaitReason  = 176
	gOffTrackingSeq = 191
)

// gtrackseq returns goroutine gp's (a getg value) count, modulo 256, of
// the times it left running for waiting or runnable: parked the Go way (a
// channel, a mutex, a timer, the netpoller) or preempted. A coroutine
// switch does not count, nor a system call, so a task's run that leaves
// it unchanged did not wait the Go way: how the park watch tells a run
// that waited from one that computed (carrier.go, run). seqOK says
// whether it passed its start-up check.
func gtrackseq(gp uintptr) uint8 { return gbyte(gp, gOffTrackingSeq) }

// gwaitreason returns why goroutine gp (a getg value) waits, while its
// status is waiting: the runtime's waitReason (runtime/runtime2.go), whose
// values this runtime's check confirms (reasonOK). The park watch reads it
// to leave alone a task that waits for the runtime itself (a GC assist, a
// stop of the world) or runs a coroutine of its own on its thread.
func gwaitreason(gp uintptr) uint8 { return gbyte(gp, gOffWaitReason) }
