package wait

import (
	"sync/atomic"
	"unsafe"
)

// unsafePointer exposes an atomic word's address for UMONITOR.
func unsafePointer(u *atomic.Uint32) unsafe.Pointer { return unsafe.Pointer(u) }
