//go:build !amd64 && !arm64

package carrier

// haveGetg says getg is implemented (in assembly) on this architecture:
// not on this one, where TaskFromContext compares thread ids instead.
const haveGetg = false

func getg() uintptr { return 0 }

func getm() uintptr { return 0 }

func gstatus(uintptr) uint32 { return 0 }

func glockedm(uintptr) uintptr { return 0 }

func gtrackseq(uintptr) uint8 { return 0 }

func gwaitreason(uintptr) uint8 { return 0 }
