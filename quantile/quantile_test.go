package quantile

import (
	"math"
	"testing"
)

func TestOf(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name string
		in   []float64
		want Summary
	}{
		{"empty", nil, Summary{}},
		{"only NaN", []float64{nan, nan}, Summary{}},
		{"one", []float64{4}, Summary{Median: 4, Min: 4, Max: 4, N: 1}},
		{"odd", []float64{3, 1, 2}, Summary{Median: 2, Min: 1, Max: 3, N: 3}},
		{"even: mean of the middle two", []float64{1, 4, 10, 2}, Summary{Median: 3, Min: 1, Max: 10, N: 4}},
		{"NaN skipped", []float64{nan, 5, 1, nan, 3}, Summary{Median: 3, Min: 1, Max: 5, N: 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := append([]float64(nil), c.in...)
			if got := Of(c.in); got != c.want {
				t.Errorf("Of(%v) = %+v, want %+v", in, got, c.want)
			}
			for i := range in { // the caller's slice is left as it was
				if in[i] != c.in[i] && !(math.IsNaN(in[i]) && math.IsNaN(c.in[i])) {
					t.Fatalf("Of reordered its input: %v, was %v", c.in, in)
				}
			}
		})
	}
}

func TestMedian(t *testing.T) {
	if got := Median([]float64{2, 8}); got != 5 {
		t.Errorf("Median([2 8]) = %v, want 5", got)
	}
	if got := Median([]float64{math.NaN()}); !math.IsNaN(got) {
		t.Errorf("Median([NaN]) = %v, want NaN", got)
	}
}

func TestNearestRank(t *testing.T) {
	ten := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		sorted []int64
		p      float64
		want   int64
	}{
		{nil, 50, 0},
		{ten, 0, 1},
		{ten, 10, 1},
		{ten, 11, 2},
		{ten, 50, 5},
		{ten, 99, 10},
		{ten, 100, 10},
		{[]int64{1, 2, 3, 4}, 50, 2},
		{[]int64{7}, 99.9, 7},
	} {
		if got := NearestRank(c.sorted, c.p); got != c.want {
			t.Errorf("NearestRank(%v, %v) = %d, want %d", c.sorted, c.p, got, c.want)
		}
	}
	if got := NearestRank([]float64{0.5, 1.5}, 100); got != 1.5 {
		t.Errorf("NearestRank(floats, 100) = %v, want 1.5", got)
	}
}
