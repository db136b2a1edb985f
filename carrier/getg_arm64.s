#include "textflag.h"

// func getg() uintptr
TEXT ·getg(SB), NOSPLIT, $0-8
	MOVD g, R0
	MOVD R0, ret+0(FP)
	RET

// func getm() uintptr: the g's m field (runtime.g.m, at offset 48; see
// getg_amd64.s).
TEXT ·getm(SB), NOSPLIT, $0-8
	MOVD 48(g), R0
	MOVD R0, ret+0(FP)
	RET

// func gstatus(gp uintptr) uint32: goroutine gp's runtime status
// (runtime.g.atomicstatus, at offset 144; see getg_amd64.s), a load-acquire.
TEXT ·gstatus(SB), NOSPLIT, $0-12
	MOVD gp+0(FP), R0
	ADD $144, R0
	LDARW (R0), R1
	MOVW R1, ret+8(FP)
	RET

// func glockedm(gp uintptr) uintptr: the M goroutine gp is locked to
// (runtime.g.lockedm, at offset 208; see getg_amd64.s), 0 when unlocked.
TEXT ·glockedm(SB), NOSPLIT, $0-16
	MOVD gp+0(FP), R0
	MOVD 208(R0), R0
	MOVD R0, ret+8(FP)
	RET

// func gbyte(gp, off uintptr) uint8: the byte at offset off of goroutine
// gp's runtime descriptor (see getg_amd64.s).
TEXT ·gbyte(SB), NOSPLIT, $0-17
	MOVD gp+0(FP), R0
	MOVD off+8(FP), R1
	MOVBU (R0)(R1), R0
	MOVB R0, ret+16(FP)
	RET
