//go:build !amd64

package spectrum

import (
	"fmt"
	"runtime"
)

// AVX512 reports that the AVX-512 kernel exists only on amd64.
func AVX512() (Kernel, error) {
	return Kernel{}, fmt.Errorf("avx512 kernel: %w on %s", ErrNotSupported, runtime.GOARCH)
}
