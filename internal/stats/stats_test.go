package stats

import "testing"

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},      // sorted: 1 2 3
		{[]float64{4, 1, 3, 2}, 2.5}, // sorted: 1 2 3 4, (2+3)/2
		{[]float64{9, 9, 1}, 9},
		{[]float64{1100, 1060, 1090}, 1090}, // perf-check's counts: the middle one
	} {
		in := append([]float64(nil), c.in...)
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("Median changed its input: %v, was %v", c.in, in)
			}
		}
	}
}
