// Package stats holds the one summary of repeated measurements the
// project's tools share: the median, which a single slow or fast round on
// a shared machine cannot move (rounds of the same measurement on the
// development VM differ by a third: the turns of any REPORT.md's ceiling).
package stats

import "slices"

// Median is the middle value of xs (the mean of the two middle ones when
// there is an even number), and 0 for none. xs is not changed.
func Median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
