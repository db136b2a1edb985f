#include "textflag.h"

// func getg() uintptr
TEXT ·getg(SB), NOSPLIT, $0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET

// func getm() uintptr: the g's m field (runtime.g.m, at offset 48: after
// stack (16), stackguard0, stackguard1, _panic and _defer; "offset known
// to arm liblink"). Checked at start-up against the thread ids (mOK).
TEXT ·getm(SB), NOSPLIT, $0-8
	MOVQ (TLS), AX
	MOVQ 48(AX), AX
	MOVQ AX, ret+0(FP)
	RET

// func gstatus(gp uintptr) uint32: goroutine gp's runtime status
// (runtime.g.atomicstatus, at offset 144: after m, sched (a gobuf, 48),
// syscallsp, syscallpc, syscallbp, stktopsp and param), an aligned 32-bit
// load, atomic on amd64. Checked at start-up (statusOK).
TEXT ·gstatus(SB), NOSPLIT, $0-12
	MOVQ gp+0(FP), AX
	MOVL 144(AX), AX
	MOVL AX, ret+8(FP)
	RET

// func glockedm(gp uintptr) uintptr: the M goroutine gp is locked to
// (runtime.g.lockedm, at offset 208: after atomicstatus, stackLock, goid,
// schedlink, waitsince, waitreason, eleven flags, raceignore,
// nocgocallback, tracking, trackingSeq, trackingStamp and runnableTime), 0
// when it is not locked. Checked at start-up (lockedOK).
TEXT ·glockedm(SB), NOSPLIT, $0-16
	MOVQ gp+0(FP), AX
	MOVQ 208(AX), AX
	MOVQ AX, ret+8(FP)
	RET

// func gtrackseq(gp uintptr) uint8: goroutine gp's runtime.g.trackingSeq
// (at offset 191: after waitreason at 176, eleven flags, raceignore,
// nocgocallback and tracking), which the runtime's casgstatus adds one to
// each time gp leaves running for waiting or runnable (parked the Go way,
// or preempted), and which a coroutine switch (a direct CAS) leaves alone.
// Checked at start-up (seqOK).
TEXT ·gtrackseq(SB), NOSPLIT, $0-9
	MOVQ gp+0(FP), AX
	MOVBLZX 191(AX), AX
	MOVB AX, ret+8(FP)
	RET

// func gwaitreason(gp uintptr) uint8: goroutine gp's runtime.g.waitreason
// (at offset 176: after atomicstatus, stackLock, goid, schedlink and
// waitsince), why it waits while its status is waiting. Checked at
// start-up (reasonOK).
TEXT ·gwaitreason(SB), NOSPLIT, $0-9
	MOVQ gp+0(FP), AX
	MOVBLZX 176(AX), AX
	MOVB AX, ret+8(FP)
	RET
