package machine

import (
	"slices"
	"testing"
	"time"
)

// Samples bunched at the start: the tenths are cut by time, not by count.
// 20 samples, ten 1 ms apart (0-9 ms), then ten 100 ms apart (109-1,009
// ms): tenth k ends at 100.9·k ms, so at the first sample at or past it,
// index 9+k (9 + 100·k ms); none of the first ten ends a tenth.
func TestTenthEndsCutsByTime(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(i int) time.Time {
		if i < 10 {
			return t0.Add(time.Duration(i) * time.Millisecond)
		}
		return t0.Add(9*time.Millisecond + time.Duration(i-9)*100*time.Millisecond)
	}
	got := TenthEnds(20, at)
	want := []int{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}
	if !slices.Equal(got, want) {
		t.Errorf("TenthEnds = %v, want %v", got, want)
	}
	if TenthEnds(10, at) != nil {
		t.Error("10 samples gave tenths")
	}
}

// Periodic keeps what read returns with ok, in order, and makes a call at
// the start and at Stop.
func TestPeriodicKeepsOKSamples(t *testing.T) {
	n := 0
	p := StartPeriodic(time.Hour, func() (int, bool) { n++; return n, n != 1 })
	if got := p.Stop(); !slices.Equal(got, []int{2}) {
		t.Errorf("samples %v, want [2]: the first call's refused, Stop's kept", got)
	}
}
