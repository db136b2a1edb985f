package spectrum

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// naive is the reference: plain float64 sums, exact for integer matrices.
func naive(a, b *Matrix) *Matrix {
	var c Matrix
	for i := 0; i < N; i++ {
		for j := 0; j < N; j++ {
			var s float64
			for k := 0; k < N; k++ {
				s += float64(a[i*N+k]) * float64(b[k*N+j])
			}
			c[i*N+j] = float32(s)
		}
	}
	return &c
}

func TestKernelsAgreeExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	avx, err := AVX512()
	if errors.Is(err, ErrNotSupported) {
		t.Logf("avx512 kernel not compared: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	for trial := 0; trial < 200; trial++ {
		a, b := RandomIntMatrix(rng), RandomIntMatrix(rng)
		want := naive(a, b)
		var got Matrix
		Scalar.Mul(&got, a, b)
		if got != *want {
			t.Fatalf("trial %d: scalar differs from the reference", trial)
		}
		if avx.Mul == nil {
			continue
		}
		var v Matrix
		avx.Mul(&v, a, b)
		if v != got {
			for i := range v {
				if v[i] != got[i] {
					t.Fatalf("trial %d: element %d: avx512 %v, scalar %v", trial, i, v[i], got[i])
				}
			}
		}
	}
	if avx.Mul == nil {
		t.Skipf("scalar checked against the reference; avx512 comparison skipped: %v", err)
	}
}

// TestKernelsAgreeOnRealValues: with non-integer inputs both kernels still
// perform the same fused operations in the same order; the scalar kernel
// rounds each step through float64 first, which can differ from a single
// float32 rounding in rare ties, so this is a report, not a requirement.
func TestKernelsAgreeOnRealValues(t *testing.T) {
	avx, err := AVX512()
	if err != nil {
		t.Skipf("no avx512 kernel: %v", err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b Matrix
	diff := 0
	for trial := 0; trial < 100; trial++ {
		for i := range a {
			a[i], b[i] = rng.Float32()*2-1, rng.Float32()*2-1
		}
		var s, v Matrix
		Scalar.Mul(&s, &a, &b)
		avx.Mul(&v, &a, &b)
		for i := range s {
			if s[i] != v[i] {
				diff++
			}
		}
	}
	t.Logf("%d of %d elements differ on real-valued inputs", diff, 100*N*N)
	if diff > 100*N*N/100 {
		t.Errorf("%d elements differ: the kernels no longer share an operation order", diff)
	}
}

func TestKernelByName(t *testing.T) {
	if k, err := KernelByName("scalar"); err != nil || k.Name != "scalar" {
		t.Fatalf("scalar: %v %v", k.Name, err)
	}
	if _, err := KernelByName("sse"); err == nil {
		t.Fatal("sse: want an error")
	}
	if len(Kernels()) == 0 || Kernels()[0].Name != "scalar" {
		t.Fatal("Kernels must start with scalar")
	}
}

func BenchmarkKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := RandomIntMatrix(rng), RandomIntMatrix(rng)
	for _, k := range Kernels() {
		b.Run(k.Name, func(b *testing.B) {
			b.ReportAllocs()
			var dst Matrix
			for b.Loop() {
				k.Mul(&dst, x, y)
			}
		})
	}
}
