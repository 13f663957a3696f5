package coalesce

import (
	"testing"
	"time"
)

// rule is the broker's default: Max 1 ms, so Gather 125 µs and Window 4 ms,
// MinBytes 4096, MaxBytes 32,768.
var rule = Rule{Max: time.Millisecond}.Defaults()

func TestDefaults(t *testing.T) {
	if rule.Gather != 125*time.Microsecond || rule.Window != 4*time.Millisecond ||
		rule.MinBytes != 4096 || rule.MaxBytes != 32<<10 {
		t.Fatalf("Defaults() = %+v", rule)
	}
}

// steps feeds sleeps to the rule from st and returns the state after each.
func steps(st State, sleeps []Sleep) []State {
	out := make([]State, len(sleeps))
	for i, s := range sleeps {
		st = rule.Step(st, s)
		out[i] = st
	}
	return out
}

// repeat is n copies of s.
func repeat(s Sleep, n int) []Sleep {
	out := make([]Sleep, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// flat is a producer flat out: 227-byte requests back to back, 1 µs of
// work and 1 µs of sleep each.
var flat = Sleep{Mark: Off, Awake: time.Microsecond, Slept: time.Microsecond, Bytes: 227}

// While off, a window of at least Window decides: a producer flat out turns
// coalescing on when the window closes, not before, at the rate it saw.
func TestWindowTurnsOnAtItsRate(t *testing.T) {
	got := steps(State{Mark: Off}, repeat(flat, 2000)) // 2000 · 2 µs = 4 ms: the window closes on the last
	for i, st := range got[:1999] {
		if st.Mark != Off {
			t.Fatalf("after sleep %d of a window of 4 ms: mark %d, want off until the window closes", i, st.Mark)
		}
	}
	// 2000 · 227 B = 454,000 B in 4 ms; · 125 µs / 4 ms = 14,187 B.
	if m := got[1999].Mark; m != 14187 {
		t.Fatalf("after 4 ms flat out: mark %d, want 14,187 (454,000 B / 4 ms · 125 µs)", m)
	}
	// Four times as many bytes a sleep: 56,750, capped.
	four := flat
	four.Bytes = 4 * 227
	if m := steps(State{Mark: Off}, repeat(four, 2000))[1999].Mark; m != 32768 {
		t.Fatalf("1,816,000 B in 4 ms: mark %d, want MaxBytes 32,768 (56,750 capped)", m)
	}
}

// pacedBurst is one wake-up of figure 7's producer, 100,000 requests a
// second: the n requests due, back to back, then nothing until its next
// wake-up, period after the burst began (n · 2 µs + 1 µs of work + the
// last sleep).
func pacedBurst(n int, period time.Duration) []Sleep {
	gap := flat
	gap.Slept = period - time.Duration(2*n-1)*time.Microsecond
	return append(repeat(flat, n-1), gap)
}

// pacedRun is 20 ms of figure 7's producer waking every millisecond, then
// one wake-up late (2 ms) and one that catches up (200 requests), then 5 ms
// more: 2,700 requests in 27 ms.
func pacedRun() []Sleep {
	var run []Sleep
	for range 20 {
		run = append(run, pacedBurst(100, time.Millisecond)...)
	}
	run = append(run, pacedBurst(100, 2*time.Millisecond)...)
	run = append(run, pacedBurst(200, time.Millisecond)...)
	for range 5 {
		run = append(run, pacedBurst(100, time.Millisecond)...)
	}
	return run
}

// Figure 7's producer stays off, window after window: within a burst its
// requests come as fast as a producer's flat out, but over a window its
// rate is 22.7 MB/s, 2,837 B per Gather, under MinBytes; the window with
// the late wake-up and the catching up holds 400 requests in 4 ms, the same.
// A window of one bound would have turned it on at the catching up: 200
// requests in 1 ms, 45,400 B · 125 µs / 1 ms = 5,675.
func TestPacedProducerStaysOff(t *testing.T) {
	for i, st := range steps(State{Mark: Off}, pacedRun()) {
		if st.Mark != Off {
			t.Fatalf("after sleep %d of a producer paced at 100,000/s: mark %d, want off (90,800 B / 4 ms · 125 µs = 2,837 < 4,096)", i, st.Mark)
		}
	}
	short := rule
	short.Window = rule.Max
	st, on := State{Mark: Off}, 0
	for _, s := range pacedRun() {
		if st = short.Step(st, s); st.Mark != Off && on == 0 {
			on = st.Mark
		}
	}
	if on != 5675 {
		t.Fatalf("with a window of one bound: first mark %d, want 5,675 at the catching up: the case the window is for", on)
	}
}

// After a sleep the bound ended turns coalescing off, the connection rests
// for a Window before it is watched again, so the burst a client with
// Nagle's algorithm held back during that sleep is not read as its rate.
func TestRestAfterTimedOutSleep(t *testing.T) {
	// Slept 2.2 ms with a mark of 8,192 and got one request: off.
	st := rule.Step(State{Mark: 8192}, Sleep{Mark: 8192, Slept: 2200 * time.Microsecond, Bytes: 227, TimedOut: true})
	if st.Mark != Off || st.hold != rule.Window {
		t.Fatalf("after a sleep the bound ended with 227 B: %+v, want off, resting for %v", st, rule.Window)
	}
	// What the client held back comes at once: 2.2 ms of its requests.
	backlog := Sleep{Mark: Off, Awake: 10 * time.Microsecond, Bytes: 50000}
	var run []Sleep
	run = append(run, backlog)
	for range 8 { // the 4 ms rest, then a 4 ms window of the paced producer
		run = append(run, pacedBurst(100, time.Millisecond)...)
	}
	for i, got := range steps(st, run) {
		if got.Mark != Off {
			t.Fatalf("after sleep %d: mark %d, want off", i, got.Mark)
		}
	}
	// Without the rest the backlog would have been counted: (50,000 +
	// 90,800) B in 4.01 ms · 125 µs = 4,389 ≥ 4,096, on.
	if got := steps(State{Mark: Off}, run)[400].Mark; got != 4389 {
		t.Fatalf("a window that counts the backlog: mark %d, want 4,389: the case the rest is for", got)
	}
}

// A window that closes under MinBytes starts a new one: what the last
// window saw does not count toward the next.
func TestWindowStartsAgain(t *testing.T) {
	st := rule.Step(State{Mark: Off}, Sleep{Mark: Off, Slept: 4 * time.Millisecond, Bytes: 120000}) // 3,750 < 4,096: off
	if st.Mark != Off || st.bytes != 0 || st.window != 0 {
		t.Fatalf("after a window of 120,000 B in 4 ms: %+v, want off with a new window", st)
	}
	st = rule.Step(st, Sleep{Mark: Off, Slept: 2 * time.Millisecond, Bytes: 80000})
	if st.Mark != Off || st.bytes != 80000 || st.window != 2*time.Millisecond {
		t.Fatalf("half a window in: %+v, want off, 80,000 B over 2 ms", st)
	}
	// 160,000 B in 4 ms: 5,000.
	if st = rule.Step(st, Sleep{Mark: Off, Awake: 100 * time.Microsecond, Slept: 1900 * time.Microsecond, Bytes: 80000}); st.Mark != 5000 {
		t.Fatalf("160,000 B in 4 ms: mark %d, want 5,000", st.Mark)
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
		{"halved below MinBytes: off", 6000, Sleep{Slept: 1000 * time.Microsecond, Bytes: 6000}, Off,
			"6000 / 1000 · 125 = 750 → halved to 3000 < MinBytes 4096"},
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
	// 40,000 B in 1 ms is 5,000 B per 125 µs: still on.
	if got := rule.Step(State{Mark: 32768}, Sleep{Mark: 32768, Slept: time.Millisecond, Bytes: 40000, TimedOut: true}).Mark; got != 5000 {
		t.Fatalf("timed out with 40,000 B in 1 ms: mark %d, want 5000", got)
	}
	// 30,000 B in 1 ms is 3,750 per 125 µs: off, though 32768/2 would be the floor of a woken sleep.
	if got := rule.Step(State{Mark: 32768}, Sleep{Mark: 32768, Slept: time.Millisecond, Bytes: 30000, TimedOut: true}).Mark; got != Off {
		t.Fatalf("timed out with 30,000 B in 1 ms: mark %d, want off", got)
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

// A sleep the bound ends right after SteadyRun sleeps in a row that bytes
// ended halves the mark and keeps coalescing on; the next one the bound
// ends before another such run turns it off and rests, as any other.
func TestSteadyProducerKeepsCoalescingOnce(t *testing.T) {
	woken := Sleep{Mark: 16384, Slept: 125 * time.Microsecond, Bytes: 16384} // on target: 16,384 B / 125 µs · 125 µs
	bound := Sleep{Mark: 16384, Slept: time.Millisecond, Bytes: 500, TimedOut: true}
	st := State{Mark: 16384}
	for range SteadyRun {
		st = rule.Step(st, woken)
	}
	if st.Mark != 16384 || st.run != SteadyRun {
		t.Fatalf("after %d sleeps on target: %+v, want mark 16,384 and a run of %d", SteadyRun, st, SteadyRun)
	}
	// 500 B in 1 ms would be 62 B per 125 µs, off; after the run: 16,384 / 2.
	if st = rule.Step(st, bound); st.Mark != 8192 || st.run != 0 || st.hold != 0 {
		t.Fatalf("the bound after a steady run: %+v, want mark 8,192, a new run, no rest", st)
	}
	bound.Mark = 8192
	if st = rule.Step(st, bound); st.Mark != Off || st.hold != rule.Window {
		t.Fatalf("the bound again before another run: %+v, want off, resting for %v", st, rule.Window)
	}

	// One sleep short of the run: off and resting.
	st = State{Mark: 16384}
	for range SteadyRun - 1 {
		st = rule.Step(st, woken)
	}
	bound.Mark = 16384
	if st = rule.Step(st, bound); st.Mark != Off || st.hold != rule.Window {
		t.Fatalf("the bound after %d sleeps bytes ended: %+v, want off, resting", SteadyRun-1, st)
	}

	// The halved mark does not go under MinBytes.
	st = State{Mark: 6000, run: SteadyRun}
	if st = rule.Step(st, Sleep{Mark: 6000, Slept: time.Millisecond, TimedOut: true}); st.Mark != rule.MinBytes {
		t.Fatalf("the bound after a steady run at 6,000: mark %d, want MinBytes %d (6,000 / 2 = 3,000 is under it)", st.Mark, rule.MinBytes)
	}
}
