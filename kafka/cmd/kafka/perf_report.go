package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/schedstat"
)

// This file holds what producer-perf and consumer-perf share: the progress
// reporter, the rate of each tenth of a run, and the one-line summary.
//
// Paper §5 reports a steady rate over a long run (figures 4 and 5); a rate
// that sags as the log grows would show up as a last tenth slower than the
// first. So each tool notes when it passed 10%, 20%, ... 100% of its
// messages and prints the rate of every tenth.

// tenths records when a run of n messages passed each tenth of n. observe
// is called once per message (or batch) and costs one comparison until a
// tenth is crossed; it never allocates.
type tenths struct {
	n      int64
	start  time.Time
	next   int   // index of the next mark to record, 0..10
	nextAt int64 // message count that completes mark next
	at     [10]time.Time
	count  [10]int64 // messages done when mark i was recorded (>= its threshold)

	// This process's CPU time and time spent runnable but waiting for a
	// CPU, at the start and at each mark (Linux schedstat; ok false
	// elsewhere). A slow tenth with a long wait was starved by other work
	// on the machine, not slowed by more work per message.
	sched0 schedTimes
	sched  [10]schedTimes

	// label: while a CPU profile runs, the goroutine that observes carries
	// the pprof label tenth=1..10 of the tenth it is in, so that one
	// profile shows each tenth's samples apart
	// (go tool pprof -tagfocus tenth=3).
	label bool
}

// labelTenths labels the calling goroutine's profile samples with the
// tenth it is in, from now on (see tenths.label).
func (t *tenths) labelTenths() {
	t.label = true
	t.setLabel()
}

func (t *tenths) setLabel() {
	if t.label && t.next < 10 {
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("tenth", strconv.Itoa(t.next+1))))
	}
}

func newTenths(n int64, start time.Time) *tenths {
	t := &tenths{n: n, start: start, sched0: readSchedTimes()}
	t.nextAt = t.threshold(0)
	return t
}

// threshold is the message count that completes tenth i (0-based).
func (t *tenths) threshold(i int) int64 { return max(1, int64(i+1)*t.n/10) }

// observe notes that done messages have been sent or received so far. It
// is small enough to be inlined into a tool's per-message loop (after the
// last mark nextAt is beyond any count).
func (t *tenths) observe(done int64) {
	if done >= t.nextAt {
		t.mark(done)
	}
}

func (t *tenths) mark(done int64) {
	if t.next < 10 {
		t.markAt(done, time.Now())
	}
}

// markAt records every tenth that done completes as reached at now.
func (t *tenths) markAt(done int64, now time.Time) {
	st := readSchedTimes() // at most ten times per run
	for t.next < 10 && done >= t.threshold(t.next) {
		t.at[t.next], t.count[t.next], t.sched[t.next] = now, done, st
		t.next++
	}
	t.nextAt = math.MaxInt64
	if t.next < 10 {
		t.nextAt = t.threshold(t.next)
	}
	t.setLabel()
}

// complete reports whether all ten marks were recorded.
func (t *tenths) complete() bool { return t.next == 10 }

// withEnd is a copy whose last tenth ends at end instead (the producer's
// last tenth runs until the broker holds every message).
func (t *tenths) withEnd(end time.Time) tenths {
	c := *t
	if c.next == 10 {
		c.at[9], c.sched[9] = end, readSchedTimes()
	}
	return c
}

// span is tenth i's messages and duration.
func (t *tenths) span(i int) (msgs int64, d time.Duration) {
	from, at := int64(0), t.start
	if i > 0 {
		from, at = t.count[i-1], t.at[i-1]
	}
	return t.count[i] - from, t.at[i].Sub(at)
}

// rate is tenth i's messages per second (0 if it took no measurable time).
func (t *tenths) rate(i int) float64 {
	msgs, d := t.span(i)
	if d <= 0 {
		return 0
	}
	return float64(msgs) / d.Seconds()
}

// ratio is the last tenth's rate over the first's (0 if unknown).
func (t *tenths) ratio() float64 {
	if !t.complete() || t.rate(0) == 0 {
		return 0
	}
	return t.rate(9) / t.rate(0)
}

// print writes one line per tenth and the last/first ratio.
func (t *tenths) print(w io.Writer, title string, size int) {
	fmt.Fprintf(w, "%s:\n", title)
	if !t.complete() {
		fmt.Fprintf(w, "  (only %d of 10 tenths were reached)\n", t.next)
	}
	fmt.Fprintf(w, "  %-6s %12s %10s %10s %12s %9s %9s %9s\n", "tenth", "messages", "ends at s", "seconds", "msg/s", "MB/s",
		"cpu s", "cpuwait s")
	for i := 0; i < t.next; i++ {
		msgs, d := t.span(i)
		r := t.rate(i)
		fmt.Fprintf(w, "  %-6s %12d %10.3f %10.3f %12.0f %9.2f", strconv.Itoa(i+1)+"/10", msgs,
			t.at[i].Sub(t.start).Seconds(), d.Seconds(), r, r*float64(size)/1e6)
		from := t.sched0
		if i > 0 {
			from = t.sched[i-1]
		}
		if to := t.sched[i]; from.ok && to.ok {
			fmt.Fprintf(w, " %9.3f %9.3f", (to.run - from.run).Seconds(), (to.wait - from.wait).Seconds())
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "  (cpu s: this process's CPU time in the tenth; cpuwait s: time its threads were runnable but")
	fmt.Fprintln(w, "  waiting for a CPU, from /proc/self/task/*/schedstat)")
	if t.complete() {
		fmt.Fprintf(w, "  last tenth / first tenth = %.3f\n", t.ratio())
	}
}

// schedTimes is a process's summed per-thread CPU time and run-queue wait.
type schedTimes struct {
	run, wait time.Duration
	ok        bool
}

// readSchedTimes sums /proc/self/task/*/schedstat (see package schedstat).
// It allocates, so it is read only at the tenth marks.
func readSchedTimes() schedTimes {
	run, wait, ok := schedstat.Read("self")
	return schedTimes{run: run, wait: wait, ok: ok}
}

// allocCounter counts this process's heap allocations over a run, to show
// that the per-message paths allocate nothing (runtime.ReadMemStats stops
// the world briefly, so it is called only at the start and the end).
type allocCounter struct{ before uint64 }

func startAllocCounter() allocCounter {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return allocCounter{ms.Mallocs}
}

func (a allocCounter) since() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs - a.before
}

// resultLine builds the machine-readable summary, "result: k=v k=v ...",
// from alternating keys and values.
func resultLine(kv ...any) string {
	var b strings.Builder
	b.WriteString("result:")
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=", kv[i])
		switch v := kv[i+1].(type) {
		case float64:
			b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
		default:
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// round3 keeps three decimals, so result lines stay short.
func round3(f float64) float64 {
	s := strconv.FormatFloat(f, 'f', 3, 64)
	r, _ := strconv.ParseFloat(s, 64)
	return r
}

// sig4 keeps four significant digits (for ratios, which may be tiny).
func sig4(f float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 4, 64), 64)
	return r
}

// whole rounds a rate to an integer.
func whole(f float64) int64 { return int64(math.Round(f)) }

// reporter prints progress lines by count or every 2 seconds.
type reporter struct {
	std         stdio
	every       int64
	size        int
	start, last time.Time
	lastN, due  int64 // due: the count at which progress next looks
}

func newReporter(std stdio, every int64, size int) *reporter {
	now := time.Now()
	r := &reporter{std: std, every: every, size: size, start: now, last: now, due: every}
	if every <= 0 {
		r.due = 1000
	}
	return r
}

// progress prints a progress line every r.every messages, or (every 0)
// every 2 seconds, looking at the clock about every 1000 messages only; it
// is one comparison per message, inlined into the tool's loop.
func (r *reporter) progress(n int64, verb string) {
	if n >= r.due {
		r.check(n, verb)
	}
}

func (r *reporter) check(n int64, verb string) {
	if r.every > 0 {
		r.due += r.every
	} else {
		r.due = n + 1000
		if time.Since(r.last) < 2*time.Second {
			return
		}
	}
	now := time.Now()
	dt := now.Sub(r.last).Seconds()
	rate := float64(n-r.lastN) / dt
	fmt.Fprintf(r.std.Out, "  %s %d messages (%.1f MB) in %.1fs: %.0f msg/s, %.1f MB/s now\n", verb, n,
		float64(n)*float64(r.size)/1e6, now.Sub(r.start).Seconds(), rate, rate*float64(r.size)/1e6)
	r.last, r.lastN = now, n
}

// printRate prints the summary line of a perf run (payload MB, as 0.7's
// perf tools did).
func printRate(std stdio, what string, n int64, size int, d time.Duration) {
	secs := d.Seconds()
	fmt.Fprintf(std.Out, "%s: %d messages of %d bytes in %.3fs: %s msg/s, %.2f MB/s\n", what, n, size, secs,
		strconv.FormatFloat(float64(n)/secs, 'f', 0, 64), float64(n)*float64(size)/secs/1e6)
}
