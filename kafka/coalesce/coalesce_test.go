package coalesce

import (
	"testing"
	"time"
)

// rule is the broker's default: Max 1 ms, so Gather 125 µs, MinBytes 2048,
// MaxBytes 32,768, Enter 4.
var rule = Rule{Max: time.Millisecond}.Defaults()

func TestDefaults(t *testing.T) {
	if rule.Gather != 125*time.Microsecond || rule.MinBytes != 2048 || rule.MaxBytes != 32<<10 || rule.Enter != 4 {
		t.Fatalf("Defaults() = %+v", rule)
	}
}

// While off, Enter sleeps in a row shorter than Gather/8 (15.625 µs) turn
// coalescing on at MinBytes; a longer sleep starts the count again.
func TestEnterAfterShortSleepsInARow(t *testing.T) {
	short := Sleep{Mark: Off, Slept: 10 * time.Microsecond, Bytes: 227}
	long := Sleep{Mark: Off, Slept: 20 * time.Microsecond, Bytes: 227}
	var st State
	for i, s := range []Sleep{short, short, short, long, short, short, short} {
		st = rule.Step(st, s)
		if st.Mark != Off {
			t.Fatalf("after sleep %d: mark %d, want off", i, st.Mark)
		}
	}
	if st = rule.Step(st, short); st.Mark != 2048 {
		t.Fatalf("after the fourth short sleep in a row: mark %d, want MinBytes 2048", st.Mark)
	}
}

// While on, the mark follows the rate the sleep saw: bytes / slept ·
// Gather, at most doubled or halved in one step.
func TestMarkFollowsRate(t *testing.T) {
	for _, c := range []struct {
		name       string
		mark       int
		s          Sleep
		want       int
		arithmetic string
	}{
		{"on target", 4096, Sleep{Slept: 125 * time.Microsecond, Bytes: 4096}, 4096,
			"4096 B / 125 µs · 125 µs = 4096"},
		{"faster: grows", 4096, Sleep{Slept: 100 * time.Microsecond, Bytes: 4800}, 6000,
			"4800 B / 100 µs · 125 µs = 6000"},
		{"much faster: doubles at most", 4096, Sleep{Slept: 10 * time.Microsecond, Bytes: 4096}, 8192,
			"4096 / 10 · 125 = 51,200 > 2 · 4096"},
		{"bytes already there: doubles", 4096, Sleep{Slept: 0, Bytes: 300}, 8192,
			"300 B / 1 µs (slept rounds up to 1 µs) · 125 µs = 37,500 > 2 · 4096"},
		{"slower: halves at most", 8192, Sleep{Slept: 1000 * time.Microsecond, Bytes: 8192}, 4096,
			"8192 / 1000 · 125 = 1024 < 8192 / 2"},
		{"capped at MaxBytes", 32768, Sleep{Slept: 50 * time.Microsecond, Bytes: 32768}, 32768,
			"2 · 32768 = 65,536 > MaxBytes 32,768"},
		{"halved below MinBytes: off", 3000, Sleep{Slept: 1000 * time.Microsecond, Bytes: 3000}, Off,
			"3000 / 1000 · 125 = 375 → halved to 1500 < MinBytes 2048"},
	} {
		c.s.Mark = c.mark
		if got := rule.Step(State{Mark: c.mark}, c.s).Mark; got != c.want {
			t.Errorf("%s: Step(mark %d, %+v) = %d, want %d (%s)", c.name, c.mark, c.s, got, c.want, c.arithmetic)
		}
	}
}

// A sleep the deadline ended sets the mark from what came in it, without
// the halving floor: the producer paused, so the next sleep must not wait
// for bytes that may not come.
func TestTimedOutSleep(t *testing.T) {
	// 20,000 B in 1 ms is 2,500 B per 125 µs: still on.
	if got := rule.Step(State{Mark: 32768}, Sleep{Mark: 32768, Slept: time.Millisecond, Bytes: 20000, TimedOut: true}).Mark; got != 2500 {
		t.Fatalf("timed out with 20,000 B in 1 ms: mark %d, want 2500", got)
	}
	// 10,000 B in 1 ms is 1,250 per 125 µs: off, though 32768/2 would be the floor of a woken sleep.
	if got := rule.Step(State{Mark: 32768}, Sleep{Mark: 32768, Slept: time.Millisecond, Bytes: 10000, TimedOut: true}).Mark; got != Off {
		t.Fatalf("timed out with 10,000 B in 1 ms: mark %d, want off", got)
	}
	// Nothing came: off.
	if got := rule.Step(State{Mark: 4096}, Sleep{Mark: 4096, Slept: time.Millisecond, TimedOut: true}).Mark; got != Off {
		t.Fatalf("timed out with nothing: mark %d, want off", got)
	}
}

// The zero Rule (produce.coalesce.max.us=0) never turns on.
func TestZeroRuleIsOff(t *testing.T) {
	var r Rule
	st := State{}
	for range 100 {
		st = r.Step(st, Sleep{Mark: Off, Bytes: 227})
	}
	if st.Mark != Off {
		t.Fatalf("zero rule: mark %d, want off", st.Mark)
	}
}
