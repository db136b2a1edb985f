//go:build amd64 || arm64

package carrier

// haveGetg says getg is implemented (in assembly) on this architecture.
const haveGetg = true

// getg returns the address of the calling goroutine's runtime descriptor:
// unique among the goroutines alive, and the same for the whole life of
// one. It identifies the caller in one instruction, where a thread id
// costs a system call (gettid) and a goroutine id a stack trace.
func getg() uintptr
