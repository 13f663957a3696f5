// Package coalesce decides how many bytes a connection's reader lets
// queue before the kernel wakes it: the receiving side's analogue of a
// network card's interrupt coalescing, for the one kind of client that
// gains from it, a producer that sends one message per request and waits
// for no answer (the paper's, §5: "the Kafka producer currently doesn't
// wait for acknowledgements from the broker and sends messages as faster as
// the broker can handle").
//
// Such a producer writes a ~230-byte request every few microseconds. A
// broker that keeps up is woken for each one, and each wake-up costs both
// sides: the broker a scheduler round trip, the producer's write(2) the work
// of waking it. Neither moves a byte. On Linux a reader can ask to be woken
// only once n bytes are queued (SO_RCVLOWAT); a read that finds bytes still
// returns them at once, so the setting changes only how long a reader with
// nothing to read sleeps.
//
// Rule is a pure function of what the last sleep saw; the broker owns the
// socket and the clock (kafka/broker/coalesce.go). It works toward one
// number, the Gather time: a sleep should last about Gather, so that a
// message waits on average Gather/2 more than it would have. Each sleep is
// observed (how long it lasted, how many bytes had come, whether its
// deadline ended it) and the next wake-up mark is set from the rate the
// sleep saw:
//
//	rate   = bytes / slept   (slept at least 1 µs)
//	next   = rate · Gather, within [mark/2, 2·mark] and [0, MaxBytes]
//	next  <  MinBytes        →  off: woken by every byte again
//
// A read that finds bytes waiting has slept ~0 and doubles the mark: the
// reader is behind, and the next time it sleeps it can wait for more. A
// sleep that the bound ends (the producer paused or stopped) sets the mark
// from what came in it without the halving floor, usually off; then the
// connection rests for one Window before it is watched again (below).
//
// Except once per SteadyRun: a sleep the bound ends right after SteadyRun
// sleeps in a row that bytes ended halves the mark (to MinBytes at least)
// and the connection stays on. A producer flat out is now and then held
// for a bound by the machine rather than by its own choice (its process
// waiting for a CPU, or its kernel holding a segment for an acknowledgement
// that Linux delays), and most such sleeps of make perf's batch-1 producer
// hold less than MinBytes; off, resting and watched again, it would spend
// two Windows after each woken for every segment. The next sleep the bound
// ends, before another SteadyRun, turns it off as above, so a producer that
// has really paused is off one bound later.
//
// While off, a connection is watched over a Window (default 4·Max): the
// bytes its sleeps found over the time from the first sleep's start to the
// last's end, the work between them included. When the window closes, the
// same arithmetic turns coalescing on at rate · Gather if that reaches
// MinBytes; otherwise a new window starts. A window several bounds long,
// rather than a few sleeps, is what tells a producer flat out from one
// that is paced: figure 7's sends 100,000 requests a second, and as a Go
// program's sleeps of microseconds end on the runtime's coarser clock, it
// sends them in bursts about a millisecond apart, back to back within a
// burst as a producer flat out does. Over 4 ms its rate is 22.7 MB/s, a
// sleep of Gather gathers 2,837 bytes, under MinBytes, and it stays off;
// a window of one millisecond can hold two of its bursts.
//
// The rest after a sleep the bound ended is for a client with Nagle's
// algorithm on, as ours and 0.7's are (below): while the broker sleeps
// short of its mark, such a client sends nothing more until the kernel
// acknowledges what came, and Linux may delay that acknowledgement until
// the broker reads. So the client's requests pile up for the whole sleep
// and come in one burst after it; a window that counted the burst would
// read a rate several times the client's, turn coalescing on again, and
// the next sleep would again end by the bound: a stall of a bound or more,
// over and over, for a producer a tenth as fast as the one coalescing is
// for.
//
// The sending side can gather too. Our producer, as 0.7's, leaves Nagle's
// algorithm on for such a connection (producer.Config.NagleDisable): while
// one segment is unacknowledged, its kernel holds the next requests and
// sends them as one segment when the acknowledgement comes, so the broker
// reads many requests per wake-up whatever its mark, and the producer's
// write(2) only copies. The broker acknowledges what it has read before it
// waits with no mark (kafka/broker/lowat_linux.go), so that such a producer
// is never held for TCP's delayed-acknowledgement timer; before a sleep
// with a mark it does not, as the bound ends that sleep anyway
// (kafka/broker/coalesce.go, ackFirst). The rule here remains for a client
// that sets TCP_NODELAY and sends one request per segment.
//
// Only a request that gets no answer is ever followed by a coalesced
// sleep, and a connection that has once sent a request that is answered (a
// fetch, an acks=1 or -1 produce, any Kafka protocol request but an acks=0
// Produce) is never coalesced again. So a consumer's fetch and an
// acknowledged produce never wait on a mark, with one exception a client
// can avoid: the first answered request on a connection that so far sent
// only unanswered ones may wait up to Max once. The paper's producers, and
// ours, keep their produce connections to themselves.
package coalesce

import "time"

// Rule holds the settings. The zero Rule is off.
type Rule struct {
	// Max bounds a coalesced sleep: the broker ends one between Max/2
	// and Max after it began (kafka/broker/coalesce.go; the Go runtime
	// may fire a timer of under a millisecond up to a millisecond late on
	// an idle machine). 0 turns coalescing off.
	Max time.Duration
	// Gather is the sleep the mark aims for (default Max/8).
	Gather time.Duration
	// Window is how long a connection is watched, while off, before the
	// rule decides whether to turn coalescing on (default 4·Max).
	Window time.Duration
	// MinBytes is the smallest mark worth a deadline (default 4096, about
	// eighteen of the paper's 200-byte messages each in its own request,
	// so a rate of 32.8 MB/s, about 144,000 such requests a second, at the
	// default Gather): below it a connection is woken by every byte.
	MinBytes int
	// MaxBytes is the largest mark (default 32 KiB: half of the broker's
	// 64 KiB read buffer, and under the cap the kernel puts on SO_RCVLOWAT,
	// half the receive buffer).
	MaxBytes int
}

// SteadyRun is how many sleeps with a mark in a row bytes must end for the
// next one the bound ends to halve the mark rather than turn coalescing off.
const SteadyRun = 8

// Off is the mark that wakes a reader for every byte (SO_RCVLOWAT's default).
const Off = 1

// Defaults returns r with its unset fields filled in.
func (r Rule) Defaults() Rule {
	if r.Gather <= 0 {
		r.Gather = r.Max / 8
	}
	if r.Window <= 0 {
		r.Window = 4 * r.Max
	}
	if r.MinBytes <= 0 {
		r.MinBytes = 4096
	}
	if r.MaxBytes <= 0 {
		r.MaxBytes = 32 << 10
	}
	return r
}

// Sleep is what one sleep of the reader saw.
type Sleep struct {
	Mark     int           // the wake-up mark it slept with (Off: an ordinary read)
	Awake    time.Duration // from the end of the sleep before to this one's start
	Slept    time.Duration // from going to sleep to waking
	Bytes    int           // bytes there to read on waking
	TimedOut bool          // ended by the Max bound, not by bytes
}

// State is one connection's: the mark in force and, while off, the window
// being watched (the bytes its sleeps found and the time it spans) or the
// time left before the next window starts.
type State struct {
	Mark   int
	bytes  int64
	window time.Duration
	hold   time.Duration
	run    int // while on: sleeps in a row bytes ended, up to SteadyRun
}

// Step returns the state after sleep s, for a connection whose last
// request was an unacknowledged produce. The caller sets the socket's mark
// to the returned State's Mark before its next sleep.
func (r Rule) Step(st State, s Sleep) State {
	if r.Max <= 0 {
		return State{Mark: Off}
	}
	if st.Mark <= Off {
		st.Mark = Off
		if st.hold > 0 {
			st.hold -= s.Awake + s.Slept
			return st
		}
		st.bytes += int64(s.Bytes)
		st.window += s.Awake + s.Slept
		if st.window < r.Window {
			return st
		}
		if next := r.gathered(st.bytes, st.window); next >= r.MinBytes {
			return State{Mark: min(next, r.MaxBytes)}
		}
		return State{Mark: Off}
	}
	if s.TimedOut && st.run >= SteadyRun {
		return State{Mark: max(st.Mark/2, r.MinBytes)}
	}
	run := 0
	next := r.gathered(int64(s.Bytes), s.Slept)
	if !s.TimedOut {
		next = min(max(next, st.Mark/2), 2*st.Mark)
		run = min(st.run+1, SteadyRun)
	}
	next = min(next, r.MaxBytes)
	switch {
	case next >= r.MinBytes:
		return State{Mark: next, run: run}
	case s.TimedOut:
		return State{Mark: Off, hold: r.Window}
	default:
		return State{Mark: Off}
	}
}

// gathered is what a sleep of Gather gathers at the rate of n bytes in d
// (d at least 1 µs).
func (r Rule) gathered(n int64, d time.Duration) int {
	return int(n * int64(r.Gather) / int64(max(d, time.Microsecond)))
}
