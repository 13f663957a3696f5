package main

import "testing"

// Three rounds of batch 1, ours over the probe: 837,018 / 901,790 =
// 0.928, 610,928 / 979,619 = 0.624, 713,513 / 940,480 = 0.759, each to two
// places; a round whose probe measured nothing prints "-".
func TestRoundByRound(t *testing.T) {
	if got, want := roundByRound([]float64{901790, 979619, 940480}, []float64{837018, 610928, 713513}), "0.93 0.62 0.76"; got != want {
		t.Errorf("roundByRound = %q, want %q", got, want)
	}
	if got, want := roundByRound([]float64{0, 100}, []float64{50, 150}), "- 1.50"; got != want {
		t.Errorf("roundByRound = %q, want %q", got, want)
	}
	if got := roundByRound(nil, nil); got != "" {
		t.Errorf("no rounds: %q, want empty", got)
	}
}
