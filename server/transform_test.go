package server

import (
	"testing"

	"github.com/spindle-lab/spindle/mock"
)

func TestTransform(t *testing.T) {
	out, err := transform(mock.Body)
	if err != nil || string(out) != wantFruits {
		t.Fatalf("transform: %q, %v", out, err)
	}
	for _, bad := range []string{"", "{", `{"name":"x"}`, `[{"price":"free"}]`} {
		if _, err := transform([]byte(bad)); classify(err).kind != "decode" {
			t.Errorf("transform(%q): %v, want a decode error", bad, err)
		}
	}
}

// BenchmarkTransform is the JSON work of one /fruits request (every mode).
func BenchmarkTransform(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := transform(mock.Body); err != nil {
			b.Fatal(err)
		}
	}
}
