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
