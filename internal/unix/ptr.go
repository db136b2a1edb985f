package unix

import "unsafe"

// bytesPtr returns the address of b's first byte for system calls that take a
// C string.
func bytesPtr(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
