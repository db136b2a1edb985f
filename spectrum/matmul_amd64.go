package spectrum

import (
	"fmt"

	"github.com/spindle-lab/spindle/cpu"
)

// AVX512 returns the AVX-512 kernel, or an error wrapping ErrNotSupported
// when CPUID lacks AVX-512F or the OS does not save the ZMM registers (the
// cpu package's probe checks CPUID and XCR0).
func AVX512() (Kernel, error) {
	if !cpu.Capabilities().AVX512F {
		return Kernel{}, fmt.Errorf("avx512 kernel: %w: CPUID or the OS does not offer AVX-512F", ErrNotSupported)
	}
	return Kernel{Name: "avx512", Mul: mulAVX512}, nil
}

// mulAVX512 is in matmul_amd64.s: rows of b in Z16-Z31, for each row of a
// sixteen VFMADD231PS with a broadcast element, four rows interleaved.
//
//go:noescape
func mulAVX512(dst, a, b *Matrix)
