#include "textflag.h"

// func pause()
TEXT ·pause(SB), NOSPLIT|NOFRAME, $0-0
	PAUSE
	RET

// func pauseN(n uint64)
TEXT ·pauseN(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	TESTQ CX, CX
	JZ done
loop:
	PAUSE
	DECQ CX
	JNZ loop
done:
	RET

// func rdtsc() uint64
TEXT ·rdtsc(SB), NOSPLIT, $0-8
	RDTSC
	SHLQ $32, DX
	ORQ DX, AX
	MOVQ AX, ret+0(FP)
	RET

// func tpause(deadline uint64, ctl uint32) bool
// TPAUSE waits until the TSC reaches EDX:EAX; ECX bit 0 picks C0.1 (1) or
// C0.2 (0). CF is set when the OS limit (IA32_UMWAIT_CONTROL) ended it.
TEXT ·tpause(SB), NOSPLIT, $0-17
	MOVQ deadline+0(FP), AX
	MOVQ AX, DX
	SHRQ $32, DX
	MOVL ctl+8(FP), CX
	TPAUSE CX
	SETCS ret+16(FP)
	RET

// func umonitor(addr *uint32)
// UMONITOR arms address monitoring on the cache line holding addr.
TEXT ·umonitor(SB), NOSPLIT, $0-8
	MOVQ addr+0(FP), AX
	UMONITOR AX
	RET

// func umwait(deadline uint64, ctl uint32) bool
// UMWAIT waits until the monitored line is written or the TSC reaches
// EDX:EAX; ECX as for TPAUSE. CF is set when the OS limit ended it.
TEXT ·umwait(SB), NOSPLIT, $0-17
	MOVQ deadline+0(FP), AX
	MOVQ AX, DX
	SHRQ $32, DX
	MOVL ctl+8(FP), CX
	UMWAIT CX
	SETCS ret+16(FP)
	RET
