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

// func gbyte(gp, off uintptr) uint8: the byte at offset off of goroutine
// gp's runtime descriptor (runtime.g): trackingSeq and waitreason (see
// getg.go for their offsets, each checked at start-up).
TEXT ·gbyte(SB), NOSPLIT, $0-17
	MOVQ gp+0(FP), AX
	ADDQ off+8(FP), AX
	MOVBLZX (AX), AX
	MOVB AX, ret+16(FP)
	RET
