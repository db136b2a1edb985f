package spectrum

import (
	"errors"
	"github.com/spindle-lab/spindle/carrier/wait"
	"math"
	"math/rand/v2"
)

// N is the side of the foreground's matrices: the paper multiplies 16x16
// float32 matrices, which fit one AVX-512 register per row.
const N = 16

// Matrix is a row-major 16x16 float32 matrix (1 KiB, cache resident).
type Matrix [N * N]float32

// ErrNotSupported is wrapped when this machine cannot run something (a
// kernel, a mode); the message says why. It is carrier/wait's sentinel, so
// one errors.Is covers the wait strategies too.
var ErrNotSupported = wait.ErrNotSupported

// Kernel multiplies two matrices: dst = a × b. One call is one "op" in the
// Mop/s figures.
type Kernel struct {
	// Name is the kernel's flag name: scalar or avx512.
	Name string
	// Mul computes dst = a × b; dst must not alias a or b.
	Mul func(dst, a, b *Matrix)
}

// Scalar is the portable kernel. For each element it accumulates the
// products a[i][k]·b[k][j] for k = 0..15, in that order, with one fused
// multiply-add each, starting from zero: the same operation order as the
// AVX-512 kernel, so on the integer-valued matrices the benchmark uses (every
// product and partial sum exact in float32) both give identical results.
var Scalar = Kernel{Name: "scalar", Mul: mulScalar}

func mulScalar(dst, a, b *Matrix) {
	for i := 0; i < N; i++ {
		row := a[i*N : i*N+N : i*N+N]
		var acc [N]float64
		for k, aik := range row {
			x := float64(aik)
			bk := b[k*N : k*N+N : k*N+N]
			for j := range acc {
				acc[j] = float64(float32(math.FMA(x, float64(bk[j]), acc[j])))
			}
		}
		for j, v := range acc {
			dst[i*N+j] = float32(v)
		}
	}
}

// Kernels returns the kernels this machine can run: scalar always, avx512
// where CPUID reports AVX-512F and the OS saves the ZMM state.
func Kernels() []Kernel {
	if k, err := AVX512(); err == nil {
		return []Kernel{Scalar, k}
	}
	return []Kernel{Scalar}
}

// KernelByName returns the named kernel or an error wrapping ErrNotSupported
// (avx512 on a machine without it) or naming the valid choices.
func KernelByName(name string) (Kernel, error) {
	switch name {
	case "scalar":
		return Scalar, nil
	case "avx512":
		return AVX512()
	}
	return Kernel{}, errors.New("unknown kernel " + name + " (want scalar or avx512)")
}

// RandomIntMatrix fills a matrix with small integers in [-8, 8] from rng.
// Products are at most 64 and a row of 16 sums to at most 1024 in magnitude,
// all exact in float32, so every kernel's result is exact and equal.
func RandomIntMatrix(rng *rand.Rand) *Matrix {
	var m Matrix
	for i := range m {
		m[i] = float32(rng.IntN(17) - 8)
	}
	return &m
}
