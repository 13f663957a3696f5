package replication

import (
	"reflect"
	"testing"
	"time"
)

// The leader's ISR check (outOfSync), each sentence of the package doc's ISR section as cases, at the edges of
// replica.lag.time.max.ms and replica.lag.max.messages.
func TestOutOfSync(t *testing.T) {
	now := time.Unix(1000, 0)
	const lag = 10 * time.Second
	const leo = 5000
	counts := map[int64]int{4000: 4000, 4100: 3999, 4200: 4001} // messages behind, by follower LEO
	cases := []struct {
		name        string
		f           followerLag
		lagMessages int
		out         bool
	}{
		{"caught up just now", followerLag{1, now, leo}, 4000, false},
		{"not caught up for exactly the lag time: stays", followerLag{1, now.Add(-lag), 4000}, 0, false},
		{"not caught up for a nanosecond more: leaves", followerLag{1, now.Add(-lag - time.Nanosecond), leo}, 0, true},
		{"exactly replica.lag.max.messages behind: stays", followerLag{1, now, 4000}, 4000, false},
		{"one message more behind: leaves", followerLag{1, now, 4200}, 4000, true},
		{"fewer behind: stays", followerLag{1, now, 4100}, 4000, false},
		{"replica.lag.max.messages=0: no count", followerLag{1, now, 4200}, 0, false},
		{"before its first fetch (LEO -1), in time: stays", followerLag{1, now, -1}, 4000, false},
		{"at the leader's end: nothing to count", followerLag{1, now, leo}, 1, false},
	}
	for _, c := range cases {
		asked := false
		got := outOfSync(now, leo, []followerLag{c.f}, lag, c.lagMessages, func(from int64) int {
			asked = true
			n, ok := counts[from]
			if !ok {
				t.Fatalf("%s: counted from %d", c.name, from)
			}
			return n
		})
		if (len(got) == 1) != c.out {
			t.Errorf("%s: out of sync %v, want %v", c.name, got, c.out)
		}
		if asked && (c.lagMessages == 0 || c.f.leo >= leo || c.f.leo < 0) {
			t.Errorf("%s: counted messages where the rule needs no count", c.name)
		}
	}
	// Several at once, in order: the slow one and the one too far behind leave.
	fs := []followerLag{{1, now, leo}, {2, now.Add(-time.Minute), leo}, {3, now, 4200}}
	if got := outOfSync(now, leo, fs, lag, 4000, func(from int64) int { return counts[from] }); !reflect.DeepEqual(got, []int32{2, 3}) {
		t.Errorf("three followers: %v out, want [2 3]", got)
	}
}

// A follower's fetch (fetchedAt): when it counts as caught up, and when it rejoins the ISR.
func TestFetchedAt(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0.Add(2 * time.Second)
	prev := follower{leo: 3000, lastFetchLEO: 4000, lastFetch: t0, caughtUp: t0.Add(-time.Minute)}
	cases := []struct {
		name              string
		f                 follower
		offset, leo, hw   int64
		inISR             bool
		caughtUp          time.Time
		rejoin            bool
		lastFetchLEOAfter int64
	}{
		{"at the leader's end: caught up now, rejoins", prev, 5000, 5000, 4000, false, now, true, 5000},
		{"reached the end of the previous fetch: caught up then, rejoins", prev, 4000, 5000, 4000, false, t0, true, 5000},
		{"caught up but short of the high watermark: does not rejoin yet", prev, 4000, 5000, 4500, false, t0, false, 5000},
		{"behind the previous fetch's end: not caught up", prev, 3500, 5000, 3000, false, prev.caughtUp, false, 5000},
		{"already in the ISR: nothing to rejoin", prev, 5000, 5000, 4000, true, now, false, 5000},
		{"first fetch (no previous end), behind: not caught up", follower{leo: -1, lastFetchLEO: -1, caughtUp: t0}, 0, 5000, 0, false, t0, false, 5000},
	}
	for _, c := range cases {
		got, rejoin := c.f.fetchedAt(now, c.offset, c.leo, c.hw, c.inISR, true)
		if !got.caughtUp.Equal(c.caughtUp) || rejoin != c.rejoin || got.leo != c.offset || got.lastFetchLEO != c.lastFetchLEOAfter || !got.lastFetch.Equal(now) {
			t.Errorf("%s: %+v rejoin %v; want caught up at %v, rejoin %v, leo %d, last fetch LEO %d at %v",
				c.name, got, rejoin, c.caughtUp, c.rejoin, c.offset, c.lastFetchLEOAfter, now)
		}
	}
	// A fetch recorded as it arrives, before the leader holds it (not answering): the previous fetch's end
	// stays what the next one is measured against.
	got, _ := prev.fetchedAt(now, 3500, 5000, 0, true, false)
	if got.lastFetchLEO != prev.lastFetchLEO || !got.lastFetch.Equal(prev.lastFetch) {
		t.Errorf("a fetch not answered yet moved the previous fetch's end: %+v", got)
	}
}
